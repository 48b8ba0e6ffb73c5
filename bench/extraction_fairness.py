"""Benchmark: fair share of document extraction between tenants (issue 28, finding 5; docs/tenants.md).

One real `toolsmith serve` (its default extraction: 2 workers, half of them a tenant's share)
holds two tenants, made through the operator's API. Tenant B uploads a one-page PDF and waits
until it is `READY` (the upload's POST to the first GET that says so, polled every 10 ms). Tenant A
floods extraction with `--uploads` uploads of `--files` hostile HTML pages each (deeply nested
`<div>`s: seconds of parsing each). Phases alternate in the same run, B alone then B while A's flood
is extracting (B's upload starts `--settle-ms` after A's last upload, when A's first extraction has
run long enough to be lowered), `--rounds` times; A's flood ends before each B-alone phase (its
uploads end at TOOLSMITH_UPLOAD_MAX_SECONDS, set low here), so that the machine's other load falls
on both alike. Goal: B's median time to READY while A floods is at most 2x its time alone.

Before the fair share, B's file waited behind every one of A's queued files (31 s behind four
hostile HTML uploads in the finding).

Run: `python -m bench.extraction_fairness [--quick]`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from bench._common import Progress, Row, median, millis, quartiles, standalone
from bench.search_tools import big_pdf
from testing.launcher import Server

TITLE = "Fair share of extraction: tenant B's one-page upload to READY, alone and while tenant A floods extraction, same run"
NOTES = ("(each tenant's documents queue apart and are served in turn, at most half the extraction workers per tenant, "
         "smallest first; an extraction running past 1 s has its worker lowered to niceness 19)")
GOAL = 2.0
OPERATOR = "tso_bench_extraction_" + "x" * 24
TOOLS = "/api/v1/admin/search-tools"


def nested_html(depth: int) -> bytes:
    """A page of `depth` unclosed nested <div>s: 50,000 of them keep the HTML parser busy for seconds."""
    return b"<html><body>" + b"<div>" * depth + b"deep</body></html>"


def _tenant(http: httpx.Client, tenant: str) -> str:
    made = http.post("/api/v1/operator/tenants", json={"id": tenant, "name": tenant.title()},
                     headers={"Authorization": f"Bearer {OPERATOR}"})
    if made.status_code != 201:
        raise SystemExit(f"bench.extraction_fairness: creating tenant {tenant} answered {made.status_code}: {made.text}")
    token = made.json()["adminToken"]
    tool = http.post(TOOLS, json={"id": "docs", "description": f"{tenant}'s documents"}, headers={"Authorization": f"Bearer {token}"})
    if tool.status_code != 201:
        raise SystemExit(f"bench.extraction_fairness: creating {tenant}'s tool answered {tool.status_code}: {tool.text}")
    return token


def _upload(http: httpx.Client, token: str, files: list[tuple[str, bytes]]) -> list[str]:
    answer = http.post(f"{TOOLS}/docs/documents", files=[("files", f) for f in files], headers={"Authorization": f"Bearer {token}"})
    if answer.status_code != 202:
        raise SystemExit(f"bench.extraction_fairness: an upload answered {answer.status_code}: {answer.text[:300]}")
    return [d["id"] for d in answer.json()["documents"]]


def _processing(http: httpx.Client, token: str) -> int:
    answer = http.get(f"{TOOLS}/docs", headers={"Authorization": f"Bearer {token}"})
    return int(answer.json()["documents"].get("PROCESSING", 0))


def one_page_to_ready(http: httpx.Client, token: str, seed: int) -> float:
    """Seconds from B's upload of a new one-page PDF to the GET that says it is READY."""
    pdf = big_pdf(1, 0.01, seed=seed)
    started = time.perf_counter()
    (doc_id,) = _upload(http, token, [(f"page{seed}.pdf", pdf)])
    while True:
        document = http.get(f"{TOOLS}/docs/documents/{doc_id}", headers={"Authorization": f"Bearer {token}"}).json()
        if document["state"] != "PROCESSING":
            break
        if time.perf_counter() - started > 300:
            raise SystemExit("bench.extraction_fairness: B's one-page PDF still PROCESSING after 300 s")
        time.sleep(0.01)
    elapsed = time.perf_counter() - started
    if document["state"] != "READY":
        raise SystemExit(f"bench.extraction_fairness: B's one-page PDF ended {document['state']}: {document.get('reason')}")
    return elapsed


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    args = parse_args(argv)
    progress = Progress("extraction_fairness", quiet=quiet)
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-extraction-") as tmp:
        server = Server(Path(tmp) / "data", inherit_settings=False, env={
            "TOOLSMITH_ADMIN_TOKEN": "tsa_bench_extraction_" + "x" * 24, "TOOLSMITH_OPERATOR_TOKEN": OPERATOR,
            "TOOLSMITH_RATE_PER_SECOND": "0", "TOOLSMITH_LOG_LEVEL": "WARNING",
            "TOOLSMITH_UPLOAD_MAX_SECONDS": str(args.upload_seconds),
        })
        try:
            server.start()
        except RuntimeError as failed:
            raise SystemExit(f"bench.extraction_fairness: {failed}") from None
        try:
            return _measure(server, args, progress)
        finally:
            server.stop()


