"""Names that resolve to loopback, metadata and private addresses, and names that rebind (issue 28,
finding 12), through a real server whose egress resolves by a test DNS server
(`TOOLSMITH_EGRESS_NAMESERVER`, tests/dns_server.py): no `/etc/hosts` is touched.

`http.fetch`'s allow-list names each host bare (ports 80 and 443), so what refuses them is the
address rule, not the allow-list. API URL tools may reach `127.0.0.2` (a `TOOLSMITH_EGRESS_ALLOW`
CIDR): there a "good" server answers on the same port as a recording listener on `127.0.0.1`, and
`flip.test` resolves to the good address, then to loopback, in turn. A second lookup anywhere
between the check and the socket would land on the listener: it must never see a connection.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.adversarial.conftest import Listener, Probe, start_probe
from tests.adversarial.egress import REFUSALS, api_refusal, api_tool_call, fetch
from tests.dns_server import DnsServer
from tests.ssrf_cases import PUBLIC

GOOD = "127.0.0.2"  # the rebinding name's first answer: an address API URL tools may reach
NAMES = {
    "evil.test": [["127.0.0.1"]],
    "meta.test": [["169.254.169.254"]],
    "v6.test": [["::1"]],
    "mapped.test": [["::ffff:127.0.0.1"]],
    "private.test": [["10.0.0.7"]],
    "public-and-loopback.test": [[PUBLIC, "127.0.0.1"]],
    # DNS rebinding, in turn: loopback, then metadata (no answer may be a public address, which a
    # fetch would really reach: these machines send nothing beyond loopback)
    "rebind.test": [["127.0.0.1"], ["169.254.169.254"]],
    "flip.test": [[GOOD], ["127.0.0.1"]],
    "good.test": [[GOOD]],
}

# (name, what the refusal says) for a name that resolves where no request may go
HOSTILE = [
    ("evil.test", "evil.test resolves to 127.0.0.1"),
    ("meta.test", "metadata address refused: meta.test resolves to 169.254.169.254"),
    ("v6.test", "v6.test resolves to ::1"),
    ("mapped.test", "loopback IPv4 127.0.0.1 embedded in IPv6"),
    ("private.test", "private.test resolves to 10.0.0.7"),
    ("public-and-loopback.test", "public-and-loopback.test resolves to 127.0.0.1"),
]


class Good(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/to/"):  # /to/<host>/<port>: a redirect to http://<host>:<port>/
            host, port = self.path.split("/")[2:4]
            self.send_response(302)
            self.send_header("Location", f"http://{host}:{port}/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "14")
        self.end_headers()
        self.wfile.write(b'{"good": true}')


@pytest.fixture(scope="module")
def good(forbidden: Listener) -> Iterator[ThreadingHTTPServer]:
    """The good server, on `GOOD` at the forbidden listener's port."""
    server = ThreadingHTTPServer((GOOD, forbidden.port), Good)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory, dns: DnsServer, forbidden: Listener, good: ThreadingHTTPServer) -> Iterator[Probe]:
    # bare entries but the good server's: `good.test:<port>` names it exactly (it is loopback)
    allowed = ", ".join([*(name for name in NAMES if name != "good.test"), f"good.test:{forbidden.port}"])
    running = start_probe(tmp_path_factory.mktemp("dns") / "data", TOOLSMITH_EGRESS_NAMESERVER=dns.address,
                          CODESANDBOX_ALLOWED_DOMAINS=allowed, TOOLSMITH_EGRESS_ALLOW=f"{GOOD}/32")
    yield running
    running.close()


def refused_by_a_check(message: str) -> bool:
    return message.startswith(REFUSALS)


def test_the_test_resolver_is_what_the_server_resolves_by(probe: Probe, dns: DnsServer, forbidden: Listener) -> None:
    # the control: an API URL tool and http.fetch reach the good server by names only the test
    # resolver knows, so what the cases below refuse is refused by the address rule
    answer = api_tool_call(probe, f"http://good.test:{forbidden.port}/")
    assert answer.get("error", "unsaved") is None and answer["output"] == {"good": True}, answer
    output = fetch(probe, f"http://good.test:{forbidden.port}/")
    assert (output.get("status"), output.get("text")) == (200, '{"good": true}'), output
    assert forbidden.connections == []
    probe.assert_alive()


