"""The extraction workers of the server (docs/kinds/file-search-tools.md: "a hostile PDF costs that upload, nothing
else"): a few long-lived child processes that extract one document each at a time, each bounded in
memory by itself (`worker.py`) and in time by the pool, which kills a worker that overruns.

Workers are started with `subprocess`, never forked (the server is threaded), as `python -I`: no
environment variable, current directory or user site reaches a process that parses hostile bytes,
and the server's secrets (its environment) are not passed on. The server never reads a document:
it sends the worker a path. The workers are started on first need (all of them, the first one in
the job's way, the others in the background), waited for until each says it is ready (so that its
start is not counted against a job's time), and replaced after any failure (its state after a
`MemoryError` or a parser's failure is not worth trusting) and after `JOBS_PER_WORKER` jobs; a
replacement starts in the background at once, so that the next document (another tenant's, while
one floods the pool with hostile ones, each costing its worker) does not wait for a start.

Short documents first (docs/tenants.md, fair share, as the sandbox does): an extraction still running
after `LONG_EXTRACTION_SECONDS` has its worker lowered where it stands (`infrastructure.priority`):
to niceness 19, or for a `background` job (one of a tenant's extractions beyond its first few) to
`SCHED_IDLE`, so that one tenant's hostile documents leave the CPU to everyone's ordinary ones and
yet go on. A lowered worker retires after its job. A job may also carry a `deadline` earlier than
its own time limit (its upload's, `toolkinds.search_tools.ingest`): past it, it ends as a time-out
would, with the reason its caller gave.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, cast

from domain.documents import Extracted, ExtractionFailed
import infrastructure.extraction.wire as wire  # not `from infrastructure.extraction import`: the package imports pool
from infrastructure.priority import lower

log = logging.getLogger("toolsmith.extraction")

JOBS_PER_WORKER = 200
START_TIMEOUT_SECONDS = 30.0
# How long an extraction runs at the normal priority before its worker is lowered: an ordinary
# document (a page of text, a report of a few pages) is done well within it, and a lowered worker
# costs a new worker's start (its imports, some tenths of a second), worth it only for a long job.
LONG_EXTRACTION_SECONDS = 1.0
_ROOT = str(Path(__file__).resolve().parents[2])
_LAUNCH = (
    "import sys; sys.path.append(sys.argv[1]); from infrastructure.extraction.worker import main; main(sys.argv[2:])"
)
# An answer's JSON (its text travels apart) holds a page start per page: room for a million.
_ANSWER_BYTES = 16 * 1024 * 1024
_UNAVAILABLE = "extraction is unavailable: its worker process did not start"
_SHUTTING_DOWN = "extraction has stopped (the service is shutting down)"
# The environment a worker gets: only what makes its text encoding predictable.
# (The embedding's tokenizer runs on the worker's one thread: a worker is one core's job.)
_ENVIRONMENT = {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "PATH": os.defpath, "TOKENIZERS_PARALLELISM": "false",
                "RAYON_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


class _Worker:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.pid = process.pid
        self.jobs_fd = cast(IO[bytes], process.stdin).fileno()
        self.answers_fd = cast(IO[bytes], process.stdout).fileno()
        self.jobs = 0
        self.lowered = False  # for good (`lower`): retired after its job

    def kill(self) -> int:
        """Kills the process and reaps it; its exit status (another thread may be reading its
        pipes: they are left open for that thread to close)."""
        self.process.send_signal(signal.SIGKILL)
        return self.process.wait()

    def stop(self, grace_seconds: float = 0.0) -> None:
        """Ends the process (closing its stdin lets an idle one exit by itself) and reaps it."""
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        try:
            self.process.wait(grace_seconds)
        except subprocess.TimeoutExpired:
            self.kill()


class ExtractorPool:
    """At most `workers` extractions at once, from any number of threads (the others wait their
    turn); each takes at most `timeout_seconds`, `memory_mb` of address space and makes at most
    `max_chars` characters of text."""

    def __init__(self, workers: int = 2, timeout_seconds: float = 60, memory_mb: int = 512,
                 max_chars: int = 10_000_000, embedding: str | None = None) -> None:  # fmt: skip
        """`embedding`: the embedding model's choice (`infrastructure.embeddings.CHOICES`; None: the default)."""
        if workers < 1:
            raise ValueError("an extraction pool needs at least one worker")
        self.embedding = embedding
        self.timeout_seconds = timeout_seconds
        self.memory_mb = memory_mb
        self.max_chars = max_chars
        self._size = workers
        self._turns = threading.BoundedSemaphore(workers)
        self._lock = threading.Lock()
        self._spare = threading.Condition(self._lock)  # a worker went idle, or a start ended
        self._idle: list[_Worker] = []
        self._live: set[_Worker] = set()
        self._starts = 0  # workers being started, by a job or by `_fill`
        self._filler: threading.Thread | None = None
        self._closed = False

    def extract(self, path: str, media_type: str, *, background: bool = False, deadline: float | None = None,
                overdue: str = "") -> Extracted:  # fmt: skip
        """The text of the document at `path` (of `media_type`, from `sniff_file`); raises
        `ExtractionFailed` with a reason a person understands. `background`: lowered to
        `SCHED_IDLE` rather than niceness 19 once it runs long. `deadline` (a `time.monotonic()`
        instant): when it comes before the time limit, the extraction ends there, failed with the
        reason `overdue`."""
        with self._turns:
            worker = self._take()
            started = time.monotonic()
            try:
                extracted = self._run(worker, os.path.abspath(path), media_type, background, deadline, overdue)
            except BaseException as e:
                self._retire(worker)
                # The reason without its parenthesis, which may quote a library quoting the document.
                log.info("extraction failed", extra={"media_type": media_type, "worker": worker.pid,
                         "seconds": round(time.monotonic() - started, 3), "reason": str(e).split(" (")[0]})  # fmt: skip
                raise
            worker.jobs += 1
            self._give_back(worker)
            log.info("document extracted", extra={"media_type": media_type, "worker": worker.pid,
                     "seconds": round(time.monotonic() - started, 3), "chars": len(extracted.text),
                     "pages": len(extracted.page_starts)})  # fmt: skip
            return extracted

    def embed(self, path: str, media_type: str, page_starts: Sequence[int], title: str | None, *,
              background: bool = True) -> tuple[str, bytes]:
        """The model and the chunks' vectors (float32, in chunk order) of the text at `path` (UTF-8,
        as the server holds it), chunked as the chunk index chunks it, in a worker under the same
        limits as an extraction; raises `ExtractionFailed` with the reason."""
        with self._turns:
            worker = self._take()
            started = time.monotonic()
            deadline = started + self.timeout_seconds
            try:
                wire.send_json(worker.jobs_fd, {"embed": True, "path": os.path.abspath(path), "media_type": media_type,
                                                "page_starts": list(page_starts), "title": title})
                if background and not wire.readable(worker.answers_fd, started + LONG_EXTRACTION_SECONDS):
                    worker.lowered = True
                    lower(worker.pid, idle=True, what="an extraction worker")
                answer = wire.receive_json(worker.answers_fd, deadline, _ANSWER_BYTES)
                if not answer.get("ok"):
                    raise ExtractionFailed(str(answer.get("reason")))
                vectors = wire.receive(worker.answers_fd, 4 * self.max_chars + 1024, deadline)
                model = answer.get("model")
                if not isinstance(model, str):
                    raise ValueError("no model named")
            except wire.Timeout:
                worker.kill()
                self._retire(worker)
                raise ExtractionFailed(self._timed_out()) from None
            except (EOFError, BrokenPipeError):
                reason = self._died(worker)
                self._retire(worker)
                raise ExtractionFailed(reason) from None
            except (ValueError, KeyError) as e:
                worker.kill()
                self._retire(worker)
                log.error("extraction worker answered out of protocol", extra={"worker": worker.pid, "error": repr(e)})
                raise ExtractionFailed("embedding failed unexpectedly (its worker answered out of protocol)") from None
            except BaseException:
                self._retire(worker)
                raise
            worker.jobs += 1
            self._give_back(worker)
            log.info("document embedded", extra={"media_type": media_type, "worker": worker.pid, "model": model,
                     "seconds": round(time.monotonic() - started, 3), "bytes": len(vectors)})  # fmt: skip
            return model, vectors

    def close(self) -> None:
        """Stops every worker, a busy one too (its caller gets `ExtractionFailed`); the pool
        extracts nothing after this."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            busy = self._live.difference(idle)
            self._live.clear()
            self._spare.notify_all()
            filler = self._filler
        for worker in idle:
            worker.stop(grace_seconds=1.0)
        for worker in busy:
            worker.kill()
        if filler is not None:
            filler.join(START_TIMEOUT_SECONDS)  # a worker it was starting is stopped, not left behind

    def _take(self) -> _Worker:
        with self._lock:
            while True:
                if self._closed:
                    raise ExtractionFailed(_SHUTTING_DOWN)
                while self._idle:
                    worker = self._idle.pop()
                    if worker.process.poll() is None:
                        break
                    self._live.discard(worker)  # it died while idle (the kernel's OOM killer?): replaced
                    worker.stop()
                else:
                    if len(self._live) + self._starts < self._size:
                        self._starts += 1
                        worker = None
                        break
                    # Every worker there may be is busy or starting: one starting in the background
                    # (`_fill`) is this job's, as soon as it is ready.
                    self._spare.wait(START_TIMEOUT_SECONDS)
                    continue
                break
        if worker is None:
            try:
                worker = self._start()
            finally:
                with self._lock:
                    self._starts -= 1
                    self._spare.notify_all()
            with self._lock:
                if self._closed:
                    worker.stop()
                    raise ExtractionFailed(_SHUTTING_DOWN)
                self._live.add(worker)
        self._replenish()
        return worker

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if worker.jobs < JOBS_PER_WORKER and not worker.lowered and not self._closed:
                self._idle.append(worker)
                self._spare.notify_all()
                return
        self._retire(worker)

    def _retire(self, worker: _Worker) -> None:
        with self._lock:
            self._live.discard(worker)
        worker.stop()
        self._replenish()

    def _replenish(self) -> None:
        """Starts workers in the background until the pool has all of its `workers`."""
        with self._lock:
            if self._closed or self._filler is not None or len(self._live) + self._starts >= self._size:
                return
            self._starts += 1
            self._filler = threading.Thread(target=self._fill, name="toolsmith-extract-start", daemon=True)
            self._filler.start()

    def _fill(self) -> None:
        while True:
            try:
                worker: _Worker | None = self._start()
            except ExtractionFailed:  # logged; a job's own start tries again
                worker = None
            with self._lock:
                self._starts -= 1
                closed = self._closed
                if worker is not None and not closed:
                    self._live.add(worker)
                    self._idle.append(worker)
                self._spare.notify_all()
                more = worker is not None and not closed and len(self._live) + self._starts < self._size
                if more:
                    self._starts += 1
                else:
                    self._filler = None
            if worker is not None and closed:
                worker.stop()
            if not more:
                return

    def _start(self) -> _Worker:
        started = time.monotonic()
        limits = (str(self.memory_mb), str(self.max_chars), repr(float(self.timeout_seconds)), self.embedding or "")
        try:
            # Its own session: a Ctrl-C meant for the server does not reach it (closing its stdin ends it).
            process = subprocess.Popen(
                [sys.executable, "-I", "-c", _LAUNCH, _ROOT, *limits],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_ENVIRONMENT, cwd="/", start_new_session=True,
            )  # fmt: skip
        except OSError as e:
            log.error("extraction worker could not be started", extra={"error": repr(e)})
            raise ExtractionFailed(_UNAVAILABLE) from None
        worker = _Worker(process)
        try:
            wire.receive_json(worker.answers_fd, time.monotonic() + START_TIMEOUT_SECONDS)
        except (EOFError, wire.Timeout, ValueError) as e:
            worker.stop()
            log.error("extraction worker did not start", extra={"worker": worker.pid, "error": type(e).__name__,
                      "exit": process.returncode})  # fmt: skip
            raise ExtractionFailed(_UNAVAILABLE) from None
        log.info("extraction worker started", extra={"worker": worker.pid,
                 "seconds": round(time.monotonic() - started, 3)})  # fmt: skip
        return worker

    def _run(self, worker: _Worker, path: str, media_type: str, background: bool = False, cut_at: float | None = None,
             overdue: str = "") -> Extracted:  # fmt: skip
        started = time.monotonic()
        deadline = started + self.timeout_seconds
        cut = cut_at is not None and cut_at < deadline
        if cut_at is not None:
            deadline = min(deadline, cut_at)
        try:
            wire.send_json(worker.jobs_fd, {"path": path, "media_type": media_type})
            lower_at = started + LONG_EXTRACTION_SECONDS
            if lower_at < deadline and not wire.readable(worker.answers_fd, lower_at):
                worker.lowered = True  # a long document: short ones go first
                lower(worker.pid, idle=background, what="an extraction worker")
            answer = wire.receive_json(worker.answers_fd, deadline, _ANSWER_BYTES)
            if not answer.get("ok"):
                raise ExtractionFailed(str(answer.get("reason")))
            text = wire.receive(worker.answers_fd, 4 * self.max_chars + 1024, deadline).decode("utf-8")
            # The chunks' vectors, when the worker embedded them: a chunk of text (hundreds of
            # characters at least) has one vector of 1,024 bytes, within the text's bound.
            vectors = wire.receive(worker.answers_fd, 4 * self.max_chars + 1024, deadline) if answer.get("vectors") else None
            model = answer.get("model") if vectors is not None else None
            return Extracted(text, tuple(answer["page_starts"]), answer["title"], vectors=vectors,
                             model=model if isinstance(model, str) else None)
        except wire.Timeout:
            worker.kill()
            if cut:
                log.info("extraction stopped at its upload's deadline: worker killed",
                         extra={"worker": worker.pid, "media_type": media_type})
                raise ExtractionFailed(overdue or self._timed_out()) from None
            log.warning("extraction overran its time limit: worker killed",
                        extra={"worker": worker.pid, "media_type": media_type, "limit": self.timeout_seconds})
            raise ExtractionFailed(self._timed_out()) from None
        except (EOFError, BrokenPipeError):
            raise ExtractionFailed(self._died(worker)) from None
        except (ValueError, KeyError) as e:  # an answer out of protocol: that worker is not to be trusted
            worker.kill()
            log.error("extraction worker answered out of protocol", extra={"worker": worker.pid, "error": repr(e)})
            raise ExtractionFailed("extraction failed unexpectedly (its worker answered out of protocol)") from None

    def _died(self, worker: _Worker) -> str:
        if self._closed:
            return _SHUTTING_DOWN
        try:
            code = worker.process.wait(START_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:  # it closed its end and lives on: no worker to trust
            code = worker.kill()
        log.warning("extraction worker died", extra={"worker": worker.pid, "exit": code})
        if code == -signal.SIGXCPU:
            return self._timed_out()
        return (f"extraction crashed on this document (it may need more memory than extraction allows "
                f"({self.memory_mb} MB), or be malformed)")  # fmt: skip

    def _timed_out(self) -> str:
        return (f"extraction took longer than {self.timeout_seconds:g} s (the limit); the file may be hostile "
                f"or too complex")  # fmt: skip
