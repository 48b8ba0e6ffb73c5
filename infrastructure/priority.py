"""Short work first (docs/tenants.md, fair share): lowering the CPU priority of a child process whose job
has run long, so that ordinary short jobs of any tenant go before it while it goes on.

Shared by the pools that run other people's work in processes of their own: the embedded sandbox
(`sandbox.embedded`, a program past 20 ms) and document extraction
(`infrastructure.extraction.pool`, a document past a second). An unprivileged process cannot raise
a priority back, so a lowered process is for good: its pool retires it after the job.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger("toolsmith.priority")

LOWERED_NICENESS = 19


def lower(pid: int, *, idle: bool, what: str = "a worker") -> None:
    """The process's CPU scheduling lowered for good: to niceness 19, and with `idle` to
    `SCHED_IDLE` (it then runs only when no process of its scheduling group at a normal policy
    wants the CPU). Best effort: what the kernel refuses is skipped. `what`: the process, for the
    log."""
    try:
        if idle:
            os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
            return
    except (AttributeError, OSError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, pid, LOWERED_NICENESS)
    except OSError as e:
        log.warning(f"{what} could not be lowered", extra={"pid": pid, "reason": str(e)})