@pytest.mark.parametrize(("name", "why"), HOSTILE, ids=[n for n, _ in HOSTILE])
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_http_fetch_refuses_a_name_resolving_to_a_forbidden_address(probe: Probe, forbidden: Listener, scheme: str, name: str, why: str) -> None:
    output = fetch(probe, f"{scheme}://{name}/")
    assert "refused" in output, f"the request went through: {output}"
    assert refused_by_a_check(output["refused"]) and why in output["refused"], output
    assert forbidden.connections == []
    probe.assert_alive()


@pytest.mark.parametrize(("name", "why"), HOSTILE, ids=[n for n, _ in HOSTILE])
def test_an_api_url_tool_refuses_a_name_resolving_to_a_forbidden_address(probe: Probe, forbidden: Listener, name: str, why: str) -> None:
    # aimed at the forbidden listener's port: a connection would show
    message = api_refusal(api_tool_call(probe, f"https://{name}:{forbidden.port}/"))
    assert refused_by_a_check(message) and why in message, message
    assert forbidden.connections == []
    probe.assert_alive()


def test_http_fetch_looks_a_rebinding_name_up_once_and_judges_the_answer_it_connects_to(probe: Probe, dns: DnsServer, forbidden: Listener) -> None:
    refusals = []
    for _ in range(4):
        before = dns.lookups("rebind.test")
        output = fetch(probe, "http://rebind.test/", timeout_millis=2000)
        assert dns.lookups("rebind.test") == before + 1, "one fetch, one lookup: the socket goes where the check looked"
        assert "refused" in output and refused_by_a_check(output["refused"]), output
        refusals.append(output["refused"])
    # each refusal names the answer of its own lookup: loopback and metadata, in turn
    loopback = [r for r in refusals if "rebind.test resolves to 127.0.0.1" in r]
    metadata = [r for r in refusals if "metadata address refused: rebind.test resolves to 169.254.169.254" in r]
    assert (len(loopback), len(metadata)) == (2, 2), refusals
    assert forbidden.connections == []
    probe.assert_alive()


def test_an_api_url_tool_never_connects_to_a_rebinding_names_second_answer(probe: Probe, dns: DnsServer, forbidden: Listener) -> None:
    if dns.lookups("flip.test") % 2:
        api_tool_call(probe, f"http://flip.test:{forbidden.port}/")  # its next answer is the good one
    reached = refused = 0
    for _ in range(6):
        before = dns.lookups("flip.test")
        answer = api_tool_call(probe, f"http://flip.test:{forbidden.port}/")
        assert dns.lookups("flip.test") == before + 1, "one call, one lookup"
        if answer["error"] is None:
            assert answer["output"] == {"good": True}, answer
            reached += 1
        else:
            message = api_refusal(answer)
            assert "flip.test resolves to 127.0.0.1" in message and refused_by_a_check(message), message
            refused += 1
    # the connections kept alive to the good address are not reused once the name points elsewhere
    assert (reached, refused) == (3, 3)
    assert forbidden.connections == [], "a connection went to the rebinding name's loopback answer"
    probe.assert_alive()


@pytest.mark.parametrize("target", ["evil.test", "meta.test", "v6.test"])
def test_a_redirect_to_a_name_resolving_to_a_forbidden_address_is_refused(probe: Probe, forbidden: Listener, target: str) -> None:
    # the good server (allowed, by name) redirects to a name whose answer no request may reach
    port = forbidden.port
    message = api_refusal(api_tool_call(probe, f"http://good.test:{port}/to/{target}/{port}", maxRedirects=3))
    assert refused_by_a_check(message) and f"{target} resolves to" in message, message
    output = fetch(probe, f"http://good.test:{port}/to/{target}/80")
    assert "refused" in output and refused_by_a_check(output["refused"]) and f"{target} resolves to" in output["refused"], output
    assert forbidden.connections == []
    probe.assert_alive()


def test_no_secret_in_any_log_line_event_export_or_answer(probe: Probe) -> None:
    probe.assert_no_secret_anywhere()
