"""An extraction worker: a long-lived child process of the server that turns documents into text,
one at a time, under limits it sets on itself before its first job.

`ExtractorPool` starts it as `python -I -c …`, which calls `main` with its limits. The address
space limit (RLIMIT_AS: the job's memory limit on top of what the loaded worker maps) makes an allocation beyond it a `MemoryError`, answered as such; the CPU
limit, moved before each job to the CPU time used so far plus the job's time limit and a margin,
ends a worker whose server died or failed to kill it. It reads jobs from stdin and answers on a
duplicate of stdout (`wire.py`); its own stdout is pointed at stderr, so that nothing a library
prints can break a frame. It exits when stdin closes. Library warnings about broken documents are
not logged: a broken document is answered with its reason.

It also embeds the document's chunks (`infrastructure/embeddings.py`, loaded before its limits and
its first job, read from the installed package, never downloaded): the text as the server will
hold it is chunked as the chunk index chunks it (`domain.chunking`), and each chunk's vector goes
back in a third frame (float32), so that an upload's request never embeds and the server's process
embeds only queries. A document whose chunks cannot be embedded (the model missing, a memory
limit) is answered without vectors: it is still found by its words.

A job `{"embed": true, …}` embeds a text the server holds already (a document embedded again under
another model, `toolkinds/search_tools/reembed.py`): the file at `path` is that text (UTF-8), chunked
with the `page_starts` and `title` given, and answered with the vectors only.
"""

from __future__ import annotations

import logging
import os
import resource
import sys
import warnings

from domain.chunking import chunk_text
from domain.documents import Extracted, ExtractionFailed
import infrastructure.extraction.wire as wire
from infrastructure.extraction.extractors import extract

MIB = 1024 * 1024
# CPU seconds a job may use beyond its wall-clock limit before the kernel ends the worker.
CPU_MARGIN_SECONDS = 5


def main(argv: list[str]) -> None:
    """Serves jobs until stdin closes; `argv` is the memory limit in MiB, the longest text in
    characters, a job's time limit in seconds and the embedding model's choice (by default the
    default one)."""
    memory_mb, max_chars, timeout_seconds = int(argv[0]), int(argv[1]), float(argv[2])
    embedder = _embedder(argv[3] if len(argv) > 3 else None)
    # The limit is the document's: `memory_mb` beyond what the worker itself maps once loaded (the
    # interpreter, the extractors' libraries, the embedding model: about 220 MB with the model).
    limit = _address_space() + memory_mb * MIB
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a core dump would hold the document
    jobs, answers = sys.stdin.fileno(), os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    logging.getLogger("pypdf").setLevel(logging.CRITICAL)
    warnings.simplefilter("ignore")
    wire.send_json(answers, {"ready": os.getpid()})
    while True:
        try:
            job = wire.receive_json(jobs)
        except EOFError:
            return
        _limit_cpu(timeout_seconds)
        try:
            if job.get("embed"):
                _embed_again(answers, embedder, job, max_chars)
                continue
            extracted = extract(job["path"], job["media_type"], max_chars)
            text = extracted.text.encode("utf-8", "replace")  # a lone surrogate becomes "?": offsets hold
            title = _clean(extracted.title)
            model, vectors = _embed(embedder, Extracted(text.decode("utf-8"), extracted.page_starts, title), job["media_type"])
            wire.send_json(answers, {"ok": True, "page_starts": list(extracted.page_starts), "title": title,
                                     "model": model, "vectors": vectors is not None})  # fmt: skip
            wire.send(answers, text)
            if vectors is not None:
                wire.send(answers, vectors)
        except ExtractionFailed as e:
            wire.send_json(answers, {"ok": False, "reason": e.reason, "memory": False})
        except MemoryError:
            reason = f"the document needs more memory than extraction allows ({memory_mb} MB)"
            wire.send_json(answers, {"ok": False, "reason": reason, "memory": True})
        except Exception as e:  # a fault of extraction itself, not of the document: its name, for the logs
            reason = f"extraction failed unexpectedly ({type(e).__name__})"
            wire.send_json(answers, {"ok": False, "reason": reason, "memory": False})


def _embed_again(answers: int, embedder, job: dict, max_chars: int) -> None:  # type: ignore[no-untyped-def]
    """Answers the vectors of the text at `job["path"]` (chunked as the index chunks it)."""
    with open(job["path"], "rb") as source:
        text = source.read(4 * max_chars + 1).decode("utf-8")
    title = job.get("title")
    model, vectors = _embed(embedder, Extracted(text, tuple(job.get("page_starts") or ()), title), job["media_type"])
    if vectors is None:
        reason = "no embedding model in the extraction worker" if embedder is None else "the text holds no chunk to embed"
        wire.send_json(answers, {"ok": False, "reason": reason, "memory": False})
        return
    wire.send_json(answers, {"ok": True, "model": model, "vectors": True})
    wire.send(answers, vectors)


def _embedder(choice: str | None = None):  # type: ignore[no-untyped-def]
    try:
        from infrastructure.embeddings import DEFAULT_CHOICE, WordLlamaEmbedder

        embedder = WordLlamaEmbedder(choice or DEFAULT_CHOICE)
        # One embedding before the memory limit: OpenBLAS allocates its buffers at its first product
        # and ends the process (no MemoryError) when it cannot, so they must exist before the limit.
        embedder.embed_array(["warm up the products' buffers"])
        return embedder
    except Exception as e:  # no model here: documents are extracted, lexical only
        print(f"embeddings unavailable: {type(e).__name__}: {e}", file=sys.stderr)
        return None


def _embed(embedder, extracted: Extracted, media_type: str) -> tuple[str | None, bytes | None]:  # type: ignore[no-untyped-def]
    """The model and the chunks' vectors (float32, in chunk order), or (None, None)."""
    if embedder is None:
        return None, None
    from infrastructure.embeddings import to_bytes

    try:
        chunks = chunk_text(extracted, media_type)
        if not chunks:
            return None, None
        return embedder.model, to_bytes(embedder.embed_array([c.text for c in chunks]))
    except MemoryError:
        return None, None


def _address_space() -> int:
    """The bytes of address space this process maps now (VmSize)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _limit_cpu(timeout_seconds: float) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(usage.ru_utime + usage.ru_stime + timeout_seconds) + CPU_MARGIN_SECONDS
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


def _clean(title: str | None) -> str | None:
    return title.encode("utf-8", "replace").decode("utf-8") if title is not None else None
