"""One contract for every `Sandbox`: what a user checks of a call, whichever backend runs it.

The `sandbox` fixture runs each case against the embedded runner (the factory's, in this process)
and against the remote one (`RemoteSandbox` talking to a real `toolsmith sandbox` process on a free
port). The second half holds what only the service has: the shared secret, the wire format's
refusals, capability profiles, the session cap answered with 429, and how the service starts.

When a test fails, the lines the service logged during it are printed (its whole output is in a
file under pytest's temporary directory).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from domain.errors import SandboxBusy, SandboxUnavailable
from domain.ports import Execution, ExecutionResult, Sandbox, SourceUnit
from sandbox.remote import RemoteSandbox
from sandbox.wire import execution_to_wire
from tests.helpers import free_port
from tests.sandbox_service import PROJECT, SECRET, SandboxService, remote, running_service, service_command, service_env



# -- helpers ------------------------------------------------------------------------------------------


def unit(name: str, content: str, *imports: str) -> SourceUnit:
    return SourceUnit(name=name, content=content, imports=imports)


def tool(content: str) -> SourceUnit:
    return unit("tool", content)


# Seed 004's example: `report` imports `dates`.
DATES = unit("dates", "exports.year = function (d) { return d.slice(0, 4); };")
REPORT = unit("report", "exports.run = function (input) {\n  return 'Report ' + dates.year(input.day);\n};", "dates")


def run(sandbox: Sandbox, *units: SourceUnit, **call: Any) -> ExecutionResult:
    call.setdefault("input", {})
    return sandbox.run(Execution(units=units, **call))


def check(sandbox: Sandbox, *units: SourceUnit, **call: Any) -> ExecutionResult:
    return sandbox.check(Execution(units=units, **call))


def error_of(result: ExecutionResult) -> tuple[str, str] | None:
    return (result.error.type, result.error.message) if result.error else None


def assert_still_serves(sandbox: Sandbox) -> None:
    result = run(sandbox, DATES, REPORT, input={"day": "1999-01-01"})
    assert result.error is None and result.output == "Report 1999", result


# -- the contract: results ----------------------------------------------------------------------------


def test_a_module_style_tool_returns_what_run_returns(sandbox: Sandbox) -> None:
    result = run(sandbox, DATES, REPORT, input={"day": "2024-05-06"})
    assert result.error is None, result.error
    assert result.output == "Report 2024"
    assert result.logs == ()
    assert result.duration_millis >= 0


def test_a_structured_input_comes_back_unchanged(sandbox: Sandbox) -> None:
    value = {"hello": "world", "n": 1.5, "list": [1, None, True], "nested": {"é": "ü"}}
    result = run(sandbox, tool("exports.run = function (input) { return input; };"), input=value)
    assert result.output == value


def test_a_lone_surrogate_in_the_input_or_the_result_is_not_a_crash(sandbox: Sandbox) -> None:
    # valid in a JSON string and in JavaScript, not in UTF-8
    result = run(sandbox, tool("exports.run = function (input) { return [input.s, '\\uD800', 'caf\\u00e9 \\uD83D\\uDE00']; };"), input={"s": "\ud800"})
    assert result.error is None, result.error
    assert len(result.output) == 3 and result.output[2] == "caf\u00e9 \U0001F600"


def test_log_lines_are_in_the_result(sandbox: Sandbox) -> None:
    code = "exports.run = function (input) { log('start'); log({n: input.n}); return input.n * 2; };"
    result = run(sandbox, tool(code), input={"n": 21})
    assert result.output == 42
    assert result.logs == ("start", '{"n":21}')


def test_ai_context_returns_the_executions_context(sandbox: Sandbox) -> None:
    context = {"user": {"id": "u1", "roles": ["admin"], "locale": "fr-FR"}, "tenant": "acme", "conversation": "c-9"}
    result = run(sandbox, tool("exports.run = function () { return ai.context(); };"), context=context)
    assert result.error is None, result.error
    assert result.output == context


def test_script_style_parameters_are_variables_and_the_last_expression_is_the_result(sandbox: Sandbox) -> None:
    script = tool("var total = price * quantity;\ntotal + (express ? 5 : 0);")
    result = run(sandbox, script, input={"price": 2.5, "quantity": 4, "express": True}, style="script")
    assert result.error is None, result.error
    assert result.output == 15


def test_date_parameters_arrive_as_dates(sandbox: Sandbox) -> None:
    code = "exports.run = function (input) { return [input.day instanceof Date, input.day.getUTCFullYear()]; };"
    result = run(sandbox, tool(code), input={"day": "2024-05-06"}, date_parameters=("day",))
    assert result.output == [True, 2024]


def test_an_async_run_returns_its_awaited_value(sandbox: Sandbox) -> None:
    code = "exports.run = async function (input) { var n = await Promise.resolve(input.n); return n + 1; };"
    assert run(sandbox, tool(code), input={"n": 41}).output == 42


# -- the contract: typed failures, each followed by a call that works ---------------------------------------


def test_a_thrown_error_is_a_runtime_error_with_its_message(sandbox: Sandbox) -> None:
    result = run(sandbox, tool("exports.run = function () { throw new RangeError('day out of range'); };"))
    assert error_of(result) == ("runtime", "RangeError: day out of range")
    assert_still_serves(sandbox)


def test_a_syntax_error_is_a_syntax_error_naming_the_module_and_line(sandbox: Sandbox) -> None:
    broken = unit("dates", "exports.year = function (d) {\n  return d.slice(0, 4;\n};")
    result = run(sandbox, broken, REPORT, input={"day": "2024-05-06"})
    assert result.error is not None and result.error.type == "syntax", result.error
    assert "SyntaxError" in result.error.message and "dates, line 2" in result.error.message
    assert_still_serves(sandbox)


def test_an_infinite_loop_is_a_timeout(sandbox: Sandbox) -> None:
    started = time.perf_counter()
    result = run(sandbox, tool("exports.run = function () { log('looping'); while (true) {} };"), timeout_millis=300)
    elapsed = time.perf_counter() - started
    assert result.error is not None and result.error.type == "timeout", result.error
    assert "300 ms" in result.error.message
    assert elapsed < 3, f"a 300 ms call took {elapsed:.2f} s"
    assert_still_serves(sandbox)


def test_a_memory_bomb_is_a_memory_error(sandbox: Sandbox) -> None:
    bomb = tool("exports.run = function () { var a = []; while (true) a.push(new Array(100000).fill(7)); };")
    result = run(sandbox, bomb, memory_limit_mb=16, timeout_millis=5_000)
    assert result.error is not None and result.error.type == "memory", result.error
    assert "16 MB" in result.error.message
    assert_still_serves(sandbox)


def test_deep_recursion_is_a_stack_error(sandbox: Sandbox) -> None:
    code = "function down(n) { return down(n + 1) + 1; }\nexports.run = function () { return down(0); };"
    result = run(sandbox, tool(code))
    assert result.error is not None and result.error.type == "stack", result.error
    assert_still_serves(sandbox)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("Symbol('x')", id="symbol"),
        pytest.param("(function () { var a = {}; a.self = a; return a; })()", id="cyclic"),
    ],
)
def test_a_result_that_is_not_json_is_an_error_not_a_crash(sandbox: Sandbox, value: str) -> None:
    result = run(sandbox, tool(f"exports.run = function () {{ return {value}; }};"))
    assert result.error is not None and result.error.type == "result", result.error
    assert result.output is None
    assert_still_serves(sandbox)


# -- the contract: check ---------------------------------------------------------------------------------


def test_check_accepts_a_bundle_whose_imports_export_what_is_used(sandbox: Sandbox) -> None:
    assert check(sandbox, DATES, REPORT).error is None


def test_check_reports_a_link_error_when_an_importer_uses_a_missing_member(sandbox: Sandbox) -> None:
    # dates version 2 renames year to yearOf; report still calls dates.year
    dates_v2 = unit("dates", "exports.yearOf = function (d) { return d.slice(0, 4); };")
    result = check(sandbox, dates_v2, REPORT)
    assert result.error is not None and result.error.type == "link", result.error
    assert "dates.year" in result.error.message
    assert_still_serves(sandbox)


def test_check_of_a_library_does_not_require_exports_run(sandbox: Sandbox) -> None:
    library = unit("helpers", "exports.twice = function (n) { return 2 * n; };")
    assert check(sandbox, library, is_tool=False).error is None
    assert error_of(check(sandbox, library, is_tool=True))[0] == "link"  # type: ignore[index]


def test_check_does_not_call_run(sandbox: Sandbox) -> None:
    assert check(sandbox, tool("exports.run = function () { while (true) {} };"), timeout_millis=300).error is None


# -- the service: the shared secret ------------------------------------------------------------------------


def _post(service: SandboxService, path: str = "/v1/run", *, body: Any = None, content: bytes | None = None,
          secret: str | None = SECRET, **headers: str) -> httpx.Response:
    sent = {k.replace("_", "-"): v for k, v in headers.items()}
    if secret is not None:
        sent["Authorization"] = f"Bearer {secret}"
    if content is None:
        content = json.dumps(body if body is not None else execution_to_wire(Execution(units=(DATES, REPORT), input={"day": "2024-05-06"}))).encode()
    return httpx.post(service.url + path, content=content, headers=sent, timeout=10, trust_env=False)


def _assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["detail"] and body["code"]
    return body


def test_the_wire_answers_a_result_in_camel_case(sandbox_service: SandboxService) -> None:
    response = _post(sandbox_service)
    assert response.status_code == 200
    assert response.json() == {"output": "Report 2024", "error": None, "logs": [], "durationMillis": response.json()["durationMillis"]}


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer not-the-secret", f"Bearer {SECRET}x", f"Basic {SECRET}", SECRET],
    ids=["missing", "wrong", "longer", "other-scheme", "no-scheme"],
)
def test_a_call_without_the_right_secret_is_401(sandbox_service: SandboxService, authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    for path in ("/v1/run", "/v1/check"):
        response = _post(sandbox_service, path, secret=None, **headers)
        _assert_problem(response, 401)
        assert response.headers["www-authenticate"] == "Bearer"


def test_a_client_with_a_wrong_or_missing_secret_is_told_the_sandbox_is_unavailable(sandbox_service: SandboxService) -> None:
    for secret in ("not-the-secret", None):
        client = remote(sandbox_service, secret=secret)
        try:
            with pytest.raises(SandboxUnavailable) as refused:
                run(client, DATES, REPORT, input={"day": "2024-05-06"})
            assert "refused the shared secret" in refused.value.detail
            assert sandbox_service.url in refused.value.detail
        finally:
            client.close()


def test_each_call_is_logged_with_its_caller_and_never_the_secret_or_the_input(sandbox_service: SandboxService) -> None:
    marker = "input-value-that-must-not-be-logged"
    client = remote(sandbox_service, caller_name="billing-api")
    try:
        run(client, tool("exports.run = function (input) { return input.secretish.length; };"), input={"secretish": marker})
        check(client, DATES, REPORT)
    finally:
        client.close()
    _post(sandbox_service, secret="wrong-secret-attempt")
    # the log line is written after the answer: waited for, however busy the machine
    deadline = time.monotonic() + 30
    while not any(r.get("outcome") == "refused:wrong-secret" for r in sandbox_service.log_records()):
        assert time.monotonic() < deadline, sandbox_service.output
        time.sleep(0.05)
    calls = [r for r in sandbox_service.log_records() if r.get("message") == "sandbox call"]
    mine = [r for r in calls if r.get("caller") == "billing-api"]
    assert {(r["codeModule"], r["mode"], r["outcome"]) for r in mine} >= {("tool", "run", "ok"), ("report", "check", "ok")}
    assert all(isinstance(r["durationMillis"], (int, float)) for r in mine)
    assert any(r["outcome"] == "refused:wrong-secret" for r in calls)
    assert SECRET not in sandbox_service.output
    assert "wrong-secret-attempt" not in sandbox_service.output
    assert marker not in sandbox_service.output


# -- the service: what it refuses ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({}, "units", id="no-units"),
        pytest.param({"units": []}, "units", id="empty-units"),
        pytest.param({"units": [{"name": "t", "content": 5}]}, "units[0].content", id="content-not-a-string"),
        pytest.param({"units": [{"content": "1"}]}, "units[0].name", id="unit-without-name"),
        pytest.param({"units": [{"name": "t", "content": "1", "imports": "dates"}]}, "units[0].imports", id="imports-not-a-list"),
        pytest.param({"units": [{"name": "t", "content": "1"}], "timeoutMillis": "300"}, "timeoutMillis", id="timeout-a-string"),
        pytest.param({"units": [{"name": "t", "content": "1"}], "memoryLimitMb": 0}, "memoryLimitMb", id="memory-zero"),
        pytest.param({"units": [{"name": "t", "content": "1"}], "style": "jsx"}, "style", id="unknown-style"),
        pytest.param({"units": [{"name": "t", "content": "1"}], "isTool": "yes"}, "isTool", id="is-tool-a-string"),
        pytest.param({"units": [{"name": "t", "content": "1"}], "context": []}, "context", id="context-a-list"),
        pytest.param({"units": [{"name": "t", "content": "1"}], "dateParameters": [1]}, "dateParameters[0]", id="date-parameter-a-number"),
        pytest.param({"units": [{"name": "t", "content": "1"}], "timeout": 300}, "timeout", id="unknown-field"),
        pytest.param([1, 2], "body", id="not-an-object"),
    ],
)
def test_a_malformed_body_is_400_naming_the_field(sandbox_service: SandboxService, body: Any, field: str) -> None:
    problem = _assert_problem(_post(sandbox_service, body=body), 400)
    assert problem["field"] == field
    assert problem["detail"].startswith(f"{field}:")


def test_a_body_that_is_not_json_is_400(sandbox_service: SandboxService) -> None:
    problem = _assert_problem(_post(sandbox_service, content=b'{"units": ['), 400)
    assert problem["code"] == "malformed-json"


def test_a_body_over_the_cap_is_413(sandbox_service: SandboxService) -> None:
    huge = json.dumps({"units": [{"name": "t", "content": "x" * (5 * 1024 * 1024)}]}).encode()
    _assert_problem(_post(sandbox_service, content=huge), 413)


def test_an_unknown_profile_is_400_naming_the_header(sandbox_service: SandboxService) -> None:
    problem = _assert_problem(_post(sandbox_service, X_Sandbox_Profile="everything"), 400)
    assert "X-Sandbox-Profile" in problem["detail"] and "everything" in problem["detail"]
    # a profile the service knows is accepted
    assert _post(sandbox_service, X_Sandbox_Profile="minimal").status_code == 200


def test_a_client_configured_with_an_unknown_profile_is_told_why(sandbox_service: SandboxService) -> None:
    client = remote(sandbox_service, capability_profile="everything")
    try:
        with pytest.raises(SandboxUnavailable) as refused:
            run(client, DATES, REPORT, input={"day": "2024-05-06"})
        assert "X-Sandbox-Profile" in refused.value.detail
    finally:
        client.close()


def test_healthz_needs_no_secret_and_names_the_cap_and_profiles(sandbox_service: SandboxService) -> None:
    health = httpx.get(f"{sandbox_service.url}/healthz", trust_env=False).json()
    assert health["status"] == "ok"
    assert health["maxActiveSessions"] == 16
    assert {"default", "no-network", "minimal"} <= set(health["profiles"])


# -- the service: sessions -----------------------------------------------------------------------------


def test_a_call_over_the_session_cap_is_429_at_once(tmp_path: Path) -> None:
    with running_service(tmp_path, CODESANDBOX_SECRET=SECRET, CODESANDBOX_MAX_ACTIVE_SESSIONS="1") as single:
        assert httpx.get(f"{single.url}/healthz", trust_env=False).json()["maxActiveSessions"] == 1
        client = remote(single)
        slow: list[ExecutionResult] = []
        worker = threading.Thread(target=lambda: slow.append(run(client, tool("exports.run = function () { while (true) {} };"), timeout_millis=1_000)))
        try:
            with httpx.Client(base_url=single.url, trust_env=False, timeout=10) as probe:
                probe.get("/healthz")  # the probe's connection is open before it is timed
                worker.start()
                # the slow call holds the only session
                deadline = time.monotonic() + 5
                while probe.get("/healthz").json()["activeSessions"] < 1:
                    assert time.monotonic() < deadline, "the slow call never started"
                asked = time.perf_counter()
                response = probe.post("/v1/run", content=json.dumps(execution_to_wire(Execution(units=(DATES, REPORT), input={"day": "2024-05-06"}))),
                                      headers={"Authorization": f"Bearer {SECRET}"})
                answered_in = time.perf_counter() - asked
            problem = _assert_problem(response, 429)
            assert response.headers["retry-after"] == "1"
            assert problem["detail"] == "every sandbox session is busy; try again later"
            assert answered_in < 0.1, f"the refusal took {answered_in * 1000:.0f} ms"
            # the client turns it into the port's SandboxBusy
            with pytest.raises(SandboxBusy):
                run(client, DATES, REPORT, input={"day": "2024-05-06"})
            worker.join(timeout=10)
            assert slow and slow[0].error is not None and slow[0].error.type == "timeout", slow
            # the session is free again
            assert run(client, DATES, REPORT, input={"day": "2024-05-06"}).output == "Report 2024"
        finally:
            worker.join(timeout=10)
            client.close()


# -- the service: how it starts ---------------------------------------------------------------------------


def test_the_service_refuses_to_start_without_a_secret() -> None:
    finished = subprocess.run(service_command("--port", str(free_port())), cwd=PROJECT, env=service_env(),
                              capture_output=True, text=True, timeout=60)
    assert finished.returncode == 2
    lines = finished.stderr.strip().splitlines()
    assert len(lines) == 1, finished.stderr
    assert "CODESANDBOX_SECRET" in lines[0] and "--insecure-dev" in lines[0]


def test_the_service_refuses_to_start_with_an_unknown_profile() -> None:
    finished = subprocess.run(service_command("--port", str(free_port())), cwd=PROJECT, timeout=60, capture_output=True, text=True,
                              env=service_env(CODESANDBOX_SECRET=SECRET, CODESANDBOX_CAPABILITY_PROFILE="everything"))
    assert finished.returncode == 2
    assert finished.stderr.strip().count("\n") == 0 and "CODESANDBOX_CAPABILITY_PROFILE" in finished.stderr


def test_the_service_refuses_to_start_with_a_bad_allow_list() -> None:
    finished = subprocess.run(service_command("--port", str(free_port())), cwd=PROJECT, timeout=60, capture_output=True, text=True,
                              env=service_env(CODESANDBOX_SECRET=SECRET, CODESANDBOX_ALLOWED_DOMAINS="api.example.com:99999"))
    assert finished.returncode == 2
    assert finished.stderr.strip().count("\n") == 0 and "CODESANDBOX_ALLOWED_DOMAINS" in finished.stderr


def test_in_insecure_dev_mode_calls_need_no_secret_and_the_start_warns(tmp_path: Path) -> None:
    with running_service(tmp_path, "--insecure-dev") as open_service:
        assert _post(open_service, secret=None).json()["output"] == "Report 2024"
        assert "WARNING" in open_service.output and "WITHOUT a secret" in open_service.output


# -- the client: failures of the service ------------------------------------------------------------------


def test_a_service_that_cannot_be_reached_is_unavailable_naming_its_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    client = RemoteSandbox(url, secret=SECRET, caller_name="t", capability_profile="default")
    try:
        with pytest.raises(SandboxUnavailable) as down:
            run(client, DATES, REPORT, input={"day": "2024-05-06"})
        assert url in down.value.detail
    finally:
        client.close()


def _answering(handler: Any) -> RemoteSandbox:
    return RemoteSandbox("http://sandbox.test", secret=SECRET, caller_name="t", capability_profile="default",
                         transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        pytest.param(lambda r: httpx.Response(500, json={"detail": "broken"}), "answered 500", id="5xx"),
        pytest.param(lambda r: httpx.Response(200, json={"output": 1}), "malformed result", id="malformed-200"),
        pytest.param(lambda r: (_ for _ in ()).throw(httpx.ReadTimeout("slow", request=r)), "did not answer", id="timeout"),
    ],
)
def test_a_failing_service_is_unavailable_naming_its_url(answer: Any, words: str) -> None:
    client = _answering(answer)
    with pytest.raises(SandboxUnavailable) as down:
        run(client, DATES, REPORT)
    assert "http://sandbox.test" in down.value.detail and words in down.value.detail


def test_the_client_presents_the_secret_caller_and_profile_and_waits_the_timeout_plus_a_margin() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"output": 1, "error": None, "logs": [], "durationMillis": 1})

    client = _answering(answer)
    run(client, DATES, REPORT, timeout_millis=2_000)
    request = seen[0]
    assert request.url.path == "/v1/run"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.headers["x-sandbox-caller"] == "t" and request.headers["x-sandbox-profile"] == "default"
    assert request.extensions["timeout"]["read"] == 7
    assert json.loads(request.content)["timeoutMillis"] == 2_000
    assert SECRET not in repr(client)
