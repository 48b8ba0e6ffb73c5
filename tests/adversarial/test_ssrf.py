"""SSRF through `http.fetch` of the real service (issue 12, family 2): address forms and redirects.

The server allows one local HTTP server by exact host and port (`127.0.0.1:<allowed>`, which
redirects wherever a case asks), bare `localhost` and `127.0.0.1` (ports 80 and 443 only), and
every entry of the unit suite's allow-list. A listener on another port of 127.0.0.1 records every
connection: each case's URL or redirect aims at it in some disguise, must be refused with an error
that says why (not a failed connection attempt), and the listener must never see a connection.
The unit suite's refused URLs (tests/unit/test_ssrf.py) run here too, through the real service.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.adversarial.conftest import Listener, Probe, start_probe
from tests.unit.test_ssrf import ALLOW, REFUSED

FETCH = """exports.run = async function (input) {
  try { var r = await http.fetch(input.url, input.options || {}); return {status: r.status, url: r.url, text: r.text}; }
  catch (e) { return {refused: String(e && e.message)}; }
};"""


class Redirector(BaseHTTPRequestHandler):
    """`/r?to=<url>&code=<status>` redirects; anything else answers 200 "allowed"."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        if urlsplit(self.path).path == "/r":
            self.send_response(int(query.get("code", ["302"])[0]))
            self.send_header("Location", query["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", "7")
        self.end_headers()
        self.wfile.write(b"allowed")

    do_POST = do_GET


@pytest.fixture(scope="module")
def allowed() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirector)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory, allowed: ThreadingHTTPServer) -> Iterator[Probe]:
    port = allowed.server_address[1]
    domains = f"127.0.0.1:{port}, localhost, {ALLOW}"
    running = start_probe(tmp_path_factory.mktemp("ssrf") / "data", CODESANDBOX_ALLOWED_DOMAINS=domains)
    yield running
    running.close()


def fetch(probe: Probe, url: str, **options: Any) -> dict[str, Any]:
    answer = probe.test_call(FETCH, input={"url": url, "options": options}, timeout_millis=3000)
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["error"] is None, result
    return result["output"]


def assert_refused(output: dict[str, Any], forbidden: Listener) -> None:
    assert "refused" in output, f"the request went through: {output}"
    message = output["refused"]
    assert message and not message.startswith("could not connect"), f"not refused by a check: {message}"
    assert forbidden.connections == [], "the forbidden port was connected to"


def test_the_allowed_server_is_reached(probe: Probe, allowed: ThreadingHTTPServer) -> None:
    # the control: what the cases below refuse is refused by the checks, not by a broken setup
    output = fetch(probe, f"http://127.0.0.1:{allowed.server_address[1]}/hello")
    assert (output.get("status"), output.get("text")) == (200, "allowed"), output


# the forbidden listener's address in every disguise; `{P}` is its port, `{A}` the allowed server's
FORMS = [
    "http://127.0.0.1:{P}/",
    "http://127.0.0.1.:{P}/",
    "http://127.0.0.1..:{P}/",
    "http://2130706433:{P}/",
    "http://0x7f000001:{P}/",
    "http://0x7f.0x0.0x0.0x1:{P}/",
    "http://0177.0.0.1:{P}/",
    "http://0177.0000.0000.0001:{P}/",
    "http://127.1:{P}/",
    "http://127.0.1:{P}/",
    "http://017700000001:{P}/",
    "http://%31%32%37%2e%30%2e%30%2e%31:{P}/",
    "http://0.0.0.0:{P}/",
    "http://0:{P}/",
    "http://[::]:{P}/",
    "http://[::ffff:127.0.0.1]:{P}/",
    "http://[::ffff:7f00:1]:{P}/",
    "http://[0:0:0:0:0:ffff:127.0.0.1]:{P}/",
    "http://[::127.0.0.1]:{P}/",
    "http://[64:ff9b::7f00:1]:{P}/",
    "http://[::1]:{P}/",
    "http://localhost:{P}/",
    "http://localhost.:{P}/",
    "http://LOCALHOST:{P}/",
    "http://LocalHost.:{P}/",
    "http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ:{P}/",
    "http://127.0.0.1:{A}@127.0.0.1:{P}/",
    "http://user:pass@127.0.0.1:{P}/",
    "http://127.0.0.1:{A}:{P}/",
    "http://127.0.0.1:{P}#@127.0.0.1:{A}/",
    "http://127.0.0.1:{P}?@127.0.0.1:{A}/",
    "http://127.0.0.1:{P}\\@127.0.0.1:{A}/",
    "http://127.0.0.1%00:{P}/",
    "http://127.0.0.1%0a:{P}/",
    " http://127.0.0.1:{P}/",
    "HTTP://127.0.0.1:{P}/",
    "http:/127.0.0.1:{P}/",
    "http:\\\\127.0.0.1:{P}/",
    "//127.0.0.1:{P}/",
    "http://127.0.0.1:+{P}/",
    "http://127.0.0.1:0{P}/",
    "http://127.0.0.1:{P}.0/",
    "http://[::ffff:127.0.0.1%25lo]:{P}/",
    "https://127.0.0.1:{P}/",
    "http://localhost/",
    "https://localhost/",
    "http://127.0.0.1/",
]


