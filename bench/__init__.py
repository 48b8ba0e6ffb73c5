"""Benchmarks for Toolsmith (docs/architecture.md and docs/javascript.md): run all with `python -m bench`.

- `python -m bench.tool_call`: an in-process tool call against a bare QuickJS fresh context + eval.
- `python -m bench.publish`: publishing a library with 1,000 transitive importers, checked on two
  workers, against 1,000 checks one after the other.
- `python -m bench.compare OLD NEW`: the figures of a redesign step on two commits, each run by its
  own benchmark code, with a 5 % verdict per figure.

The machines these run on are shared and noisy, so every comparison interleaves its variants in
many short rounds, reports medians, and computes each ratio from figures of the same run.
Benchmarks report; they never fail on a goal.
"""

import os

# NumPy's OpenBLAS runs one thread, as `toolsmith` sets it before NumPy loads (entrypoints/cli.py):
# an in-process benchmark (the vector searches of bench.hybrid_search, bench.tool_search) measures
# what the service runs, and no idle OpenBLAS thread spinning after a product counts in the CPU of
# the next figure.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
