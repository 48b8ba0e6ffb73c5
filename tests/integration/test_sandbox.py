"""The embedded QuickJS runner against the real engine: bundles (R6), the environment (docs/javascript.md, V1–V4).

The worker pool's own behaviour (deadlines, crashes, kills) is in `test_hardening.py`; the hostile
corpus runs in the sandbox contract suite, against the embedded runner and the service.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from domain.errors import SandboxBusy
from domain.ports import Execution, ExecutionResult, SourceUnit
from sandbox.embedded import EmbeddedSandbox

def unit(name: str, content: str, *imports: str) -> SourceUnit:
    return SourceUnit(name=name, content=content, imports=imports)


def tool(content: str, name: str = "tool", *imports: str) -> SourceUnit:
    return unit(name, content, *imports)


# Seed 004's example: `report` imports `dates`.
DATES = unit("dates", "exports.year = function (d) { return d.slice(0, 4); };")
REPORT = unit(
    "report",
    "exports.run = function (input) {\n  return 'Report ' + dates.year(input.day);\n};",
    "dates",
)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[EmbeddedSandbox]:
    runner = EmbeddedSandbox()
    yield runner
    runner.close()


def run(sandbox: EmbeddedSandbox, *units: SourceUnit, **call: Any) -> ExecutionResult:
    call.setdefault("input", {})
    return sandbox.run(Execution(units=units, **call))


def check(sandbox: EmbeddedSandbox, *units: SourceUnit, **call: Any) -> ExecutionResult:
    return sandbox.check(Execution(units=units, **call))


def error_type(result: ExecutionResult) -> str | None:
    return result.error.type if result.error else None


# -- bundles (R6) ---------------------------------------------------------------------------------


def test_seed_report_bundle_returns_the_year(sandbox: EmbeddedSandbox) -> None:
    result = run(sandbox, DATES, REPORT, input={"day": "2024-05-06"})
    assert result.error is None
    assert result.output == "Report 2024"


def test_an_importer_sees_only_its_own_imports(sandbox: EmbeddedSandbox) -> None:
    # app imports report, which imports dates; dates is not in app's scope
    app = tool("exports.run = function () { return [typeof dates, typeof report, typeof report.run]; };", "app", "report")
    result = run(sandbox, DATES, REPORT, app)
    assert result.error is None
    assert result.output == ["undefined", "object", "function"]


def test_check_accepts_a_bundle_whose_imports_export_what_is_used(sandbox: EmbeddedSandbox) -> None:
    result = check(sandbox, DATES, REPORT)
    assert result.error is None


def test_check_reports_a_link_error_when_a_dependency_stops_exporting_a_used_member(sandbox: EmbeddedSandbox) -> None:
    # dates version 2 renames year to yearOf; report still calls dates.year
    dates_v2 = unit("dates", "exports.yearOf = function (d) { return d.slice(0, 4); };")
    result = check(sandbox, dates_v2, REPORT)
    assert error_type(result) == "link"
    assert "dates.year" in result.error.message  # type: ignore[union-attr]


def test_check_of_a_tool_without_exports_run_is_a_link_error(sandbox: EmbeddedSandbox) -> None:
    result = check(sandbox, unit("helpers", "exports.twice = function (n) { return 2 * n; };"))
    assert error_type(result) == "link"
    assert "exports.run" in result.error.message  # type: ignore[union-attr]


def test_check_of_a_library_does_not_require_exports_run(sandbox: EmbeddedSandbox) -> None:
    result = check(sandbox, unit("helpers", "exports.twice = function (n) { return 2 * n; };"), is_tool=False)
    assert result.error is None


def test_check_does_not_call_run(sandbox: EmbeddedSandbox) -> None:
    result = check(sandbox, tool("exports.run = function () { while (true) {} };"), timeout_millis=300)
    assert result.error is None


# -- typed errors (V4) ------------------------------------------------------------------------------


def test_a_syntax_error_in_a_dependency_names_the_module_and_its_line(sandbox: EmbeddedSandbox) -> None:
    broken_dates = unit("dates", "exports.year = function (d) {\n  return d.slice(0, 4;\n};")
    result = run(sandbox, broken_dates, REPORT, input={"day": "2024-05-06"})
    assert error_type(result) == "syntax"
    assert "dates, line 2" in result.error.message  # type: ignore[union-attr]


def test_a_syntax_error_found_by_check_names_the_module_and_its_line(sandbox: EmbeddedSandbox) -> None:
    broken_report = unit(
        "report",
        "exports.run = function (input) {\n  var label = 'Report ';\n  return label + dates.year(input.day;\n};",
        "dates",
    )
    result = check(sandbox, DATES, broken_report)
    assert error_type(result) == "syntax"
    assert "report, line 3" in result.error.message  # type: ignore[union-attr]


def test_a_thrown_error_is_a_runtime_error_with_its_message(sandbox: EmbeddedSandbox) -> None:
    result = run(sandbox, tool("exports.run = function () { throw new RangeError('day out of range'); };"))
    assert error_type(result) == "runtime"
    assert result.error.message == "RangeError: day out of range"  # type: ignore[union-attr]


def test_an_infinite_loop_times_out_and_keeps_the_logs_written_before(sandbox: EmbeddedSandbox) -> None:
    started = time.perf_counter()
    result = run(sandbox, tool("exports.run = function () { log('before the loop'); while (true) {} };"), timeout_millis=300)
    elapsed = time.perf_counter() - started
    assert error_type(result) == "timeout"
    assert result.logs == ("before the loop",)
    assert elapsed < 3


def test_the_timeout_is_clamped_to_the_sandbox_cap() -> None:
    capped = EmbeddedSandbox(max_timeout_millis=200)
    started = time.perf_counter()
    result = run(capped, tool("exports.run = function () { while (true) {} };"), timeout_millis=10_000)
    capped.close()
    assert error_type(result) == "timeout"
    assert time.perf_counter() - started < 10 / 2  # at the cap's 200 ms, long before the 10 s asked


def test_a_memory_bomb_is_a_memory_error(sandbox: EmbeddedSandbox) -> None:
    bomb = tool("exports.run = function () { var a = []; while (true) a.push(new Array(100000).fill(7)); };")
    result = run(sandbox, bomb, memory_limit_mb=32, timeout_millis=5_000)
    assert error_type(result) == "memory"


def test_unbounded_recursion_is_a_stack_error(sandbox: EmbeddedSandbox) -> None:
    result = run(sandbox, tool("function down(n) { return down(n + 1) + 1; }\nexports.run = function () { return down(0); };"))
    assert error_type(result) == "stack"


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("10n", id="bigint"),
        pytest.param("(function () { var a = {}; a.self = a; return a; })()", id="cyclic"),
        pytest.param("function () {}", id="function"),
        pytest.param("Symbol('x')", id="symbol"),
    ],
)
def test_a_result_that_is_not_json_is_a_result_error(sandbox: EmbeddedSandbox, value: str) -> None:
    result = run(sandbox, tool(f"exports.run = function () {{ return {value}; }};"))
    assert error_type(result) == "result"


def test_the_service_keeps_serving_after_each_kind_of_failure(sandbox: EmbeddedSandbox) -> None:
    for body in ["while (true) {}", "var a = []; while (true) a.push(new Array(100000).fill(7));", "return (function f() { return f(); })();"]:
        run(sandbox, tool(f"exports.run = function () {{ {body} }};"), timeout_millis=300, memory_limit_mb=32)
    assert run(sandbox, DATES, REPORT, input={"day": "1999-01-01"}).output == "Report 1999"


# -- what the sandbox injects (V2) -------------------------------------------------------------------


def test_log_keeps_at_most_50_lines_of_at_most_500_characters(sandbox: EmbeddedSandbox) -> None:
    chatty = tool("exports.run = function () { for (var i = 0; i < 60; i++) log(i + ':' + 'x'.repeat(600)); return 'done'; };")
    result = run(sandbox, chatty)
    assert result.output == "done"
    assert len(result.logs) == 50
    assert all(len(line) == 500 for line in result.logs)
    assert result.logs[0].startswith("0:x") and result.logs[-1].startswith("49:x")


def test_log_writes_values_as_json(sandbox: EmbeddedSandbox) -> None:
    result = run(sandbox, tool("exports.run = function () { log({day: '2024-05-06'}); log(42); log('plain'); return 1; };"))
    assert result.logs == ('{"day":"2024-05-06"}', "42", "plain")


def test_ai_context_returns_the_injected_context(sandbox: EmbeddedSandbox) -> None:
    context = {"user": {"id": "u1", "roles": ["admin"], "locale": "fr-FR"}, "tenant": "acme", "conversation": "c-9"}
    result = run(sandbox, tool("exports.run = function () { return ai.context(); };"), context=context)
    assert result.error is None
    assert result.output == context


def test_ai_context_cannot_be_changed_by_the_caller(sandbox: EmbeddedSandbox) -> None:
    code = "exports.run = function () { ai.context().tenant = 'evil'; ai.context = null; return ai.context().tenant; };"
    assert run(sandbox, tool(code), context={"tenant": "acme"}).output == "acme"


# -- async runs ---------------------------------------------------------------------------------


def test_an_async_run_returns_its_awaited_value(sandbox: EmbeddedSandbox) -> None:
    code = "exports.run = async function (input) { var n = await Promise.resolve(input.n); await null; return n + 1; };"
    result = run(sandbox, tool(code), input={"n": 41})
    assert result.error is None
    assert result.output == 42


def test_an_async_run_that_rejects_is_a_runtime_error(sandbox: EmbeddedSandbox) -> None:
    result = run(sandbox, tool("exports.run = async function () { await 0; throw new Error('late failure'); };"))
    assert error_type(result) == "runtime"
    assert "late failure" in result.error.message  # type: ignore[union-attr]


def test_a_promise_that_never_settles_is_a_timeout(sandbox: EmbeddedSandbox) -> None:
    result = run(sandbox, tool("exports.run = async function () { await new Promise(function () {}); };"), timeout_millis=300)
    assert error_type(result) == "timeout"


def test_an_endless_await_loop_times_out(sandbox: EmbeddedSandbox) -> None:
    started = time.perf_counter()
    result = run(sandbox, tool("exports.run = async function () { for (;;) await 0; };"), timeout_millis=300)
    assert error_type(result) == "timeout"
    assert time.perf_counter() - started < 3


# -- isolation (V3) -----------------------------------------------------------------------------


def test_a_global_set_in_one_call_is_not_visible_in_the_next(sandbox: EmbeddedSandbox) -> None:
    first = run(sandbox, tool("exports.run = function () { globalThis.leak = 1; Object.prototype.polluted = 1; return typeof leak; };"))
    assert first.output == "number"
    second = run(sandbox, tool("exports.run = function () { return [typeof leak, typeof ({}).polluted]; };"))
    assert second.output == ["undefined", "undefined"]


def test_no_host_facility_is_in_scope(sandbox: EmbeddedSandbox) -> None:
    names = ["require", "process", "std", "os", "module", "fetch", "setTimeout", "setInterval", "XMLHttpRequest"]
    code = "exports.run = function () { return [" + ",".join(f"typeof {n}" for n in names) + "]; };"
    result = run(sandbox, tool(code))
    assert dict(zip(names, result.output)) == {name: "undefined" for name in names}


# -- parameters (V1) and script style (docs/javascript.md) -------------------------------------------------------------


def test_date_parameters_become_date_objects(sandbox: EmbeddedSandbox) -> None:
    code = "exports.run = function (input) { return [input.day instanceof Date, input.day.getUTCFullYear(), typeof input.label]; };"
    result = run(sandbox, tool(code), input={"day": "2024-05-06", "label": "2024-05-06"}, date_parameters=("day",))
    assert result.error is None
    assert result.output == [True, 2024, "string"]


def test_script_parameters_are_top_level_variables_and_the_last_expression_is_the_result(sandbox: EmbeddedSandbox) -> None:
    script = tool("var total = price * quantity;\ntotal + (express ? 5 : 0);")
    result = run(sandbox, script, input={"price": 2.5, "quantity": 4, "express": True}, style="script")
    assert result.error is None
    assert result.output == 15


def test_a_script_sees_its_imports_by_name(sandbox: EmbeddedSandbox) -> None:
    script = unit("yearOf", "'Year ' + dates.year(day)", "dates")
    result = run(sandbox, DATES, script, input={"day": "2024-05-06"}, style="script")
    assert result.output == "Year 2024"


def test_script_date_parameters_become_date_objects(sandbox: EmbeddedSandbox) -> None:
    script = tool("[day instanceof Date, day.getUTCMonth() + 1]")
    result = run(sandbox, script, input={"day": "2024-05-06"}, style="script", date_parameters=("day",))
    assert result.output == [True, 5]


def test_a_script_may_end_with_an_explicit_return(sandbox: EmbeddedSandbox) -> None:
    # docs/javascript.md: "the value of the last expression (or an explicit `return`) is the result"
    script = tool("if (amount < 0) {\n  return 'negative';\n}\n'positive'")
    result = run(sandbox, script, input={"amount": -3}, style="script")
    assert result.error is None, result.error
    assert result.output == "negative"


def test_a_script_syntax_error_is_typed_syntax_and_names_its_line(sandbox: EmbeddedSandbox) -> None:
    result = run(sandbox, tool("var a = 1;\nvar b = ;"), style="script")
    assert error_type(result) == "syntax"
    assert "line 2" in result.error.message, result.error  # type: ignore[union-attr]


# -- sessions (docs/sandbox.md max-active-sessions) ------------------------------------------------------------------


def test_one_call_more_than_the_session_limit_is_refused_at_once() -> None:
    single = EmbeddedSandbox(max_active_sessions=1)
    started = threading.Event()
    outcome: list[ExecutionResult] = []

    def long_call() -> None:
        started.set()
        while not outcome:
            try:
                outcome.append(run(single, tool("exports.run = function () { while (true) {} };"), timeout_millis=1_000))
            except SandboxBusy:
                pass  # a probe below held the session for a moment; take it when it is free

    worker = threading.Thread(target=long_call)
    worker.start()
    started.wait()
    # the long call takes the only session; ask until it holds it
    refused_in = None
    while worker.is_alive() and refused_in is None:
        asked = time.perf_counter()
        try:
            run(single, DATES, REPORT, input={"day": "2024-05-06"})
        except SandboxBusy as busy:
            refused_in = time.perf_counter() - asked
            assert busy.limit == 1
    worker.join()
    assert refused_in is not None, "the second call was never refused while the first ran"
    assert refused_in < 0.25
    assert error_type(outcome[0]) == "timeout"
    # the session is free again
    assert run(single, DATES, REPORT, input={"day": "2024-05-06"}).output == "Report 2024"
    single.close()


def test_a_program_the_engine_cannot_read_is_an_error_result_not_an_exception(sandbox: EmbeddedSandbox) -> None:
    # the binding reads source as a C string: a NUL that slipped past validation must not raise
    result = run(sandbox, tool("exports.run = () => 'a\x00b';"))
    assert error_type(result) == "runtime" and "could not run" in result.error.message  # type: ignore[union-attr]
    assert run(sandbox, DATES, REPORT, input={"day": "2024-05-06"}).output == "Report 2024"
