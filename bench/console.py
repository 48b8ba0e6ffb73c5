"""Benchmark: the admin console's pages against the JSON of the same data, over 10,000 modules.

A real `toolsmith serve` (embedded defaults: SQLite event store, in-memory read model; with
`OPENSEARCH_URL` set, the OpenSearch read model on an index of the run's own) on an event store of
10,000 modules written before it starts (each created and published, as `bench.read_side` writes
them; one in ten imports a library, so the used-by counts are not all 0). The server rebuilds its
read model from them at start. Then, signed in with a session cookie (the HTML) or the admin's
bearer token (the JSON), one keep-alive client each, in rounds that alternate which goes first:

- the list page, first page with its facets (`GET /console/modules`, every row with its used-by
  count) against `GET /api/v1/admin/code-modules` (first page with facets), unfiltered and with a
  search and a role filter;
- the module page (`GET /console/modules/{id}`) against `GET /api/v1/admin/code-modules/{id}`.

Figures: p50 and p95 of each, ratio = HTML p50 / JSON p50 (goal ≤ 2). Then the bytes of
JavaScript and CSS a first visit downloads: the `<script src>` and `<link rel=stylesheet>` of the
list page (and what the module page adds): the bytes the service sends a browser that accepts gzip
(it compresses its static files), and the raw size. Printed as a table, then as JSON.

Run: `python -m bench.console [--quick] [--modules N] [--requests N]`: first the console in
Chromium (`bench.console_browser`: each main page's load cold and warm, and the common actions
through the pages against their REST call), then the figures above; `--part browser` or `--part
pages` runs one of the two.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx

from bench._common import Progress, Row, bench_settings, format_table, machine_line, millis, rotated
from bench._server import serve_store
from testing.launcher import Server

TITLE = "Console pages (HTML) against the JSON of the same data, over {modules:,} modules; p50 / p95"
TOKEN = "tsa_bench-console-admin-token"
TENANT = "default"
SOURCE = "exports.run = function (input) { return input; };"
TOPICS = ("dates", "text", "numbers", "reports", "weather", "money")
GOAL = 2.0
GZIP_FROM = 1024  # the smallest static file the service sends gzipped (GZipMiddleware's minimum_size)


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def definition(i: int) -> dict[str, Any]:
    """Three in four are tools; one in ten (not a tenth's first) imports that tenth's first module."""
    tool = None
    if i % 4 != 0:
        tool = {"tags": [f"t{i % 50}", TOPICS[i % len(TOPICS)]], "exposeInChat": i % 2 == 0, "timeout": 1000,
                "memoryMb": 64, "inputParameters": [], "enabled": True}
    imports = [f"mod{i - i % 10}"] if i % 10 == 5 else []
    return {"description": f"Module {i} helps with {TOPICS[i % len(TOPICS)]} and more", "content": SOURCE,
            "imports": imports, "tool": tool}


def seed(data_dir: Path, modules: int) -> float:
    """`modules` modules created and published, written straight into the server's event store."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

    from application.store import Store
    from domain.model import CodeModule

    started = time.perf_counter()
    data_dir.mkdir(parents=True, exist_ok=True)
    store = Store(bench_settings(data_dir).event_store_env())
    try:
        with Bar(TextColumn("seeding"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                 transient=False, console=_stderr_console()) as bar:
            task = bar.add_task("modules", total=modules)
            chunk = []
            for i in range(modules):
                module = CodeModule(tenant=TENANT, module_id=f"mod{i}", definition=definition(i), by="bench")
                module.publish(by="bench")
                chunk.append(module)
                if len(chunk) == 500 or i == modules - 1:
                    store.save(*chunk)
                    bar.advance(task, len(chunk))
                    chunk = []
    finally:
        store.close()
    return time.perf_counter() - started


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def start(tmp: Path, modules: int, progress: Progress) -> tuple[Server, dict[str, Any]]:
    env = {"TOOLSMITH_ADMIN_TOKEN": TOKEN, "TOOLSMITH_LOG_LEVEL": "WARNING"}
    info: dict[str, Any] = {"readModel": "in-memory (embedded default)"}
    opensearch = os.environ.get("OPENSEARCH_URL")
    if opensearch:
        index = f"bench-console-{uuid.uuid4().hex[:8]}"
        env |= {"OPENSEARCH_URL": opensearch, "TOOLSMITH_OPENSEARCH_INDEX": index, "TOOLSMITH_OPENSEARCH_REPLICAS": "0"}
        info |= {"readModel": f"OpenSearch at {opensearch} (index {index})", "opensearchIndex": index, "opensearchUrl": opensearch}
    progress(f"read model: {info['readModel']}")
    server = Server(data_dir=tmp / "data", token=TOKEN, inherit_settings=False, log_file=tmp / "serve.log", log_mode="w", env=env)
    info["readySeconds"] = serve_store(server, modules, timeout=240, bench="bench.console")
    progress(f"server ready with {modules:,} modules in its read model in {info['readySeconds']:.1f} s")
    return server, info


def sign_in(server: Server) -> httpx.Client:
    """A browser-like client: the session cookie, no bearer token."""
    client = httpx.Client(base_url=server.url, timeout=30, trust_env=False)
    answer = client.post("/console/sign-in", data={"token": TOKEN, "next": "/console/modules"},
                         headers={"Origin": server.url}, follow_redirects=False)
    if answer.status_code != 303:
        raise SystemExit(f"bench.console: sign-in answered {answer.status_code}: {answer.text[:300]}")
    return client


def measure(pairs: dict[str, tuple[tuple[httpx.Client, str, str], tuple[httpx.Client, str, str]]], requests: int,
            warmup: int, progress: Progress) -> dict[str, dict[str, list[float]]]:
    """For each pair (HTML, JSON): `warmup` requests each, then `requests` each, alternating."""
    times: dict[str, dict[str, list[float]]] = {}
    for name, arms in pairs.items():
        times[name] = {"html": [], "json": []}
        for r in range(warmup + requests):
            for arm, (client, url, expect) in rotated(list(zip(("html", "json"), arms)), r):
                started = time.perf_counter()
                answer = client.get(url)
                elapsed = time.perf_counter() - started
                if answer.status_code != 200 or expect not in answer.text:
                    raise SystemExit(f"bench.console: {url} answered {answer.status_code} without {expect!r}: {answer.text[:300]}")
                if r >= warmup:
                    times[name][arm].append(elapsed)
        progress(f"{name}: HTML p50 {millis(percentile(times[name]['html'], 50))}, JSON p50 {millis(percentile(times[name]['json'], 50))}")
    return times


class Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "script" and found.get("src"):
            self.urls.append(found["src"])
        elif tag == "link" and (found.get("rel") or "").lower() == "stylesheet" and found.get("href"):
            self.urls.append(found["href"])


def assets(client: httpx.Client, page: str) -> list[str]:
    parser = Assets()
    parser.feed(client.get(page).text)
    return parser.urls


def asset_sizes(client: httpx.Client, urls: Sequence[str]) -> list[dict[str, Any]]:
    sizes = []
    for url in urls:
        answer = client.get(url, headers={"Accept-Encoding": "gzip"})
        if answer.status_code != 200:
            raise SystemExit(f"bench.console: {url} answered {answer.status_code}")
        body = answer.content  # decoded; num_bytes_downloaded is what crossed the wire
        sent = answer.headers.get("content-encoding")
        # The service compresses what is worth it (1 KB and more: console/web.py); a smaller file goes as it is.
        if sent != "gzip" and len(body) >= GZIP_FROM:
            raise SystemExit(f"bench.console: {url} was not sent gzipped (Content-Encoding: {sent})")
        sizes.append({"url": url.split("?")[0], "bytes": len(body), "gzipped": answer.num_bytes_downloaded, "servedEncoding": sent})
    return sizes


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, Any]]:
    args = parse_args(argv)
    progress = Progress("console", quiet=quiet)
    info: dict[str, Any] = {"args": vars(args)}
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        progress(f"writing {args.modules:,} modules (created and published) into the event store")
        info["seedSeconds"] = seed(tmp / "data", args.modules)
        progress(f"seeded in {info['seedSeconds']:.1f} s")
        server, started = start(tmp, args.modules, progress)
        info |= started
        try:
            rows, figures = _measure_all(server, args, progress, info)
        finally:
            server.stop()
            if "opensearchIndex" in info:
                _drop_index(info["opensearchUrl"], info["opensearchIndex"])
    info["figures"] = figures
    return rows, info


