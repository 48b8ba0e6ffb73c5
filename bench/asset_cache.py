"""Benchmark: what a repeat visit to a console page costs in static files, as a browser's HTTP cache
keeps them (issue 28, finding 6).

A real `toolsmith serve` (embedded defaults) with one published tool module. A browser-like client
signed in with a session cookie opens the module's editor page (the heaviest: htmx, the console
script, the CodeMirror bundle, the stylesheet, the icon) and the list page. It keeps each static
file as its answer's `Cache-Control` allows, as browsers do: `immutable` with a `max-age` is used
without asking again; `no-cache` (or nothing) is asked again with `If-None-Match` (a 304). The
baseline is the same visit with every file revalidated, which is what a static URL without the hash
of its bytes gets. Each page itself must say `no-store` (nothing of a session kept).

Figures, per repeat visit (p50 over the rounds): requests for static files, and the milliseconds
those take one after the other (a browser runs up to six at once; the count is what the policy
removes). Ratio = ours / baseline (goal: 0 requests; time ≤ 0.2). Also the first visit's bytes.

Run: `python -m bench.asset_cache [--quick] [--rounds N]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench._common import Progress, Row, format_table, machine_line, median, millis
from bench.console import Assets
from testing.launcher import Server

TITLE = "Console static files on a repeat visit: kept by the browser (immutable under their hash) against revalidated"
TOKEN = "tsa_bench-asset-cache-admin-token"
MODULE = "bench_cached"
PAGES = (f"/console/modules/{MODULE}", "/console/modules")
NOTES = ("A visit: the editor page and the list page, then each static file they link (script, stylesheet, icon), "
         "kept as its Cache-Control says (immutable: not asked again; otherwise If-None-Match). Baseline: every "
         "file revalidated. Times: the files' requests one after the other, on one keep-alive client.")


class Browser:
    """The few rules of a browser's HTTP cache the console's headers are read by."""

    def __init__(self, client: httpx.Client, *, honour_immutable: bool) -> None:
        self.client = client
        self.honour_immutable = honour_immutable
        self.kept: dict[str, tuple[str, str]] = {}  # url -> (Cache-Control, ETag)

    def visit(self) -> dict[str, float]:
        requests, downloaded, started, files = 0, 0, time.perf_counter(), 0.0
        for page in PAGES:
            answer = self.client.get(page)
            if answer.status_code != 200 or answer.headers.get("cache-control") != "no-store":
                raise SystemExit(f"bench.asset_cache: {page} answered {answer.status_code}, "
                                 f"Cache-Control {answer.headers.get('cache-control')!r} (want no-store)")
            links = Assets()
            links.feed(answer.text)
            for url in links.urls + _icons(answer.text):
                policy, tag = self.kept.get(url, ("", ""))
                if self.honour_immutable and "immutable" in policy and "max-age" in policy:
                    continue
                headers = {"Accept-Encoding": "gzip", **({"If-None-Match": tag} if tag else {})}
                began = time.perf_counter()
                got = self.client.get(url, headers=headers)
                files += time.perf_counter() - began
                requests += 1
                downloaded += got.num_bytes_downloaded
                if got.status_code == 200:
                    self.kept[url] = (got.headers.get("cache-control", ""), got.headers.get("etag", ""))
                elif got.status_code != 304:
                    raise SystemExit(f"bench.asset_cache: {url} answered {got.status_code}")
        return {"requests": requests, "bytes": downloaded, "seconds": files, "visit": time.perf_counter() - started}


def _icons(html: str) -> list[str]:
    start = html.find('rel="icon" href="')
    if start < 0:
        return []
    start += len('rel="icon" href="')
    return [html[start:html.index('"', start)]]


def sign_in(server: Server) -> httpx.Client:
    client = httpx.Client(base_url=server.url, timeout=30, trust_env=False)
    answer = client.post("/console/sign-in", data={"token": TOKEN, "next": "/console/modules"},
                         headers={"Origin": server.url}, follow_redirects=False)
    if answer.status_code != 303:
        raise SystemExit(f"bench.asset_cache: sign-in answered {answer.status_code}: {answer.text[:300]}")
    return client


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, Any]]:
    args = parse_args(argv)
    progress = Progress("asset_cache", quiet=quiet)
    info: dict[str, Any] = {"args": vars(args)}
    with tempfile.TemporaryDirectory() as folder:
        server = Server(data_dir=Path(folder) / "data", token=TOKEN, inherit_settings=False, log_file=Path(folder) / "serve.log",
                        log_mode="w", env={"TOOLSMITH_ADMIN_TOKEN": TOKEN, "TOOLSMITH_LOG_LEVEL": "WARNING"})
        try:
            server.start()
        except RuntimeError as failed:
            raise SystemExit(f"bench.asset_cache: {failed}") from None
        try:
            with server.client() as api:
                body = {"id": MODULE, "description": "a cached page", "draftContent": "exports.run = () => 1;", "tool": {}}
                for answer in (api.post("/api/v1/admin/code-modules", json=body), api.post(f"/api/v1/admin/code-modules/{MODULE}/publish")):
                    if answer.status_code not in (200, 201):
                        raise SystemExit(f"bench.asset_cache: {answer.request.url} answered {answer.status_code}: {answer.text[:300]}")
            ours, baseline = Browser(sign_in(server), honour_immutable=True), Browser(sign_in(server), honour_immutable=False)
            info["firstVisit"] = {"ours": ours.visit(), "baseline": baseline.visit()}
            repeats: dict[str, list[dict[str, float]]] = {"ours": [], "baseline": []}
            for r in range(args.rounds):
                for name, browser in ((("ours", ours), ("baseline", baseline)) if r % 2 == 0 else (("baseline", baseline), ("ours", ours))):
                    repeats[name].append(browser.visit())
            progress(f"{args.rounds} repeat visits each")
        finally:
            server.stop()
    figures = {name: {key: median([visit[key] for visit in visits]) for key in ("requests", "bytes", "seconds", "visit")}
               for name, visits in repeats.items()}
    info["repeatVisit"] = figures
    ours_f, base_f = figures["ours"], figures["baseline"]
    rows = [
        Row("static-file requests per repeat visit", f"{ours_f['requests']:.0f}", f"{base_f['requests']:.0f}",
            ours_f["requests"] / base_f["requests"] if base_f["requests"] else None, "= 0", ours_f["requests"] == 0),
        Row("static files' time per repeat visit", millis(ours_f["seconds"]), millis(base_f["seconds"]),
            ours_f["seconds"] / base_f["seconds"] if base_f["seconds"] else None, "≤ 0.2",
            base_f["seconds"] > 0 and ours_f["seconds"] / base_f["seconds"] <= 0.2),
        Row("whole repeat visit (2 pages and their files)", millis(ours_f["visit"]), millis(base_f["visit"]),
            ours_f["visit"] / base_f["visit"] if base_f["visit"] else None),
        Row("first visit: static bytes sent (gzip)", f"{info['firstVisit']['ours']['bytes']:,.0f} B",
            f"{info['firstVisit']['baseline']['bytes']:,.0f} B"),
    ]
    return rows, info


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.asset_cache", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (10 rounds)")
    parser.add_argument("--rounds", type=int, help="repeat visits of each browser (default 50; quick 10)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (10 if args.quick else 50)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    rows, info = run(argv)
    print(format_table(TITLE, rows))
    print(NOTES)
    print(f"({machine_line()}; {time.perf_counter() - started:.0f} s)")
    print(json.dumps(info, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
