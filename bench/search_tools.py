"""Benchmark: the memory of the API process while a 25 MB PDF is uploaded and extracted (issue 17).

A real `toolsmith serve` (embedded defaults: SQLite, the blob folder, the FTS5 chunk index) takes a
small document first, so that its extraction processes and their imports are warm, then a PDF of
about 25 MB: a few hundred pages of text and one large image, as scanned-and-typed manuals are.
The API process's resident memory (`VmRSS` of its own process, not of the extraction processes,
which are separate and limited) is sampled every 20 ms from before the upload until the document
is `READY` and a search has found it (the chunk index is a projection of the `READY` event: its
chunking and indexing come after it, in the same process). Goal: it grows by no more than 50 MB.

Run: `python -m bench.search_tools [--quick]`.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from bench._common import Progress, Row, standalone
from testing.launcher import Server

TITLE = "Benchmark — API process memory while a 25 MB PDF is uploaded and extracted (File Search tools)"
GOAL_MB = 50
TOOLS = "/api/v1/admin/search-tools"


def big_pdf(pages: int, image_mb: float, seed: int = 17) -> bytes:
    """A valid PDF of `pages` pages of text (about 6,000 characters each) and one page-sized
    grey image of `image_mb` MB of incompressible bytes, written by hand (no library needed)."""
    rng = random.Random(seed)
    words = [f"{rng.choice('bcdfghklmnprstvz')}{rng.choice('aeiou')}{rng.choice('lmnrst')}{rng.choice('aeiouy')}"
             for _ in range(4_000)]
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below
    pages_id = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    side = int((image_mb * 1_048_576) ** 0.5)
    image = add(b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 "
                b"/Length %d >>\nstream\n" % (side, side, side * side) + rng.randbytes(side * side) + b"\nendstream")
    kids = []
    for number in range(pages):
        lines = [" ".join(rng.choice(words) for _ in range(14)) for _ in range(70)]
        text = "".join(f"({line}) '\n" for line in lines)
        draw = "q 500 0 0 700 50 50 cm /Im1 Do Q\n" if number == 0 else ""
        content = (draw + f"BT /F1 8 Tf 40 800 Td 10 TL (Page {number + 1}) Tj\n{text}ET").encode()
        stream = add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 595 842] /Contents %d 0 R "
                        b"/Resources << /Font << /F1 %d 0 R >> /XObject << /Im1 %d 0 R >> >> >>"
                        % (pages_id, stream, font, image)))
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id
    objects[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, catalog, xref)
    return bytes(out)


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class Sampler:
    """The peak of a process's RSS, sampled in a thread every `interval` seconds."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.pid, self.interval = pid, interval
        self.peak = rss_mb(pid)
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            self.samples += 1
            time.sleep(self.interval)


def settle(http: object, tool: str, doc_id: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        document = http.get(f"{TOOLS}/{tool}/documents/{doc_id}").json()  # type: ignore[attr-defined]
        if document["state"] != "PROCESSING":
            return document
        if time.monotonic() > deadline:
            raise SystemExit(f"bench.search_tools: {doc_id} still PROCESSING after {timeout:g} s")
        time.sleep(0.05)


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    args = parse_args(argv)
    progress = Progress("search_tools", quiet=quiet)
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        progress(f"making a PDF of {args.pages} pages and a {args.image_mb:g} MB image")
        pdf = big_pdf(args.pages, args.image_mb)
        size_mb = len(pdf) / 1_048_576
        progress(f"the PDF is {size_mb:.1f} MB; starting toolsmith serve")
        server = Server(data_dir=Path(tmp) / "data", inherit_settings=False, env={
            "TOOLSMITH_ADMIN_TOKEN": "tsa_bench-token", "TOOLSMITH_MAX_UPLOAD_MB": "40",
            "TOOLSMITH_EXTRACT_TIMEOUT_SECONDS": "600", "TOOLSMITH_LOG_LEVEL": "WARNING"}).start()
        server.token = "tsa_bench-token"
        try:
            assert server.process is not None
            pid = server.process.pid
            with server.client() as http:
                http.timeout = 300
                made = http.post(TOOLS, json={"id": "manuals", "description": "Product manuals"})
                if made.status_code != 201:
                    raise SystemExit(f"bench.search_tools: could not create the tool: {made.text}")
                warm = http.post(f"{TOOLS}/manuals/documents", files=[("files", ("warm.pdf", big_pdf(3, 0.1, seed=3)))])
                settle(http, "manuals", warm.json()["documents"][0]["id"], 120)
                time.sleep(0.5)
                baseline = rss_mb(pid)
                progress(f"API process RSS before the upload: {baseline:.1f} MB")
                started = time.perf_counter()
                with Sampler(pid) as sampler:
                    answer = http.post(f"{TOOLS}/manuals/documents", files=[("files", ("manual.pdf", pdf))])
                    if answer.status_code != 202:
                        raise SystemExit(f"bench.search_tools: the upload answered {answer.status_code}: {answer.text[:300]}")
                    uploaded = time.perf_counter() - started
                    document = settle(http, "manuals", answer.json()["documents"][0]["id"], 900)
                    done = time.perf_counter() - started
                    hits = http.post("/api/v1/tools/manuals_search/call", json={"query": "page"}).json()
                    searchable = time.perf_counter() - started
                if document["state"] != "READY":
                    raise SystemExit(f"bench.search_tools: the PDF ended {document['state']}: {document.get('reason')}")
        finally:
            server.stop()
    growth = sampler.peak - baseline
    progress(f"peak {sampler.peak:.1f} MB over {sampler.samples} samples; READY in {done:.1f} s with "
             f"{document['characters']:,} characters, {document['chunks']:,} chunks")
    rows = [
        Row(f"API RSS growth, {size_mb:.0f} MB PDF ({args.pages} pages) upload, extraction, indexing",
            f"{growth:.1f} MB", f"{GOAL_MB} MB limit", growth / GOAL_MB, f"≤ 1.00 ({GOAL_MB} MB)", growth <= GOAL_MB,
            f"baseline {baseline:.0f} MB, peak {sampler.peak:.0f} MB"),
        Row("upload answered (202)", f"{uploaded:.2f} s", "", None, "(informative)", None, ""),
        Row("upload to READY", f"{done:.1f} s", "", None, "(informative)", None,
            f"{document['characters']:,} chars, {document['chunks']:,} chunks, {document['pages']} pages"),
        Row("upload to the first search's answer", f"{searchable:.1f} s", "", None, "(informative)", None,
            "the search waits for the chunk projection to apply the READY"),
    ]
    return rows, {"growthMb": growth, "results": len(hits.get("output", {}).get("results", []))}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.search_tools", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller PDF (about 6 MB, 100 pages)")
    parser.add_argument("--pages", type=int, help="pages of text (default 400; quick 100)")
    parser.add_argument("--image-mb", type=float, help="the image's size in MB (default 22; quick 5)")
    args = parser.parse_args(argv)
    args.pages = args.pages or (100 if args.quick else 400)
    args.image_mb = args.image_mb or (5.0 if args.quick else 22.0)
    return args


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