def _measure_all(server: Server, args: argparse.Namespace, progress: Progress, info: dict[str, Any]) -> tuple[list[Row], dict[str, Any]]:
    browser = sign_in(server)
    api = server.client()
    target = "mod0"  # a library imported by mod5
    total = f"{args.modules:,} modules"
    pairs = {
        "list page, first page with facets": (
            (browser, "/console/modules", total), (api, "/api/v1/admin/code-modules?limit=20", '"facets"')),
        "list page, searched and filtered (search=dates, tools)": (
            (browser, "/console/modules?search=dates&role=tool", "modules match"),
            (api, "/api/v1/admin/code-modules?limit=20&search=dates&tool=true", '"facets"')),
        f"module page ({target}, used by 1)": (
            (browser, f"/console/modules/{target}", target), (api, f"/api/v1/admin/code-modules/{target}", f'"{target}"')),
    }
    # the list shows the used-by counts (one query for the page)
    first = browser.get("/console/modules").text
    if f'href="/console/modules/{target}#used-by"' not in first:
        raise SystemExit("bench.console: the list page shows no used-by count for mod0")
    times = measure(pairs, args.requests, args.warmup, progress)
    rows: list[Row] = []
    figures: dict[str, Any] = {}
    for name, arms in times.items():
        html50, html95 = percentile(arms["html"], 50), percentile(arms["html"], 95)
        json50, json95 = percentile(arms["json"], 50), percentile(arms["json"], 95)
        ratio = html50 / json50
        figures[name] = {"htmlP50Ms": html50 * 1e3, "htmlP95Ms": html95 * 1e3, "jsonP50Ms": json50 * 1e3,
                         "jsonP95Ms": json95 * 1e3, "ratioP50": ratio, "ratioP95": html95 / json95,
                         "requests": len(arms["html"]), "meetsGoal": ratio <= GOAL}
        rows.append(Row(name, f"HTML {millis(html50)} / {millis(html95)}", f"JSON {millis(json50)} / {millis(json95)}",
                        ratio, f"≤ {GOAL:g}× (p50)", ratio <= GOAL, f"p95 ratio {html95 / json95:.2f}"))
    # the Ctrl/Cmd+K palette over every module, server and page (informative: the answer as a
    # person waits for it while typing, round trip included)
    palette: list[float] = []
    for r in range(args.warmup + args.requests):
        query = ("dates", "mod12", "server", "zzz")[r % 4]
        started = time.perf_counter()
        answer = browser.get("/console/palette", params={"q": query})
        elapsed = time.perf_counter() - started
        if answer.status_code != 200 or "results" not in answer.json():
            raise SystemExit(f"bench.console: the palette answered {answer.status_code}: {answer.text[:300]}")
        if r >= args.warmup:
            palette.append(elapsed)
    p50, p95 = percentile(palette, 50), percentile(palette, 95)
    figures["palette"] = {"p50Ms": p50 * 1e3, "p95Ms": p95 * 1e3, "requests": len(palette)}
    rows.append(Row(f"palette search over {total} (Ctrl/Cmd+K, the answer's round trip)", f"{millis(p50)} / {millis(p95)}", "",
                    None, "informative", None, f"{len(palette)} searches"))
    # what a first visit downloads
    list_assets = asset_sizes(browser, assets(browser, "/console/modules"))
    seen = {a["url"] for a in list_assets}
    module_assets = [a for a in asset_sizes(browser, assets(browser, f"/console/modules/{target}")) if a["url"] not in seen]
    figures["assets"] = {"listPage": list_assets, "modulePageAdds": module_assets,
                         "listPageGzippedTotal": sum(a["gzipped"] for a in list_assets),
                         "modulePageAddsGzippedTotal": sum(a["gzipped"] for a in module_assets)}
    for a in list_assets:
        rows.append(Row(f"first visit to the list: {a['url']}", f"{a['gzipped']:,} B gzipped", f"{a['bytes']:,} B raw"))
    rows.append(Row("first visit to the list: JS + CSS in all", f"{figures['assets']['listPageGzippedTotal']:,} B gzipped",
                    f"{sum(a['bytes'] for a in list_assets):,} B raw"))
    for a in module_assets:
        rows.append(Row(f"the module page adds: {a['url']}", f"{a['gzipped']:,} B gzipped", f"{a['bytes']:,} B raw"))
    browser.close()
    api.close()
    return rows, figures


