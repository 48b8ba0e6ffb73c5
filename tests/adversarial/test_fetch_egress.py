"""Every named SSRF case (tests/ssrf_cases.py) through `http.fetch` of a published code module,
called as a client calls it (`POST /api/v1/tools/fetcher/call`) on a real server (issue 28,
finding 12): the cases API URL tools are held to (tests/integration/test_api_tool_ssrf.py), held
to the same egress rules when sandboxed JavaScript sends them.

The allow-list names every case's host bare (ports 80 and 443) where it can be written, so what
refuses a case is the address rule, not the allow-list; the names resolve by a test DNS server
with each case's answers (tests/dns_server.py). A redirect case is a redirect from an allowed local
server (named exactly: `127.0.0.1:<port>`) to the case's URL. The cases marked `api_only` (plain
`http` to a public host) are the one thing `http.fetch` may do once allow-listed: not run here.
Each must be refused by a check, never by a connection that failed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from sandbox.net import AllowList
from tests.adversarial.conftest import CODE_MODULES, Probe, start_probe
from tests.adversarial.egress import FETCH, REFUSALS
from tests.adversarial.test_ssrf import Redirector
from tests.dns_server import DnsServer
from tests.ssrf_cases import CASES, SsrfCase

FETCHED = [case for case in CASES if not case.api_only]
DIRECT = [case for case in FETCHED if not case.redirect]
REDIRECTS = [case for case in FETCHED if case.redirect]
CALL = "/api/v1/tools/fetcher/call"


def _bare_entry(case: SsrfCase) -> str | None:
    """The case's host as a bare allow-list entry, if one can name it (`2130706433` cannot)."""
    try:
        host = httpx.URL(case.url).host
    except (httpx.InvalidURL, ValueError):
        return None
    entry = f"[{host}]" if ":" in host else host
    try:
        AllowList.parse(entry)
    except ValueError:
        return None
    return entry


# What the test DNS server answers (the `dns` fixture of conftest.py): each case's names.
NAMES = {name: [answers] for case in CASES for name, answers in case.answers.items()}

@pytest.fixture(scope="module")
def allowed() -> Iterator[httpx.URL]:
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirector)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield httpx.URL(f"http://127.0.0.1:{server.server_address[1]}")
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory, dns: DnsServer, allowed: httpx.URL) -> Iterator[Probe]:
    entries = {entry for case in CASES if (entry := _bare_entry(case))}
    domains = ", ".join([f"127.0.0.1:{allowed.port}", *sorted(entries)])
    running = start_probe(tmp_path_factory.mktemp("fetch-egress") / "data", CODESANDBOX_ALLOWED_DOMAINS=domains,
                          TOOLSMITH_EGRESS_NAMESERVER=dns.address)
    module = {"id": "fetcher", "description": "fetches what it is told", "draftContent": FETCH,
              "tool": {"timeoutMillis": 5000, "inputParameters": [
                  {"name": "url", "description": "where", "type": "string", "required": True},
                  {"name": "options", "description": "http.fetch's options", "type": "object"}]}}
    assert running.send("POST", CODE_MODULES, json=module).status_code == 201
    published = running.send("POST", f"{CODE_MODULES}/fetcher/publish")
    assert published.status_code == 200, published.text
    yield running
    running.close()


def called(probe: Probe, url: str, **options: object) -> dict[str, object]:
    answer = probe.send("POST", CALL, json={"url": url, "options": options}, deadline=10)
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["error"] is None, result
    return result["output"]


def assert_refused_by_a_check(output: dict[str, object], case: SsrfCase) -> None:
    assert "refused" in output, f"{case.name} ({case.what}) went through: {output}"
    message = str(output["refused"])
    assert message.startswith(REFUSALS), f"{case.name} ({case.what}) not refused by a check: {message}"


def test_the_published_module_reaches_the_allowed_server(probe: Probe, allowed: httpx.URL) -> None:
    # the control: the module fetches, the allowed server answers, through the call path
    output = called(probe, str(allowed.join("/hello")))
    assert (output.get("status"), output.get("text")) == (200, "allowed"), output
    probe.assert_alive()


@pytest.mark.parametrize("case", DIRECT, ids=str)
def test_each_ssrf_case_is_refused_for_http_fetch(probe: Probe, dns: DnsServer, case: SsrfCase) -> None:
    output = called(probe, case.url)
    assert_refused_by_a_check(output, case)
    for name, answers in case.answers.items():  # a name is judged by what the test resolver answered
        assert dns.lookups(name) >= 1 and "resolves to" in str(output["refused"]), output
    probe.assert_alive()


@pytest.mark.parametrize("case", REDIRECTS, ids=str)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_each_ssrf_redirect_case_is_refused_for_http_fetch(probe: Probe, allowed: httpx.URL, case: SsrfCase, method: str) -> None:
    options: dict[str, object] = {"method": method}
    if method == "POST":
        options["body"] = "payload"
    redirect = str(allowed.join(f"/r?code=302&to={quote(case.url, safe='')}"))
    output = called(probe, redirect, **options)
    assert_refused_by_a_check(output, case)
    if case.answers:
        assert "resolves to" in str(output["refused"]), output
    probe.assert_alive()


def test_no_secret_in_any_log_line_event_export_or_answer(probe: Probe) -> None:
    probe.assert_no_secret_anywhere()
