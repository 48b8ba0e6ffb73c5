"""Benchmark: a tool call over MCP with an OAuth access token against the same call with a static
token, one `toolsmith serve` (docs/oauth.md; issue 32's goal: ≥ 0.95 × the static token's rate).

One server (SQLite, embedded sandbox) serves one small published tool. An OAuth client registers
(RFC 7591), its person (the admin, signed in to the console) allows it on the consent page, and it
exchanges the code for an access token: all over plain HTTP, no browser. Then two handshake-era
MCP sessions are opened, one per token, and wrk POSTs `tools/call` on each (4 connections), in
interleaved rounds of a fixed time; the figure is the median calls/s of each, and the ratio OAuth /
static (higher is better). The OAuth token's check is made once (its signature, claims and grant)
and kept by its digest until it expires, so a call costs what a static token's does.

Informative: how long a client takes from its first 401 to its first `tools/list` (discovery,
registration, authorization with an immediate consent, code exchange, initialize), median of a few.

Run: `python -m bench.oauth [--quick]`.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

from bench._common import Progress, Row, median, quartiles, rotated, standalone
from bench.mcp_call import ARGUMENTS, EXPECTED, HANDSHAKE_VERSION, TOOL, WRK_CONNECTIONS, ensure_wrk, publish_tool, run_wrk, wrk_script
from testing.launcher import Server, free_port

TOKEN = "tsa_bench-admin-token"
GOAL = 0.95
REDIRECT = "http://127.0.0.1:9/callback"  # never reached: the code is read from the redirect's Location
TITLE = "Benchmark — tools/call over MCP with an OAuth access token vs a static token, one toolsmith serve; medians"


def start_server(tmp: str) -> Server:
    port = free_port()
    server = Server(data_dir=Path(tmp) / "data", port=port, token=TOKEN, inherit_settings=False,
                    log_file=Path(tmp) / "serve.log", log_mode="w",
                    env={"TOOLSMITH_ADMIN_TOKEN": TOKEN, "TOOLSMITH_LOG_LEVEL": "WARNING",
                         "TOOLSMITH_PUBLIC_URL": f"http://127.0.0.1:{port}", "TOOLSMITH_OAUTH_ACCESS_TOKEN_SECONDS": "3600"})
    try:
        return server.start()
    except RuntimeError as failed:
        raise SystemExit(f"bench.oauth: {failed}") from None


def access_token(url: str) -> str:
    """What an OAuth client goes through, over HTTP: the 401, the metadata, registration, the
    person's consent (a console session of the admin), the code exchange."""
    with httpx.Client(base_url=url, timeout=30, follow_redirects=False, trust_env=False) as http:
        refused = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            headers={"Accept": "application/json, text/event-stream"})
        found = re.search(r'resource_metadata="([^"]+)"', refused.headers.get("www-authenticate", ""))
        if refused.status_code != 401 or found is None:
            raise SystemExit(f"bench.oauth: the 401 names no resource metadata: {refused.status_code} {refused.headers}")
        resource = http.get(found.group(1)).json()
        issuer = resource["authorization_servers"][0]
        metadata = http.get(f"{issuer}/.well-known/oauth-authorization-server").json()
        client_id = http.post(metadata["registration_endpoint"], json={
            "client_name": "bench.oauth", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"]}).json()["client_id"]
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "bench",
                 "code_challenge": challenge, "code_challenge_method": "S256", "scope": "mcp:tools",
                 "resource": resource["resource"]}
        http.post("/console/sign-in", data={"token": TOKEN, "next": "/console/oauth/grants"})
        consent = http.get(http.get(metadata["authorization_endpoint"], params=query).headers["location"])
        csrf = re.search(r'<meta name="csrf-token" content="([^"]+)"', consent.text)
        if consent.status_code != 200 or csrf is None:
            raise SystemExit(f"bench.oauth: the consent page answered {consent.status_code}")
        allowed = http.post("/console/oauth/consent", data={**query, "csrf_token": csrf.group(1), "decision": "allow"})
        code = parse_qs(urlsplit(allowed.headers["location"]).query)["code"][0]
        issued = http.post(metadata["token_endpoint"], data={
            "grant_type": "authorization_code", "code": code, "client_id": client_id, "redirect_uri": REDIRECT,
            "code_verifier": verifier, "resource": resource["resource"]})
        if issued.status_code != 200:
            raise SystemExit(f"bench.oauth: the token endpoint answered {issued.status_code}: {issued.text}")
        return issued.json()["access_token"]


def open_session(url: str, token: str) -> str:
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": {"name": "bench.oauth", "version": "1"}}}
    with httpx.Client(base_url=url, headers=headers, timeout=30, trust_env=False) as http:
        opened = http.post("/mcp", json=initialize)
        session = opened.headers.get("mcp-session-id")
        if opened.status_code != 200 or not session:
            raise SystemExit(f"bench.oauth: initialize answered {opened.status_code}: {opened.text}")
        http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                  headers={"Mcp-Session-Id": session, "Mcp-Protocol-Version": HANDSHAKE_VERSION})
    return session