def _drop_index(url: str, index: str) -> None:
    try:
        httpx.delete(f"{url.rstrip('/')}/{index}*", params={"expand_wildcards": "all"}, timeout=30, trust_env=False)
    except httpx.HTTPError:
        pass


NOTES = (
    "HTML: the console's page with a session cookie (the list renders 20 rows, the facets and each row's used-by "
    "count, one read-model query for the page); JSON: the REST API with the admin's bearer token. One client each, "
    "keep-alive, on the same server, requests alternating. Asset sizes: the bytes sent with Accept-Encoding: gzip."
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.console", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (2,000 modules, 50 requests)")
    parser.add_argument("--modules", type=int, help="modules in the store (default 10,000; quick 2,000)")
    parser.add_argument("--requests", type=int, help="measured requests of each page (default 200; quick 50)")
    parser.add_argument("--warmup", type=int, default=20, help="requests of each before measuring (default 20)")
    args = parser.parse_args(argv)
    args.modules = args.modules or (2_000 if args.quick else 10_000)
    args.requests = args.requests or (50 if args.quick else 200)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Both parts: the console in Chromium (bench.console_browser: page loads cold and warm, the
    actions against their REST call), then the server's pages against their JSON; `--part` runs one.
    `--quick` goes to both; the other options to the part that takes them."""
    from bench import console_browser

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--part", choices=("browser", "pages", "both"), default="both")
    known, rest = parser.parse_known_args(argv)
    if any(a in ("-h", "--help") for a in rest):
        print("python -m bench.console [--part browser|pages|both] [--quick] [options of the part]\n")
        (console_browser.parse_args if known.part == "browser" else parse_args)(["--help"])
    started = time.perf_counter()
    if known.part in ("browser", "both"):
        browser_args = [a for a in rest if a == "--quick"] if known.part == "both" else rest
        rows, info = console_browser.run(browser_args)
        print(format_table(console_browser.TITLE, rows))
        print(console_browser.NOTES)
        print(f"(Chromium {info['browserVersion']}; load average {info['load']})\n")
    if known.part in ("pages", "both"):
        rows, info = run([a for a in rest if a == "--quick"] if known.part == "both" else rest)
        print(format_table(TITLE.format(modules=info["args"]["modules"]), rows))
        print(NOTES)
        print(f"(read model: {info['readModel']})")
        print(json.dumps({k: v for k, v in info.items() if k != "opensearchUrl"}, indent=2, default=str))
    print(f"({machine_line()}; {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
