"""Issue 12, the sandbox's side, held to every backend (embedded, and remote through `toolsmith sandbox`):
exact JSON results, deep results, typed errors for what the engine or the binding cannot report,
capability profiles that remove the capability itself, host payload caps, and a publish check that
module code cannot tell from a call. The second half holds what only the service has: its answers
to deep bodies and lone surrogates, and `RemoteSandbox` reading a deep answer.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from domain.ports import Execution, ExecutionResult, Sandbox, SourceUnit
from domain.values import MAX_DEPTH
from sandbox.capabilities import profile
from sandbox.remote import RemoteSandbox
from tests.sandbox_service import SECRET, SandboxService

MINIMAL = profile("minimal")


def tool(content: str) -> SourceUnit:
    return SourceUnit("tool", content)


def run(sandbox: Sandbox, content: str, **call: Any) -> ExecutionResult:
    call.setdefault("input", {})
    capabilities = call.pop("capabilities", None)
    return sandbox.run(Execution(units=(tool(content),), **call), capabilities=capabilities)


def returns(sandbox: Sandbox, expression: str, **call: Any) -> ExecutionResult:
    return run(sandbox, f"exports.run = function (input) {{ return {expression}; }};", **call)


def script(sandbox: Sandbox, content: str) -> ExecutionResult:
    return sandbox.run(Execution(units=(tool(content),), input={}, style="script"))


def output_of(result: ExecutionResult) -> Any:
    assert result.error is None, result.error
    return result.output


# -- results are exact JSON of the JavaScript value (finding 7) ----------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("'a\\u0000b'", "a\x00b"),
        ("2**31", 2147483648),
        ("2**53", 9007199254740992),
        ("-(2**40)", -(2**40)),
        ("1.5", 1.5),
        ("0.1 + 0.2", 0.30000000000000004),
        ("NaN", None),
        ("-Infinity", None),
        ("-0", 0),
        ("undefined", None),
        ("[2**31, 'x\\u0000y', {n: 2**32}]", [2147483648, "x\x00y", {"n": 4294967296}]),
    ],
)
def test_a_result_is_exact_json_of_the_javascript_value(sandbox: Sandbox, expression: str, expected: Any) -> None:
    output = output_of(returns(sandbox, expression))
    assert output == expected and type(output) is type(expected)


def test_whole_numbers_stay_integers_from_an_async_run_and_in_script_style(sandbox: Sandbox) -> None:
    assert output_of(run(sandbox, "exports.run = async function () { return 2**31; };")) == 2147483648
    assert type(output_of(run(sandbox, "exports.run = async function () { return 2**31; };"))) is int
    assert output_of(script(sandbox, "2**31")) == 2147483648
    assert type(output_of(script(sandbox, "2**31"))) is int
    assert output_of(script(sandbox, "'a\\u0000b'")) == "a\x00b"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("'a\\ud800b'", "a\ufffdb"),
        ("'\\udc00'", "\ufffd"),
        ("['\\ud800', {k: '\\udfff'}]", ["\ufffd", {"k": "\ufffd"}]),
        ("({'\\ud800key': 1})", {"\ufffdkey": 1}),
        ("'\\ud83d\\ude00 paired'", "\U0001f600 paired"),
    ],
)
def test_lone_surrogates_in_a_result_become_replacement_characters(sandbox: Sandbox, expression: str, expected: Any) -> None:
    assert output_of(returns(sandbox, expression)) == expected
    assert output_of(script(sandbox, expression)) == expected


def test_a_lone_surrogate_in_the_input_comes_back_replaced(sandbox: Sandbox) -> None:
    result = run(sandbox, "exports.run = function (input) { return input; };", input={"\ud800k": "v\udc00"})
    assert output_of(result) == {"\ufffdk": "v\ufffd"}


# -- a NUL in a log line or a thrown message crosses whole (finding 7) -----------------------------------------


def test_a_nul_in_a_log_line_comes_back_in_the_logs(sandbox: Sandbox) -> None:
    result = run(sandbox, "exports.run = function () { log('a\\u0000b'); log({k: '\\u0000'}); log('\\u0000'.repeat(600)); log('a\\ud800'); return 1; };")
    assert output_of(result) == 1
    assert list(result.logs) == ["a\x00b", '{"k":"\\u0000"}', "\x00" * 500, "a\ufffd"]
    logged = script(sandbox, "log('a\\u0000b'); 1")
    assert output_of(logged) == 1 and list(logged.logs) == ["a\x00b"]


@pytest.mark.parametrize("how", ["sync", "async"])
def test_a_nul_in_a_thrown_message_comes_back_whole(sandbox: Sandbox, how: str) -> None:
    source = {
        "sync": "exports.run = function () { throw new Error('a\\u0000b'); };",
        "async": "exports.run = async function () { throw new Error('a\\u0000b'); };",
    }[how]
    result = run(sandbox, source)
    assert result.error is not None and result.error.type == "runtime", result
    assert result.error.message == "Error: a\x00b"
    assert run(sandbox, source.replace("new Error('a\\u0000b')", "'x\\u0000y'")).error.message == "x\x00y"  # type: ignore[union-attr]
    assert run(sandbox, source.replace("'a\\u0000b'", "'a\\ud800\\u0000b'")).error.message == "Error: a\ufffd\x00b"  # type: ignore[union-attr]
    failed = script(sandbox, "throw new Error('a\\u0000b')")
    assert failed.error is not None and (failed.error.type, failed.error.message) == ("runtime", "Error: a\x00b")


def test_errors_thrown_from_run_keep_their_types_beside_a_nul(sandbox: Sandbox) -> None:
    syntax = run(sandbox, "exports.run = function () { return JSON.parse('{'); };").error
    assert syntax is not None and syntax.type == "syntax" and syntax.message.startswith("SyntaxError: ")
    stack = run(sandbox, "exports.run = function () { function f(s) { return f(s + '\\u0000'); } return f(''); };").error
    assert stack is not None and stack.type == "stack", stack
    memory = run(sandbox, "exports.run = function () { return '\\u0000'.repeat(64 * 1024 * 1024).length; };", memory_limit_mb=16).error
    assert memory is not None and memory.type == "memory", memory


# -- deep results (findings 2, 3: the result side) -------------------------------------------------------


def nested(depth: int) -> str:
    return f"(function () {{ var a = 1; for (var i = 0; i < {depth}; i++) a = [a]; return a; }})()"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 255, 300, 1_000, 100_000])
def test_a_result_nested_deeper_than_the_limit_is_a_result_error(sandbox: Sandbox, depth: int) -> None:
    result = returns(sandbox, nested(depth))
    assert result.error is not None and result.error.type == "result", result
    assert "nested" in result.error.message
    assert output_of(returns(sandbox, "1 + 1")) == 2


def test_a_result_nested_to_the_limit_comes_back_whole(sandbox: Sandbox) -> None:
    output = output_of(returns(sandbox, nested(MAX_DEPTH)))
    depth = 0
    while isinstance(output, list):
        output, depth = output[0], depth + 1
    assert (depth, output) == (MAX_DEPTH, 1)


def test_a_deep_result_from_script_style_is_a_result_error(sandbox: Sandbox) -> None:
    result = script(sandbox, "var a = 1; for (var i = 0; i < 300; i++) a = [a]; a")
    assert result.error is not None and result.error.type == "result", result


# -- typed errors (finding 12) ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "exports.run = function () { return 'x'.repeat(2 * 1024 * 1024).normalize('NFC').length; };",
        "exports.run = async function () { return 'x'.repeat(2 * 1024 * 1024).normalize('NFD').length; };",
        "exports.run = function () { try { 'x'.repeat(2 * 1024 * 1024).normalize(); } catch (e) { throw e; } };",
        "exports.run = function () { var k = 'nor' + 'malize'; return 'x'.repeat(2 * 1024 * 1024)[k]().length; };",
    ],
)
def test_out_of_memory_inside_normalize_is_a_memory_error(sandbox: Sandbox, source: str) -> None:
    result = run(sandbox, source, memory_limit_mb=16)
    assert result.error is not None and result.error.type == "memory", result
    assert output_of(returns(sandbox, "'é'.normalize('NFD').length")) == 2


def test_a_caught_normalize_out_of_memory_is_an_ordinary_error_value(sandbox: Sandbox) -> None:
    source = "exports.run = function () { try { 'x'.repeat(2 * 1024 * 1024).normalize(); } catch (e) { return [e instanceof Error, String(e)]; } };"
    assert output_of(run(sandbox, source, memory_limit_mb=16)) == [True, "InternalError: out of memory"]


@pytest.mark.parametrize(
    "thrown",
    [
        "new Proxy({}, {get() { throw 1; }})",
        "new Proxy(new Error('x'), {get(t, k) { if (k === 'name' || k === 'message') throw 1; return t[k]; }})",
        "(function () { var r = Proxy.revocable({}, {}); r.revoke(); return r.proxy; })()",
        "{toString() { throw 1; }}",
        "Object.create(null)",
    ],
)
@pytest.mark.parametrize("how", ["sync", "async", "at load"])
def test_a_thrown_value_that_cannot_be_read_is_a_runtime_error_saying_so(sandbox: Sandbox, thrown: str, how: str) -> None:
    source = {
        "sync": f"exports.run = function () {{ throw {thrown}; }};",
        "async": f"exports.run = async function () {{ throw {thrown}; }};",
        "at load": f"throw {thrown};\nexports.run = function () {{ return 1; }};",
    }[how]
    result = run(sandbox, source)
    assert result.error is not None and result.error.type == "runtime", result
    assert "cannot be read as an error" in result.error.message
    assert "Concurrency" not in result.error.message
    assert output_of(returns(sandbox, "1 + 1")) == 2


@pytest.mark.parametrize("how", ["sync", "async", "at load"])
def test_an_error_message_with_a_lone_surrogate_is_a_runtime_error(sandbox: Sandbox, how: str) -> None:
    source = {
        "sync": "exports.run = function () { throw new Error('a\\ud800b'); };",
        "async": "exports.run = async function () { throw new Error('a\\ud800b'); };",
        "at load": "throw new Error('a\\ud800b');\nexports.run = function () { return 1; };",
    }[how]
    result = run(sandbox, source)
    assert result.error is not None and result.error.type == "runtime", result
    assert result.error.message.startswith("Error: a\ufffd") and result.error.message.endswith("b")


def test_an_error_message_with_a_lone_surrogate_from_script_style_is_well_formed(sandbox: Sandbox) -> None:
    result = script(sandbox, "throw new Error('a\\ud800b')")
    assert result.error is not None and result.error.type == "runtime", result
    assert result.error.message == "Error: a\ufffdb"


# -- capability profiles remove the capability itself (finding 4) -------------------------------------------


def test_module_code_never_reaches_the_host_function(sandbox: Sandbox) -> None:
    source = (
        "exports.run = function () { log('x'); var n = 'host';"
        " return [typeof $host, typeof globalThis['$' + n], Object.getOwnPropertyNames(globalThis).filter(function (k) { return k.indexOf(n) >= 0; })]; };"
    )
    assert output_of(run(sandbox, source)) == ["undefined", "undefined", []]


@pytest.mark.parametrize("kind", ["c", "l", "i", "f", "s"])
def test_a_direct_host_call_fails_in_every_profile(sandbox: Sandbox, kind: str) -> None:
    for capabilities in (None, MINIMAL):
        # `log` and `ai` are named, so the harness sets up the host function for this program
        source = f"exports.run = function () {{ log('named'); var a = typeof ai; return $host('{kind}', 'intl'); }};"
        result = run(sandbox, source, capabilities=capabilities)
        assert result.error is not None and result.error.type == "runtime", result
        assert "$host is not defined" in result.error.message


def test_the_minimal_profile_gives_no_context_and_no_http(sandbox: Sandbox) -> None:
    # `ai` is there with its content helpers alone (they need no host call): `ai.context` is not
    source = ("exports.run = function () { return [typeof ai.context, typeof http, Object.keys(globalThis.ai).join(), typeof log,"
              " typeof Intl]; };")
    assert output_of(run(sandbox, source, capabilities=MINIMAL, context={"userId": "u1"})) == [
        "undefined", "undefined", "content,result", "function", "object"]
    assert output_of(run(sandbox, "exports.run = function () { return ai.context().userId; };", context={"userId": "u1"})) == "u1"


# -- host payloads are capped before they cross (finding 1) ----------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        "new Intl.NumberFormat('en', {style: 'currency', currency: s}).format(1)",
        "new Intl.DateTimeFormat('en', {timeZone: s}).format(0)",
    ],
)
def test_a_huge_host_payload_is_refused_inside_the_engine(sandbox: Sandbox, call: str) -> None:
    source = f"exports.run = function () {{ var s = 'x'.repeat(30 * 1024 * 1024); return {call}; }};"
    result = run(sandbox, source, memory_limit_mb=128, timeout_millis=10_000)
    assert result.error is not None and result.error.type == "runtime", result
    assert "RangeError: the sandbox refuses a host call payload longer than" in result.error.message
    assert output_of(returns(sandbox, "new Intl.NumberFormat('en-US').format(1234.5)")) == "1,234.5"


def test_a_huge_log_line_is_cut_before_it_crosses(sandbox: Sandbox) -> None:
    source = "exports.run = function () { log('x'.repeat(30 * 1024 * 1024)); return 1; };"
    result = run(sandbox, source, memory_limit_mb=128, timeout_millis=10_000)
    assert output_of(result) == 1
    assert [len(line) for line in result.logs] == [500]


# -- the publish check runs the modules as a call does (finding 9) ----------------------------------------------


FINGERPRINT = (
    "var names = Object.getOwnPropertyNames(globalThis).sort().join(',');"
    "var stack = new Error('probe').stack;"
    "throw new Error(JSON.stringify([typeof $check, typeof $e, typeof $s, typeof $v, names, stack]));\n"
)


@pytest.mark.parametrize("named", ["", "log('x'); ai; Intl; http; Proxy; 'a'.normalize();"])
def test_module_code_sees_the_same_environment_in_a_check_and_in_a_call(sandbox: Sandbox, named: str) -> None:
    library = SourceUnit("lib", f"function unused() {{ {named} }}\n{FINGERPRINT}")
    target = SourceUnit("tool", "exports.run = function () { return lib; };", ("lib",))
    execution = Execution(units=(library, target), input={}, is_tool=True)
    checked, called = sandbox.check(execution), sandbox.run(execution)
    assert checked.error is not None and called.error is not None
    assert checked.error == called.error
    assert '"undefined","undefined","undefined","undefined"' in checked.error.message


def test_a_module_that_misbehaves_only_in_calls_fails_its_check(sandbox: Sandbox) -> None:
    sly = tool(
        "if (typeof $check === 'undefined' && typeof $e === 'undefined') { var hog = []; while (true) hog.push('x'.repeat(1024 * 1024)); }\n"
        "exports.run = function () { return 1; };"
    )
    execution = Execution(units=(sly,), input={}, is_tool=True, memory_limit_mb=16)
    checked = sandbox.check(execution)
    assert checked.error is not None and checked.error.type == "memory", checked
    assert sandbox.run(execution).error == checked.error


def test_the_check_still_finds_missing_links_and_a_missing_run(sandbox: Sandbox) -> None:
    dates = SourceUnit("dates", "exports.year = function (d) { return d.slice(0, 4); };")
    report = SourceUnit("report", "exports.run = function (i) { return dates.year(i.d) + dates.month(i.d) + dates.day; };", ("dates",))
    result = sandbox.check(Execution(units=(dates, report), is_tool=True))
    assert result.error is not None and result.error.type == "link"
    assert result.error.message == "LinkError: uses dates.month, which dates does not export; uses dates.day, which dates does not export"
    no_run = sandbox.check(Execution(units=(tool("exports.go = 1;"),), is_tool=True))
    assert no_run.error is not None and no_run.error.type == "link" and "exports.run" in no_run.error.message
    library = sandbox.check(Execution(units=(tool("exports.go = 1;"),), is_tool=False))
    assert library.error is None and library.output is True


# -- the service (`toolsmith sandbox`) and its client -------------------------------------------------------------


def post(service: SandboxService, body: bytes | str) -> httpx.Response:
    content = body.encode() if isinstance(body, str) else body
    headers = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}
    return httpx.post(f"{service.url}/v1/run", content=content, headers=headers, timeout=30)


UNIT = '{"name": "t", "content": "exports.run = function (i) { return i; };"}'


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 300, 1_000, 100_000])
@pytest.mark.parametrize("field", ["input", "context"])
def test_the_service_answers_400_to_a_body_nested_too_deep(sandbox_service: SandboxService, depth: int, field: str) -> None:
    deep = "[" * depth + "]" * depth if field == "input" else '{"k": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
    response = post(sandbox_service, '{"units": [' + UNIT + '], "' + field + '": ' + deep + "}")
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "too-deep" and str(MAX_DEPTH) in problem["detail"]
    assert post(sandbox_service, '{"units": [' + UNIT + '], "input": 7}').json()["output"] == 7


def test_the_service_runs_an_input_nested_to_the_limit(sandbox_service: SandboxService) -> None:
    response = post(sandbox_service, '{"units": [' + UNIT + '], "input": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}")
    assert response.status_code == 200, response.text
    assert response.json()["error"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"units": [{"name": "t", "content": "exports.run = function () { return \'\\ud800\'; };"}]}', "units[0].content"),
        ('{"units": [{"name": "t\\udfff", "content": "exports.run = function () { return 1; };"}]}', "units[0].name"),
        ('{"units": [{"name": "t", "content": "exports.run = function () { return 1; };", "imports": ["\\ud800"]}]}', "units[0].imports[0]"),
        ('{"units": [' + UNIT + '], "dateParameters": ["\\ud800"]}', "dateParameters[0]"),
    ],
)
def test_the_service_answers_400_naming_the_field_to_a_lone_surrogate_in_program_text(sandbox_service: SandboxService, body: str, field: str) -> None:
    response = post(sandbox_service, body)
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
    assert "surrogate" in response.json()["detail"]


def test_the_service_runs_a_lone_surrogate_in_the_input_and_answers_it_replaced(sandbox_service: SandboxService) -> None:
    response = post(sandbox_service, '{"units": [' + UNIT + '], "input": {"k\\ud800": "\\udc00"}}')
    assert response.status_code == 200, response.text
    assert response.json()["output"] == {"k\ufffd": "\ufffd"}


def test_the_service_answers_a_deep_result_as_a_result_error(sandbox_service: SandboxService) -> None:
    content = json.dumps(f"exports.run = function () {{ return {nested(1_000)}; }};")
    response = post(sandbox_service, '{"units": [{"name": "t", "content": ' + content + "}]}")
    assert response.status_code == 200, response.text
    assert response.json()["error"]["type"] == "result"


def run_against_answer(answer: str) -> ExecutionResult:
    """A call through `RemoteSandbox` to a sandbox service that answers `answer`, whatever was asked."""
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=answer.encode(), headers={"Content-Type": "application/json"}))
    client = RemoteSandbox("http://sandbox.test", secret="s", caller_name="t", capability_profile="default", transport=transport)
    try:
        return client.run(Execution(units=(tool("exports.run = function () {};"),)))
    finally:
        client.close()


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 300, 100_000])
def test_the_remote_client_reads_a_deep_answer_as_a_result_error(depth: int) -> None:
    answer = '{"output": ' + "[" * depth + "]" * depth + ', "error": null, "logs": [], "durationMillis": 1}'
    result = run_against_answer(answer)
    assert result.error is not None and result.error.type == "result"
    assert str(MAX_DEPTH) in result.error.message


def test_the_remote_client_replaces_lone_surrogates_in_an_answer() -> None:
    answer = '{"output": {"k\\ud800": ["\\udc00"]}, "error": null, "logs": ["l\\ud800"], "durationMillis": 1}'
    result = run_against_answer(answer)
    assert result.output == {"k\ufffd": ["\ufffd"]} and result.logs == ("l\ufffd",)
