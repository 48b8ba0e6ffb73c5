"""`https` upstreams of a real server (issue 28, finding 12): API URL tools and `http.fetch` against
local TLS servers whose certificates come from a throwaway CA (tests/tls.py), which the server
trusts through `SSL_CERT_FILE` and nothing else.

An https upstream works, by address and by a name (the test DNS server's); a certificate from a
CA nobody trusts, for another name, or expired is refused with an error that says it is the
certificate. A redirect from https to plain http follows the documented rule: for an API URL
tool every `http` hop needs a `TOOLSMITH_EGRESS_ALLOW` entry (so a downgrade to a public host, or
to a local port without one, is refused); for `http.fetch` every hop needs an allow-list entry for
its host and port. A redirect to loopback is refused by both. External MCP tools over https
reach an MCP server whose certificate the CA issued, and refuse each bad certificate alike. A
recording listener stands for every target that must not be reached: it must never see a connection.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
import trustme

from tests.adversarial.conftest import Listener, Probe, start_probe
from tests.adversarial.egress import REFUSALS, api_refusal, api_tool_call, fetch
from tests.adversarial.test_mcp_tool_egress import mcp_app, serving
from tests.dns_server import DnsServer
from tests.helpers import free_port
from tests.ssrf_cases import PUBLIC
from tests.tls import expired, https_upstream, trusted_bundle
from tests.upstream import Upstream, running

NAMES = {"secure.test": [["127.0.0.1"]], "evil.test": [["127.0.0.1"]], "localhost": [["127.0.0.1"]], "public.test": [[PUBLIC]]}


@dataclass
class Upstreams:
    good: Upstream  # trusted CA, for secure.test and 127.0.0.1
    untrusted: Upstream  # a CA the server does not trust
    wrong_name: Upstream  # trusted CA, for another name only
    expired: Upstream  # trusted CA, validity over


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def upstreams(ca: trustme.CA) -> Iterator[Upstreams]:
    stranger = trustme.CA()
    with (https_upstream(ca.issue_cert("secure.test", "127.0.0.1")) as good,
          https_upstream(stranger.issue_cert("secure.test", "127.0.0.1")) as untrusted,
          https_upstream(ca.issue_cert("elsewhere.example")) as wrong_name,
          https_upstream(expired(ca, "secure.test", "127.0.0.1")) as old):
        yield Upstreams(good, untrusted, wrong_name, old)


@pytest.fixture(scope="module")
def plain() -> Iterator[Upstream]:
    yield from running()


def mcp_sidecar(ca: trustme.CA, forbidden: Listener, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """An MCP server over https (trusted CA, for secure.test and 127.0.0.1): its port."""
    folder = tmp_path_factory.mktemp("mcp-tls")
    certificate = ca.issue_cert("secure.test", "127.0.0.1")
    certificate.cert_chain_pems[0].write_to_path(str(folder / "cert.pem"))
    certificate.private_key_pem.write_to_path(str(folder / "key.pem"))
    port = free_port()
    yield from serving(mcp_app(forbidden, port), port, ssl_certfile=str(folder / "cert.pem"), ssl_keyfile=str(folder / "key.pem"))


def mcp_tools(sidecar: int, upstreams: Upstreams) -> dict[str, Any]:
    """External MCP tools over https: the sidecar by name and by address, and each bad certificate."""
    def tool(name: str, url: str) -> dict[str, Any]:
        return {"name": name, "description": f"an MCP tool at {url}", "url": url, "remoteName": "add", "inputSchema": {"type": "object"},
                "headers": {"Authorization": "Bearer ${ADVERSARIAL_TOOL_TOKEN}"}, "timeoutMillis": 5000}

    return {"mcp": [
        tool("mcp_by_name", f"https://secure.test:{sidecar}/mcp"), tool("mcp_by_address", f"https://127.0.0.1:{sidecar}/mcp"),
        tool("mcp_untrusted", f"{upstreams.untrusted.url}/mcp"), tool("mcp_wrong_name", f"{upstreams.wrong_name.url}/mcp"),
        tool("mcp_expired", f"{upstreams.expired.url}/mcp"),
    ]}


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory, ca: trustme.CA, upstreams: Upstreams, plain: Upstream, dns: DnsServer,
          forbidden: Listener) -> Iterator[Probe]:
    folder = tmp_path_factory.mktemp("tls")
    ports = [u.port for u in (upstreams.good, upstreams.untrusted, upstreams.wrong_name, upstreams.expired)]
    exact = [f"127.0.0.1:{port}" for port in ports] + [f"secure.test:{upstreams.good.port}"]
    sidecar = mcp_sidecar(ca, forbidden, tmp_path_factory)
    running = start_probe(folder / "data", mcp_tools(next(sidecar), upstreams), SSL_CERT_FILE=str(trusted_bundle(ca, folder)),
                          TOOLSMITH_EGRESS_NAMESERVER=dns.address, TOOLSMITH_EGRESS_ALLOW=", ".join([*exact, plain.allow]),
                          CODESANDBOX_ALLOWED_DOMAINS=", ".join([*exact, "public.test", "evil.test"]))
    yield running
    running.close()
    sidecar.close()


def redirect(upstream: Upstream, to: str) -> str:
    return f"{upstream.url}/redirect?to={quote(to, safe='')}"


@pytest.mark.parametrize("host", ["127.0.0.1", "secure.test"])
def test_an_https_upstream_works_for_an_api_url_tool_and_http_fetch(probe: Probe, upstreams: Upstreams, host: str) -> None:
    url = f"https://{host}:{upstreams.good.port}/v1/weather/Oslo"
    answer = api_tool_call(probe, url)
    assert answer.get("error", "unsaved") is None and answer["output"]["city"] == "Oslo", answer
    output = fetch(probe, url)
    assert output.get("status") == 200 and '"city": "Oslo"' in output["text"], output
    probe.assert_alive()


CERTIFICATES = {
    "untrusted-ca": ("untrusted", "unable to get local issuer certificate"),
    "wrong-name": ("wrong_name", "IP address mismatch"),
    "expired": ("expired", "certificate has expired"),
}


@pytest.mark.parametrize("which", CERTIFICATES, ids=list(CERTIFICATES))
def test_a_bad_certificate_is_refused_with_a_clear_error(probe: Probe, upstreams: Upstreams, which: str) -> None:
    attribute, reason = CERTIFICATES[which]
    upstream: Upstream = getattr(upstreams, attribute)
    seen = len(upstream.seen)
    answer = api_tool_call(probe, f"{upstream.url}/v1/weather/Oslo")
    error = answer.get("error")
    assert error is not None and error["type"] == "connect", answer
    assert "CERTIFICATE_VERIFY_FAILED" in error["message"] and reason in error["message"], error
    output = fetch(probe, f"{upstream.url}/v1/weather/Oslo")
    assert "refused" in output and "CERTIFICATE_VERIFY_FAILED" in output["refused"] and reason in output["refused"], output
    assert len(upstream.seen) == seen, "a request was sent over a connection whose certificate was refused"
    probe.assert_alive()


@pytest.mark.parametrize("name", ["mcp_by_name", "mcp_by_address"])
def test_an_external_mcp_tool_over_https_works(probe: Probe, name: str) -> None:
    answer = probe.send("POST", f"/api/v1/tools/{name}/call", json={"a": 40, "b": 2}, deadline=15)
    assert answer.status_code == 200 and answer.json()["error"] is None and answer.json()["output"] == {"result": 42}, answer.text
    probe.assert_alive()


@pytest.mark.parametrize("name", ["mcp_untrusted", "mcp_wrong_name", "mcp_expired"])
def test_an_external_mcp_tool_with_a_bad_certificate_is_refused_with_a_clear_error(probe: Probe, upstreams: Upstreams, name: str) -> None:
    upstream: Upstream = getattr(upstreams, name.removeprefix("mcp_"))
    reason = next(reason for attribute, reason in CERTIFICATES.values() if attribute == name.removeprefix("mcp_"))
    seen = len(upstream.seen)
    answer = probe.send("POST", f"/api/v1/tools/{name}/call", json={"a": 1, "b": 2}, deadline=15)
    assert answer.status_code == 200, answer.text
    error = answer.json()["error"]
    assert error is not None and "CERTIFICATE_VERIFY_FAILED" in error["message"] and reason in error["message"], error
    assert len(upstream.seen) == seen, "a request was sent over a connection whose certificate was refused"
    probe.assert_alive()


def test_an_api_url_tool_refuses_a_downgrade_to_plain_http_without_an_entry(probe: Probe, upstreams: Upstreams, forbidden: Listener) -> None:
    for target in (f"http://127.0.0.1:{forbidden.port}/", "http://public.test/", f"http://secure.test:{forbidden.port}/"):
        message = api_refusal(api_tool_call(probe, redirect(upstreams.good, target), maxRedirects=3))
        assert message.startswith("http needs an entry in TOOLSMITH_EGRESS_ALLOW"), (target, message)
    assert forbidden.connections == []
    probe.assert_alive()


def test_an_api_url_tool_follows_a_downgrade_to_an_allowed_http_port_without_its_secret_header(probe: Probe, upstreams: Upstreams, plain: Upstream) -> None:
    # the documented rule: `127.0.0.1:<port>` lets http reach that port; the origin changes with
    # the scheme, so the header the tool marked secret stays behind
    secret = "downgrade-key-" + secrets.token_urlsafe(8)
    probe.secrets.append(secret)
    made = probe.send("POST", "/api/v1/admin/secrets", json={"id": "downgrade_key", "value": secret, "description": "probe"})
    assert made.status_code == 201, made.text
    answer = api_tool_call(probe, redirect(upstreams.good, f"{plain.url}/echo"), maxRedirects=3,
                           headers={"X-Api-Key": {"secret": "downgrade_key"}})
    assert answer.get("error", "unsaved") is None and answer["output"]["path"] == "/echo", answer
    assert upstreams.good.last("/redirect").headers.get("x-api-key") == secret  # sent where it was meant for
    assert "x-api-key" not in plain.last("/echo").headers, "the secret header followed the redirect to plain http"
    probe.assert_alive()


@pytest.mark.parametrize("target", ["https://127.0.0.1:{P}/", "https://evil.test:{P}/", "https://[::1]:{P}/", "https://localhost:{P}/",
                                    "http://127.0.0.1:{P}/", "https://169.254.169.254/latest/meta-data/"])
def test_a_redirect_from_an_https_upstream_to_loopback_is_refused(probe: Probe, upstreams: Upstreams, forbidden: Listener, target: str) -> None:
    to = target.replace("{P}", str(forbidden.port))
    message = api_refusal(api_tool_call(probe, redirect(upstreams.good, to), maxRedirects=3))
    assert message.startswith(REFUSALS), message
    output = fetch(probe, redirect(upstreams.good, to))
    assert "refused" in output and output["refused"].startswith(REFUSALS), output
    assert forbidden.connections == []
    probe.assert_alive()


def test_http_fetch_refuses_a_downgrade_to_a_host_and_port_it_does_not_list(probe: Probe, upstreams: Upstreams, forbidden: Listener) -> None:
    output = fetch(probe, redirect(upstreams.good, f"http://127.0.0.1:{forbidden.port}/"))
    assert output.get("refused", "").startswith("domain not allowed"), output
    output = fetch(probe, redirect(upstreams.good, "http://public.test:8080/"))
    assert output.get("refused", "").startswith("domain not allowed"), output
    assert forbidden.connections == []
    probe.assert_alive()


def test_no_secret_in_any_log_line_event_export_or_answer(probe: Probe) -> None:
    probe.assert_no_secret_anywhere()
