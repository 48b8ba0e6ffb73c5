"""`http.fetch` from a module, through the embedded runner's worker processes (docs/javascript.md, docs/sandbox.md): the
allow-list is the sandbox's own setting, the capability profile decides whether `http` exists, and
a request still pending at the call's deadline ends with the call.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from domain.ports import Execution, ExecutionResult, SourceUnit
from sandbox.capabilities import profile
from sandbox.embedded import EmbeddedSandbox
from tests.integration.test_fetch import SLOW_SECONDS, Server, serving


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    yield from serving(Server())


@pytest.fixture(scope="module")
def pool(server: Server) -> Iterator[EmbeddedSandbox]:
    sandbox = EmbeddedSandbox(allowed_domains=f"127.0.0.1:{server.port}", workers=1)
    yield sandbox
    sandbox.close()


def call(pool: EmbeddedSandbox, source: str, **kw: object) -> ExecutionResult:
    return pool.run(Execution(units=(SourceUnit("fetcher", source),), input=kw.pop("input", {}), **kw))  # type: ignore[arg-type]


def test_a_module_fetches_from_an_allowed_host(pool: EmbeddedSandbox, server: Server) -> None:
    source = (
        "exports.run = async function (input) {\n"
        "  const r = await http.fetch(input.url + '/hello');\n"
        "  return [r.status, r.headers['x-test'], r.text];\n"
        "};"
    )
    result = call(pool, source, input={"url": server.url})
    assert result.error is None, result.error
    assert result.output[0] == 200 and result.output[2] == "hello ✓"
    assert "yes" in result.output[1]


def test_a_host_not_allowed_is_a_catchable_error_naming_why(pool: EmbeddedSandbox, server: Server) -> None:
    source = (
        "exports.run = async function () {\n"
        "  try { await http.fetch('http://169.254.169.254/latest/meta-data/'); return 'reached'; }\n"
        "  catch (e) { return e.message; }\n"
        "};"
    )
    result = call(pool, source)
    assert result.error is None, result.error
    assert "metadata" in result.output or "not allowed" in result.output, result.output


def test_a_request_pending_at_the_deadline_ends_with_the_call(pool: EmbeddedSandbox, server: Server) -> None:
    started = time.monotonic()
    result = call(pool, "exports.run = async function (i) { return (await http.fetch(i.url + '/slow')).text; };", input={"url": server.url}, timeout_millis=500)
    assert result.error is not None and result.error.type in ("timeout", "runtime"), result
    assert time.monotonic() - started < SLOW_SECONDS  # with the call, not at the server's answer
    assert call(pool, "exports.run = function () { return 'next'; };").output == "next"


def test_without_the_http_capability_there_is_no_http(pool: EmbeddedSandbox, server: Server) -> None:
    source = "exports.run = function () { return typeof http; };"
    assert call(pool, source).output == "object"
    assert pool.run(Execution(units=(SourceUnit("t", source),), input={}), capabilities=profile("no-network")).output == "undefined"


def test_the_minimal_profile_gives_no_caller_context(pool: EmbeddedSandbox) -> None:
    # every profile has ai.content and ai.result (no host call behind them, docs/sandbox.md); the
    # caller's context is what the minimal profile withholds
    source = "exports.run = function () { return [typeof ai.context, typeof ai.content, typeof log, typeof Intl]; };"
    assert call(pool, source).output == ["function", "object", "function", "object"]
    minimal = pool.run(Execution(units=(SourceUnit("t", source),), input={}), capabilities=profile("minimal"))
    assert minimal.output == ["undefined", "object", "function", "object"]


def test_with_no_allow_list_every_host_is_refused(server: Server) -> None:
    closed = EmbeddedSandbox(workers=1)
    try:
        source = "exports.run = async function (i) { try { await http.fetch(i.url + '/hello'); return 'reached'; } catch (e) { return e.message; } };"
        result = closed.run(Execution(units=(SourceUnit("t", source),), input={"url": server.url}))
        assert result.output != "reached" and "not allowed" in result.output, result
    finally:
        closed.close()