def first_list_seconds(url: str) -> float:
    """From a client's first 401 to its first tools/list answered (consent given at once)."""
    began = time.perf_counter()
    token = access_token(url)
    session = open_session(url, token)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
               "Mcp-Session-Id": session, "Mcp-Protocol-Version": HANDSHAKE_VERSION}
    listed = httpx.post(url + "/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers,
                        timeout=30, trust_env=False)
    if listed.status_code != 200 or TOOL not in listed.text:
        raise SystemExit(f"bench.oauth: tools/list answered {listed.status_code}: {listed.text[:200]}")
    return time.perf_counter() - began


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    args = parse_args(argv)
    progress = Progress("oauth", quiet=quiet)
    ensure_wrk()
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        progress("starting toolsmith serve")
        serve = start_server(tmp)
        try:
            publish_tool(serve)
            tokens = {"oauth": access_token(serve.url), "static": TOKEN}
            params = json.dumps({"name": TOOL, "arguments": ARGUMENTS}, separators=(",", ":"))
            call = ('{"jsonrpc":"2.0","method":"tools/call","params":' + params + ',"id":', "}")
            scripts = {}
            for name, token in tokens.items():
                headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                           "Accept": "application/json, text/event-stream", "Mcp-Session-Id": open_session(serve.url, token),
                           "Mcp-Protocol-Version": HANDSHAKE_VERSION}
                scripts[name] = Path(tmp) / f"{name}.lua"
                scripts[name].write_text(wrk_script("/mcp", call, f'"text":"{EXPECTED}"', headers))
            for script in scripts.values():
                run_wrk(serve.url, script, args.warmup)
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in scripts}
            progress(f"wrk: {args.rounds} rounds × {args.seconds:g} s per token, {WRK_CONNECTIONS} connections")
            for r in range(args.rounds):
                for name in rotated(list(scripts), r):
                    runs[name].append(run_wrk(serve.url, scripts[name], args.seconds))
                progress("  round {}/{}: {}".format(r + 1, args.rounds, ", ".join(f"{n} {runs[n][-1]['rate']:,.0f}/s" for n in scripts)))
            wrong = int(sum(run["wrong"] for name in runs for run in runs[name]))
            if wrong:
                progress(f"WARNING: wrk saw {wrong} answers that were not 200 with {EXPECTED} in them")
            oauth, static = ([run["rate"] for run in runs[name]] for name in ("oauth", "static"))
            q1, q3 = quartiles([o / s for o, s in zip(oauth, static)])
            p50 = {name: median([run["p50"] for run in runs[name]]) for name in runs}
            ratio = median(oauth) / median(static)
            rows = [Row(f"tools/call over wrk, one session per token, {WRK_CONNECTIONS} connections",
                        f"OAuth {median(oauth):,.0f} calls/s (p50 {p50['oauth'] * 1e3:.1f} ms)",
                        f"static {median(static):,.0f} calls/s (p50 {p50['static'] * 1e3:.1f} ms)",
                        ratio, f"≥ {GOAL} (OAuth/static)", ratio >= GOAL, f"IQR {q1:.2f}–{q3:.2f}")]
            firsts = [first_list_seconds(serve.url) for _ in range(args.flows)]
            rows.append(Row("first 401 to first tools/list (built-in server, consent at once)",
                            f"{median(firsts) * 1e3:.0f} ms", "", None, "informative", None,
                            f"{len(firsts)} flows, {min(firsts) * 1e3:.0f}–{max(firsts) * 1e3:.0f} ms"))
            return rows, {"wrong": wrong}
        finally:
            serve.stop()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.oauth", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about 10 s)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 6, quick 2)")
    parser.add_argument("--seconds", type=float, help="wrk's time per token per round, whole seconds (default 3, quick 1)")
    parser.add_argument("--warmup", type=float, default=1.0, help="untimed seconds per token first (default 1)")
    parser.add_argument("--flows", type=int, default=5, help="flows timed from the first 401 (default 5)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (2 if args.quick else 6)
    args.seconds = args.seconds or (1.0 if args.quick else 3.0)
    return args


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