@pytest.mark.parametrize("form", FORMS)
def test_a_disguised_address_is_refused_and_never_connected(probe: Probe, allowed: ThreadingHTTPServer, forbidden: Listener, form: str) -> None:
    url = form.replace("{P}", str(forbidden.port)).replace("{A}", str(allowed.server_address[1]))
    assert_refused(fetch(probe, url), forbidden)
    probe.assert_alive()


REDIRECTS = [
    ("302", "http://127.0.0.1:{P}/"),
    ("301", "http://localhost:{P}/"),
    ("303", "http://[::ffff:127.0.0.1]:{P}/"),
    ("307", "http://2130706433:{P}/"),
    ("308", "http://0.0.0.0:{P}/"),
    ("302", "http://127.0.0.1.:{P}/"),
    ("302", "http://u@127.0.0.1:{P}/"),
    ("302", "//127.0.0.1:{P}/"),
    ("302", "http://169.254.169.254/latest/meta-data/"),
    ("302", "http://[fd00:ec2::254]/"),
    ("302", "http://metadata.google.internal/"),
    ("302", "file:///etc/passwd"),
    ("302", "gopher://127.0.0.1:{P}/"),
    ("302", "http://10.0.0.1/"),
    ("302", "http://localhost/"),
    # two hops: the allowed server, then the forbidden port
    ("302", "http://127.0.0.1:{A}/r?to=http://127.0.0.1:{P}/"),
]


@pytest.mark.parametrize(("code", "target"), REDIRECTS, ids=[f"{c}-{t}" for c, t in REDIRECTS])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_redirect_to_a_forbidden_address_is_refused(probe: Probe, allowed: ThreadingHTTPServer, forbidden: Listener, method: str, code: str, target: str) -> None:
    port = allowed.server_address[1]
    to = target.replace("{P}", str(forbidden.port)).replace("{A}", str(port))
    from urllib.parse import quote

    options: dict[str, Any] = {"method": method}
    if method == "POST":
        options["body"] = "payload"
    assert_refused(fetch(probe, f"http://127.0.0.1:{port}/r?code={code}&to={quote(to, safe='')}", **options), forbidden)
    probe.assert_alive()


@pytest.mark.parametrize(("url", "message"), REFUSED, ids=[url for url, _ in REFUSED])
def test_the_unit_suites_refused_urls_are_refused_by_the_service(probe: Probe, forbidden: Listener, url: str, message: str) -> None:
    output = fetch(probe, url)
    assert "refused" in output, f"the request went through: {output}"
    # Literal addresses are judged alike; a name is refused either as the unit suite's stub DNS
    # answer says or because it does not resolve here (the machines have no outside DNS).
    assert output["refused"] == message or output["refused"].startswith(("could not resolve", "domain not allowed", "address not allowed", "metadata address refused")), output
    assert not output["refused"].startswith("could not connect"), output
    assert forbidden.connections == []


def test_no_secret_in_any_log_line_event_export_or_answer(probe: Probe) -> None:
    probe.assert_no_secret_anywhere()
