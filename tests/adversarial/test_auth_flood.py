"""A flood of wrong tokens from one address (issue 28, finding 7): a guesser at a real `toolsmith
serve` gets 401 for its first `TOOLSMITH_AUTH_FAILURES_PER_MINUTE` wrong tokens, then 429
`too-many-failed-authentications` with `Retry-After` for every request (its REST, MCP and console
sign-in; a correct token's too; an X-Forwarded-For of its own choosing changes nothing), while the
service keeps serving every other address, and nothing the guesser sent is logged or stored.

The guesser is the probe, on 127.0.0.1: the one address whose X-Forwarded-For uvicorn would trust by
default (the service turns that off unless `TOOLSMITH_TRUSTED_PROXIES` says); its neighbour connects
from 127.0.0.4 (Linux routes all of 127/8 to lo)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.adversarial.conftest import ADMIN_TOKEN, CODE_MODULES, Probe, start_probe

FAILURES_PER_MINUTE = 10
MCP = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probe]:
    running = start_probe(tmp_path_factory.mktemp("auth-flood") / "data",
                          TOOLSMITH_AUTH_FAILURES_PER_MINUTE=str(FAILURES_PER_MINUTE))
    yield running
    running.close()


def from_address(probe: Probe, address: str) -> Probe:
    """A probe of the same server whose connections come from `address`."""
    other = Probe(probe.server, secrets=probe.secrets)
    other.http.close()
    other.http = httpx.Client(base_url=probe.server.url, timeout=60, transport=httpx.HTTPTransport(local_address=address))
    return other


def test_a_flood_of_wrong_tokens_is_429_after_the_limit_and_others_are_served(probe: Probe) -> None:
    guesser, neighbour = probe, from_address(probe, "127.0.0.4")
    guesses = [f"tsk_{secrets.token_urlsafe(24)}" for _ in range(120)]
    probe.secrets.extend(guesses[:5])  # what a guesser sent is never logged or stored either
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda guess: guesser.send("GET", CODE_MODULES, token=guess), guesses))
    statuses = [a.status_code for a in answers]
    assert set(statuses) == {401, 429}, statuses
    # The limit, and perhaps one more that came back while the flood went on.
    assert FAILURES_PER_MINUTE <= statuses.count(401) <= FAILURES_PER_MINUTE + 1, statuses
    refused = next(a for a in answers if a.status_code == 429)
    assert refused.json()["code"] == "too-many-failed-authentications"
    assert "TOOLSMITH_AUTH_FAILURES_PER_MINUTE" in refused.json()["detail"]
    assert 1 <= int(refused.headers["Retry-After"]) <= 60 // FAILURES_PER_MINUTE

    # Every request from the address now, a correct token's too, whatever header it claims to come through.
    assert guesser.send("GET", CODE_MODULES).status_code == 429
    assert guesser.send("GET", CODE_MODULES, headers={"X-Forwarded-For": "192.0.2.55"}).status_code == 429
    assert guesser.send("POST", "/mcp", headers={**MCP, "Host": f"127.0.0.1:{probe.server.port}"}, json=PING).status_code == 429
    signed = guesser.http.post("/console/sign-in", data={"token": ADMIN_TOKEN}, headers={"Origin": probe.server.url})
    assert signed.status_code == 429 and "Too many tokens that are not valid" in signed.text

    # Another address is unaffected: its correct token works, its wrong one is a 401 of its own.
    assert neighbour.send("GET", CODE_MODULES).status_code == 200
    assert neighbour.send("GET", CODE_MODULES, token="tsk_not-a-token").status_code == 401
    neighbour.assert_alive()

    # Once a failure is back, the guesser's correct token works again.
    time.sleep(int(refused.headers["Retry-After"]) + 0.5)
    assert guesser.send("GET", CODE_MODULES).status_code == 200
    probe.assert_no_secret_anywhere()


@pytest.fixture(scope="module")
def behind_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probe]:
    """A server behind a reverse proxy on 127.0.0.1, the one address whose X-Forwarded-For it trusts."""
    running = start_probe(tmp_path_factory.mktemp("auth-flood-proxy") / "data", TOOLSMITH_AUTH_FAILURES_PER_MINUTE="3",
                          TOOLSMITH_TRUSTED_PROXIES="127.0.0.1")
    yield running
    running.close()


def test_behind_a_trusted_proxy_each_forwarded_client_is_counted_apart(behind_proxy: Probe) -> None:
    proxy, stranger = behind_proxy, from_address(behind_proxy, "127.0.0.5")
    guesser, colleague = {"X-Forwarded-For": "192.0.2.10"}, {"X-Forwarded-For": "192.0.2.11"}
    statuses = [proxy.send("GET", CODE_MODULES, token=f"tsk_wrong-{i}", headers=guesser).status_code for i in range(4)]
    assert statuses == [401, 401, 401, 429]
    assert proxy.send("GET", CODE_MODULES, headers=guesser).status_code == 429
    # Another client behind the same proxy, and the proxy's own requests, are other addresses.
    assert proxy.send("GET", CODE_MODULES, headers=colleague).status_code == 200
    assert proxy.send("GET", CODE_MODULES).status_code == 200
    # An address that is not a trusted proxy cannot borrow a forwarded client's standing, nor shed its own.
    stranger_statuses = [stranger.send("GET", CODE_MODULES, token=f"tsk_wrong-{i}", headers=colleague).status_code for i in range(4)]
    assert stranger_statuses == [401, 401, 401, 429]
    assert stranger.send("GET", CODE_MODULES, headers={"X-Forwarded-For": "192.0.2.99"}).status_code == 429
    assert proxy.send("GET", CODE_MODULES, headers=colleague).status_code == 200
    behind_proxy.assert_alive()
