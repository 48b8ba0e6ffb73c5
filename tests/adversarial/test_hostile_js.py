"""Hostile JavaScript through the real service (issue 12, family 1): `POST /test` and REST tool
calls into the embedded sandbox of a `toolsmith serve`.

Each case gets its expected outcome (a typed error or the correct value: `hostile_js.py`), never a
500, never an answer past the call's deadline, and the service still runs a plain call afterwards.
A local listener on 127.0.0.1, which no allow-list names, records every connection: whatever the
JavaScript does to the environment, nothing ever connects to it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import CODE_MODULES, SECRET_ENV, Listener, Probe, descendants, nested, start_probe
from tests.adversarial.hostile_js import CASES, TYPED


def check_outcome(answer: dict[str, Any], expect: tuple[str, Any]) -> None:
    kind, want = expect
    output, error, logs = answer["output"], answer["error"], answer["logs"]
    if error is not None:
        assert error["type"] in TYPED, f"untyped error: {error}"
    if kind == "value":
        assert error is None and output == want, answer
    elif kind == "exact":
        assert error is None and output == want and _types(output) == _types(want), f"not the exact JSON of the JavaScript value: {output!r}"
    elif kind == "depth":
        assert error is None and output == nested(want), f"error: {error}"
    elif kind == "error":
        assert error is not None and error["type"] in want, answer
    elif kind == "error-message":
        assert error is not None and error["type"] == want[0] and want[1] in error["message"], answer
    elif kind == "error-message-not":
        assert error is not None and error["type"] == want[0] and want[1] not in error["message"], answer
    elif kind == "value-or-unreachable":
        assert (error is None and output == want) or _unreachable(error), answer
    elif kind == "value-or":
        value, types = want
        assert (error is None and output == value) or (error is not None and error["type"] in types), answer
    elif kind == "one-of":
        assert error is not None or output in want, answer
    elif kind == "not-value":
        assert error is not None or output not in want, answer
    elif kind == "string-length":
        assert error is None and isinstance(output, str) and len(output) == want, (error, len(output or ""))
    elif kind == "array-length":
        assert error is None and isinstance(output, list) and len(output) == want, error
    elif kind == "logs":
        assert error is None and logs == want, answer
    elif kind == "logs-short":
        assert error is None and output == "logged" and all(len(line) <= want for line in logs), (error, [len(line) for line in logs])
    elif kind == "logs-any":
        assert error is None and output == 1, answer
    else:
        assert kind == "typed", kind


def _unreachable(error: dict[str, str] | None) -> bool:
    """The harness hides its host function from the program (a design that leaves nothing to misuse)."""
    return error is not None and error["type"] == "runtime" and "$host is not defined" in error["message"]


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value).__name__


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_hostile_javascript_gets_its_expected_outcome_and_the_service_keeps_serving(probe: Probe, listener: Listener, case: dict[str, Any]) -> None:
    source = case["source"].replace("{LISTENER}", f"http://127.0.0.1:{listener.port}/")
    answer = probe.test_call(source, input=case["input"], timeout_millis=case["timeout_millis"], memory_mb=case["memory_mb"])
    assert answer.status_code == 200, answer.text[:500]
    check_outcome(answer.json(), case["expect"])
    assert listener.connections == [], "the sandbox connected to a listener nobody allowed"
    probe.assert_alive()


# -- arguments in: through POST /test and through a published tool ----------------------------------

ECHO = {
    "id": "echo",
    "description": "gives back what it is given",
    "draftContent": "exports.run = function (input) { return input; };",
    "tool": {
        "inputParameters": [
            {"name": "value", "description": "anything", "type": "object"},
            {"name": "text", "description": "a text", "type": "string"},
        ],
        "timeoutMillis": 2000,
    },
}


@pytest.fixture(scope="module")
def echo(probe: Probe) -> str:
    assert probe.send("POST", CODE_MODULES, json=ECHO).status_code == 201
    assert probe.send("POST", f"{CODE_MODULES}/echo/publish").status_code == 200
    return "/api/v1/tools/echo/call"


def _object(depth: int) -> dict[str, Any]:
    value: Any = 1
    for _ in range(depth - 1):
        value = {"k": value}
    return {"k": value}


def _deep_text(depth: int) -> str:
    """`{"value": {"k": {"k": … 1}}}` with `depth` objects under "value", written without recursion."""
    return '{"value": ' + '{"k": ' * depth + "1" + "}" * depth + "}"


# JSON texts (escaped ASCII): Python's own encoder cannot write the deepest of them
ARGUMENTS_REFUSED = {
    **{f"value-depth-{depth}": _deep_text(depth) for depth in (255, 300, 1000, 10000)},
    "text-lone-surrogate": json.dumps({"text": "a\ud800"}),
    "value-lone-surrogate-key": json.dumps({"value": {"\udc00": 1}}),
    "value-lone-surrogate-nested": json.dumps({"value": {"a": ["ok", "\ud800"]}}),
    "argument-key-lone-surrogate": json.dumps({"\ud800": 1}),
}
ARGUMENTS_ECHOED = {
    "value-depth-50": {"value": _object(50)},
    "text-nul": {"text": "a\u0000b"},
    "value-nul-key": {"value": {"k\u0000": "\u0000"}},
    "text-1mb": {"text": "é" * (256 * 1024)},  # 1.5 MB as JSON escapes, under the 2 MiB body cap
    "value-big-int": {"value": {"n": 2**40}},
}


@pytest.mark.parametrize("arguments", ARGUMENTS_REFUSED.values(), ids=ARGUMENTS_REFUSED.keys())
@pytest.mark.parametrize("path", ["tool-call", "test"])
def test_arguments_too_deep_or_with_lone_surrogates_are_a_400(probe: Probe, echo: str, path: str, arguments: str) -> None:
    if path == "tool-call":
        body = arguments
        answer = probe.send("POST", echo, content=body.encode(), headers={"Content-Type": "application/json"})
    else:
        body = json.dumps({"draftContent": ECHO["draftContent"], "tool": ECHO["tool"]})[:-1] + ', "input": ' + arguments + "}"
        answer = probe.send("POST", f"{CODE_MODULES}/test", content=body.encode(), headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text[:500]
    probe.assert_alive()


@pytest.mark.parametrize("arguments", ARGUMENTS_ECHOED.values(), ids=ARGUMENTS_ECHOED.keys())
@pytest.mark.parametrize("path", ["tool-call", "test"])
def test_arguments_within_the_limits_come_back_exactly(probe: Probe, echo: str, path: str, arguments: dict[str, Any]) -> None:
    if path == "tool-call":
        answer = probe.send("POST", echo, json=arguments)
    else:
        answer = probe.send("POST", f"{CODE_MODULES}/test", json={"draftContent": ECHO["draftContent"], "tool": ECHO["tool"], "input": arguments})
    assert answer.status_code == 200, answer.text[:500]
    assert answer.json()["error"] is None and answer.json()["output"] == arguments
    assert _types(answer.json()["output"]) == _types(arguments)
    probe.assert_alive()


# -- finding 1: a worker's memory is bounded by the call's limit -------------------------------------

ALLOWANCE_MB = 256  # what a worker may hold besides the call's own heap (its interpreter, Babel, httpx)


def _peak_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


PAYLOADS = {
    # ten million empty objects as 30 MB of JSON: what the host parses (Intl, http.fetch requests)
    "i": "('[' + '{},'.repeat(10 * 1024 * 1024) + '{}]').toWellFormed()",
    "f": "('[' + '{},'.repeat(10 * 1024 * 1024) + '{}]').toWellFormed()",
    # a 30 MB string the host is handed (a log line)
    "l": "'x'.repeat(30 * 1024 * 1024)",
}


@pytest.mark.parametrize("kind", PAYLOADS)
def test_a_worker_stays_within_the_calls_memory_limit_plus_an_allowance(probe: Probe, kind: str) -> None:
    assert probe.server.process is not None
    peaks: dict[int, int] = {}
    done = threading.Event()
    for pid in descendants(probe.server.process.pid):  # each worker's peak counts from now
        Path(f"/proc/{pid}/clear_refs").write_text("5")

    def sample() -> None:
        while not done.is_set():
            for pid in descendants(probe.server.process.pid):  # type: ignore[union-attr]
                peaks[pid] = max(peaks.get(pid, 0), _peak_kb(pid))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    source = "exports.run = function () { log; return typeof $host('%s', %s); };" % (kind, PAYLOADS[kind])
    try:
        answer = probe.test_call(source, timeout_millis=5000, memory_mb=64)
    finally:
        done.set()
        sampler.join()
    assert answer.status_code == 200
    error = answer.json()["error"]
    assert error is None or error["type"] == "memory" or _unreachable(error), error
    worst = max(peaks.values(), default=0) // 1024
    assert worst <= 64 + ALLOWANCE_MB, f"a worker reached {worst} MB for a call limited to 64 MB"
    probe.assert_alive()


# -- finding 5: the workers' environment holds no secret and no way to the data dir ------------------


def test_the_workers_have_no_secret_in_their_environment_and_no_data_dir(probe: Probe) -> None:
    assert probe.server.process is not None
    probe.assert_alive()  # the pool is up
    workers = descendants(probe.server.process.pid)
    assert workers, "no worker process found"
    data_dir = str(probe.server.data_dir.resolve())
    for pid in workers:
        environ = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
        for name, secret in SECRET_ENV.items():
            assert secret not in environ, f"worker {pid} has {name} in its environment"
        assert data_dir not in environ, f"worker {pid}'s environment names the data dir"
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            assert not target.startswith(data_dir), f"worker {pid} holds {target} open (fd {fd.name})"
        assert not os.readlink(f"/proc/{pid}/cwd").startswith(data_dir), f"worker {pid} works in the data dir"


# -- finding 4: a profile removes the capability itself, not only its name ----------------------------


@pytest.fixture(scope="module")
def minimal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probe]:
    running = start_probe(tmp_path_factory.mktemp("minimal") / "data", CODESANDBOX_CAPABILITY_PROFILE="minimal")
    yield running
    running.close()


WITHHELD = {
    "context-direct": "log; var r = $host('c'); return typeof r === 'string' && r.indexOf('admin') >= 0 ? 'context read' : 'withheld';",
    "context-via-global": "log; var h = globalThis['$ho' + 'st']; var r = h && h('c'); return typeof r === 'string' && r.indexOf('tenant') >= 0 ? 'context read' : 'withheld';",
    "context-via-intl-host": "var h; try { Intl; h = $host; } catch (e) { return 'withheld'; } var r = h('c'); return typeof r === 'string' && r.indexOf('tenant') >= 0 ? 'context read' : 'withheld';",
    # ai itself stays (ai.content and ai.result need no host call, docs/sandbox.md); its context does not
    "ai-name": "return typeof ai === 'undefined' || typeof ai.context === 'undefined' ? 'withheld' : 'context read';",
    "ai-context-call": "try { var c = ai.context(); return c && c.tenant ? 'context read' : 'withheld'; } catch (e) { return 'withheld'; }",
    "fetch-direct": "log; var r = $host('f', JSON.stringify({url: 'http://127.0.0.1:9/'})); return r.indexOf('not available') >= 0 ? 'withheld' : 'fetch reached';",
}


@pytest.mark.parametrize("body", WITHHELD.values(), ids=WITHHELD.keys())
def test_the_minimal_profile_withholds_the_capability_itself(minimal: Probe, body: str) -> None:
    answer = minimal.test_call("exports.run = function () { " + body + " };")
    assert answer.status_code == 200
    result = answer.json()
    assert result["output"] == "withheld" or (result["error"] is not None and result["error"]["type"] in TYPED), result
    minimal.assert_alive()


# -- the same values over MCP: a tool result or a tool error, never a protocol error (finding 2) -------

MCP_TOOLS = {
    "deep300": ("var v = 1; for (var i = 0; i < 300; i++) v = [v]; return v;", ("error", "result")),
    "deep1000": ("var v = 1; for (var i = 0; i < 1000; i++) v = {k: v}; return v;", ("error", "result")),
    "nul": ("return 'a\\u0000b';", ("text", "a\u0000b")),
    "bigint": ("return 2 ** 31;", ("text", "2147483648")),
    "lonekey": ("var o = {}; o['\\ud800'] = 1; return o;", ("value-or-result", {"\ufffd": 1})),
    # 150 levels: beyond the service's limit (100), within what the SDK's client serializes. The body
    # is refused at the HTTP edge (400) before JSON-RPC reads it, as every body is; the session lives on.
    "echoarg": ("return input;", ("refused-for", {"value": _object(150)})),
}


@pytest.fixture(scope="module")
def mcp_tools(probe: Probe) -> list[str]:
    for name, (body, _) in MCP_TOOLS.items():
        params = [{"name": "value", "description": "anything", "type": "object"}] if name == "echoarg" else []
        module = {"id": name, "description": name, "draftContent": "exports.run = function (input) { " + body + " };", "tool": {"exposeInChat": True, "inputParameters": params}}
        assert probe.send("POST", CODE_MODULES, json=module).status_code == 201
        assert probe.send("POST", f"{CODE_MODULES}/{name}/publish").status_code == 200
    return list(MCP_TOOLS)


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(MCP_TOOLS))
async def test_hostile_values_over_mcp_are_tool_results_never_protocol_errors(probe: Probe, mcp_tools: list[str], name: str) -> None:
    from tests.e2e.conftest import mcp_client
    from tests.e2e.test_mcp import text_of

    _, (kind, want) = MCP_TOOLS[name]
    async with mcp_client(probe.server) as client:
        arguments = want if kind in ("error-for", "refused-for") else {}
        if kind == "refused-for":
            with pytest.raises(Exception) as refused:
                await client.call_tool(name, arguments)
            assert "body-too-deep" in str(refused.value) and "100" in str(refused.value), str(refused.value)[:300]
            assert not (await client.call_tool("bigint", {})).is_error
            probe.assert_alive()
            return
        result = await client.call_tool(name, arguments)  # a protocol error raises here
        text = text_of(result)
        if kind == "error":
            assert result.is_error and text.startswith(f"{want}:"), text[:300]
        elif kind == "error-for":
            assert result.is_error, text[:300]
        elif kind == "text":
            assert not result.is_error and text == want, text[:300]
        else:
            assert (result.is_error and text.startswith("result:")) or result.structured_content == want, text[:300]
        # the session still works
        assert not (await client.call_tool("bigint", {})).is_error
    probe.assert_alive()


# -- finding 9: the publish check runs a module as a call does ------------------------------------------

TELLS = {
    "check-function": "typeof $check === 'function'",
    "result-helper": "typeof $s === 'function'",
    "error-helper": "'$e' in globalThis",
    "script-helper-absent": "typeof $script === 'undefined' && typeof $check !== 'undefined'",
}


@pytest.mark.parametrize("tell", TELLS.values(), ids=TELLS.keys())
def test_a_module_cannot_tell_the_publish_check_from_a_call(probe: Probe, tell: str) -> None:
    # passes the check, then fails every call (the issue's case: a memory error) if it can tell them apart
    name = f"tell_{abs(hash(tell)) % 10**8}"
    source = f"if (!({tell})) {{ var hog = []; for (;;) hog.push('x'.repeat(1 << 20)); }}\nexports.run = function () {{ return 'called'; }};"
    assert probe.send("POST", CODE_MODULES, json={"id": name, "description": "tells", "draftContent": source, "tool": {"memoryLimitMb": 16}}).status_code == 201
    published = probe.send("POST", f"{CODE_MODULES}/{name}/publish")
    assert published.status_code in (200, 422), published.text[:300]
    if published.status_code == 200:
        called = probe.send("POST", f"/api/v1/tools/{name}/call", json={})
        assert called.status_code == 200 and called.json()["error"] is None and called.json()["output"] == "called", f"published, then the call fails: {called.text[:300]}"
    probe.assert_alive()


def test_no_secret_in_any_log_line_event_export_or_answer(probe: Probe) -> None:
    probe.assert_no_secret_anywhere()