def _measure(server: Server, args: argparse.Namespace, progress: Progress) -> tuple[list[Row], dict[str, object]]:
    alone: list[float] = []
    flooded: list[float] = []
    waiting: list[int] = []
    with httpx.Client(base_url=server.url, timeout=120, trust_env=False) as http:
        a_token, b_token = _tenant(http, "alpha"), _tenant(http, "beta")
        one_page_to_ready(http, b_token, seed=10_000)  # B's extraction worker starts: not timed
        progress(f"{args.rounds} rounds: B alone, then B while A floods ({args.uploads} uploads of {args.files} nested "
                 f"pages, each upload ended at {args.upload_seconds:g} s)")
        for r in range(args.rounds):
            alone.append(one_page_to_ready(http, b_token, seed=2 * r))
            for u in range(args.uploads):
                _upload(http, a_token, [(f"nested{r}-{u}-{f}.html", nested_html(args.depth + 1_000 * r + 50 * u + f))
                                        for f in range(args.files)])
            time.sleep(args.settle_ms / 1000)
            flooded.append(one_page_to_ready(http, b_token, seed=2 * r + 1))
            waiting.append(_processing(http, a_token))
            progress(f"  round {r + 1}/{args.rounds}: B alone {millis(alone[-1])}, while A floods {millis(flooded[-1])} "
                     f"(A's documents still PROCESSING then: {waiting[-1]}); load {os.getloadavg()[0]:.1f}")
            deadline = time.monotonic() + args.upload_seconds + 120
            while _processing(http, a_token):  # A's flood ends (its uploads' limit) before B is alone again
                if time.monotonic() > deadline:
                    raise SystemExit("bench.extraction_fairness: A's flood did not end at its uploads' limit")
                time.sleep(0.2)
    ratio = median(flooded) / median(alone)
    low, high = quartiles([f / a for a, f in zip(alone, flooded)])
    rows = [
        Row("B's one-page PDF, upload to READY, while A floods", millis(median(flooded)), millis(median(alone)) + " alone",
            ratio, f"≤ {GOAL:.2f}", ratio <= GOAL, f"IQR {low:.2f}–{high:.2f}"),
        Row("A's documents still PROCESSING when B's was READY", f"{median(waiting):.0f}", f"of {args.uploads * args.files}",
            None, "(informative: B did not wait for them)", None, ""),
    ]
    return rows, {"load": " ".join(f"{v:.1f}" for v in os.getloadavg()), "args": vars(args), "ratio": ratio}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.extraction_fairness", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--rounds", type=int, help="B-alone / B-with-A rounds (default 7; quick 3)")
    parser.add_argument("--uploads", type=int, default=4, help="A's uploads per flood (default 4)")
    parser.add_argument("--files", type=int, default=5, help="hostile pages per upload of A's (default 5)")
    parser.add_argument("--depth", type=int, default=50_000, help="nesting of each hostile page (default 50,000)")
    parser.add_argument("--upload-seconds", type=float, default=6.0, help="TOOLSMITH_UPLOAD_MAX_SECONDS of the server (default 6)")
    parser.add_argument("--settle-ms", type=float, default=1500, help="from A's last upload to B's (default 1500)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (3 if args.quick else 7)
    return args


main = standalone(run, TITLE, NOTES)


if __name__ == "__main__":
    sys.exit(main())
