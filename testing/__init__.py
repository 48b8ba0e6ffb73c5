"""What the tests and the benchmarks both need and neither owns: the launcher of real Toolsmith
processes (`testing.launcher`). The benchmarks run without pytest and must not import `tests/`;
the tests must not depend on `bench/`; both import this package."""
