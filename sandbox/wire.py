"""The sandbox service's wire format: `Execution` and `ExecutionResult` as JSON-able dicts.

Field names are camelCase, like the rest of Toolsmith's HTTP surface. Reading is strict: a body
that does not have the exact shape is refused with a `WireError` naming the first field at fault
(`units[1].imports[0]`), so the service can answer 400 instead of failing somewhere inside the
runner. Writing is the plain mapping. Module names are not checked against R1 here: the sandbox
runs what it is given (a draft under test is named `(draft)`); the API enforces the rules.

    Execution:        {"units": [{"name", "content", "imports": [str]}], "input": any,
                       "timeoutMillis": int, "memoryLimitMb": int, "style": "module" | "script",
                       "isTool": bool, "context": {…}, "dateParameters": [str]}
    ExecutionResult:  {"output": any, "error": null | {"type", "message"}, "logs": [str],
                       "durationMillis": number}
    a check with runs (`Sandbox.check_then_run`):
        request:      {"execution": Execution, "inputs": [any]}   (at most MAX_INPUTS inputs)
        answer:       {"check": ExecutionResult, "runs": [ExecutionResult]}

In an execution only `units` is required; the other fields default as `Execution` does. Two
headers travel with every call besides the bearer secret: the caller's name and the capability
profile to grant; a third, `X-Sandbox-Priority: background`, with a background execution
(`Execution.background`, docs/tenants.md). The priority is a header, not a field of the body, so that
a service from before it (whose body reader refuses unknown fields) runs the call all the same.
So is `X-Sandbox-Service-Log: off`, with an execution whose module's log lines the service must not
write to its own log (`Execution.service_log`: an API URL tool's post-processing, whose caller
writes them redacted, issue 28).

A run whose caller listens to it while it runs (`Execution.events`: an MCP request's progress and
log notifications) asks with `X-Sandbox-Events: stream`. Until the program tells something, the
answer is the plain one; once it does, the answer is `application/x-ndjson`, one JSON object a line
as things happen: `{"log": line}`, `{"progress": [done, total, message]}`, then the last line,
`{"result": ExecutionResult}`, or `{"problem": {"status", "detail"}}` when the service failed the
call after the answer began. A service from before the header answers the plain result, the log
lines in it (the caller tells them after the call, as before).
"""

from __future__ import annotations

import json
from typing import Any

from domain.ports import Execution, ExecutionError, ExecutionResult, SourceUnit
from domain.values import lone_surrogate_at

CALLER_HEADER = "X-Sandbox-Caller"
PROFILE_HEADER = "X-Sandbox-Profile"
PRIORITY_HEADER = "X-Sandbox-Priority"
BACKGROUND = "background"
SERVICE_LOG_HEADER = "X-Sandbox-Service-Log"
SERVICE_LOG_OFF = "off"
EVENTS_HEADER = "X-Sandbox-Events"
EVENTS_STREAM = "stream"
EVENTS_MEDIA_TYPE = "application/x-ndjson"
STYLES = ("module", "script")

_EXECUTION_FIELDS = ("units", "input", "timeoutMillis", "memoryLimitMb", "style", "isTool", "context", "dateParameters")
_UNIT_FIELDS = ("name", "content", "imports")
_RESULT_FIELDS = ("output", "error", "logs", "durationMillis")
_ERROR_FIELDS = ("type", "message")
_VISIT_FIELDS = ("execution", "inputs")
_OUTCOMES_FIELDS = ("check", "runs")
# The most runs one check with runs asks for: a module's examples are at most 20 (B4).
MAX_INPUTS = 100
_DEFAULTS = Execution(units=())


class WireError(ValueError):
    """A body that is not the wire form; `field` names where it breaks."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# -- writing ------------------------------------------------------------------------------------------


def event_line(kind: str, payload: Any) -> bytes | None:
    """One event of a streamed run (`Execution.events`' kind and payload) as its line; None: not one the wire carries."""
    if kind == "log" and isinstance(payload, str):
        return to_json({"log": payload}) + b"\n"
    if kind == "progress" and isinstance(payload, (tuple, list)) and len(payload) == 3:
        return to_json({"progress": list(payload)}) + b"\n"
    return None


def progress_from_wire(value: Any) -> tuple[float, float | None, str | None] | None:
    """A progress line's `[done, total, message]`, or None if it is not that shape."""
    if not isinstance(value, list) or len(value) != 3:
        return None
    done, total, message = value
    number = (int, float)
    if not isinstance(done, number) or isinstance(done, bool) or (total is not None and (not isinstance(total, number) or isinstance(total, bool))):
        return None
    if message is not None and not isinstance(message, str):
        return None
    return done, total, message


def execution_to_wire(execution: Execution) -> dict[str, Any]:
    return {
        "units": [{"name": u.name, "content": u.content, "imports": list(u.imports)} for u in execution.units],
        "input": execution.input,
        "timeoutMillis": execution.timeout_millis,
        "memoryLimitMb": execution.memory_limit_mb,
        "style": execution.style,
        "isTool": execution.is_tool,
        "context": execution.context,
        "dateParameters": list(execution.date_parameters),
    }


def result_to_wire(result: ExecutionResult) -> dict[str, Any]:
    return {
        "output": result.output,
        "error": result.error.as_dict() if result.error else None,
        "logs": list(result.logs),
        "durationMillis": result.duration_millis,
    }


def check_then_run_to_wire(execution: Execution, inputs: list[Any]) -> dict[str, Any]:
    return {"execution": execution_to_wire(execution), "inputs": list(inputs)}


def outcomes_to_wire(check: ExecutionResult, runs: list[ExecutionResult]) -> dict[str, Any]:
    return {"check": result_to_wire(check), "runs": [result_to_wire(run) for run in runs]}


def to_json(body: Any) -> bytes:
    """UTF-8 JSON. A string may hold a lone surrogate (JavaScript's `'\\uD800'`): valid in JSON, not
    in UTF-8, so such a body is written with escapes instead of failing."""
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":")).encode()


# -- reading ------------------------------------------------------------------------------------------


def execution_from_wire(body: Any) -> Execution:
    _object(body, "body", _EXECUTION_FIELDS)
    if "units" not in body:
        raise WireError("units", "is required")
    units = _list(body["units"], "units")
    if not units:
        raise WireError("units", "must name at least one module (the target, last)")
    return Execution(
        units=tuple(_unit(unit, f"units[{i}]") for i, unit in enumerate(units)),
        input=body.get("input"),
        timeout_millis=_positive_int(body, "timeoutMillis", _DEFAULTS.timeout_millis),
        memory_limit_mb=_positive_int(body, "memoryLimitMb", _DEFAULTS.memory_limit_mb),
        style=_style(body.get("style", _DEFAULTS.style)),
        is_tool=_bool(body.get("isTool", _DEFAULTS.is_tool), "isTool"),
        context=_object(body.get("context", {}), "context"),
        date_parameters=tuple(_text(item, f"dateParameters[{i}]") for i, item in enumerate(_list(body.get("dateParameters", []), "dateParameters"))),
    )


def check_then_run_from_wire(body: Any) -> tuple[Execution, list[Any]]:
    _object(body, "body", _VISIT_FIELDS)
    for name in _VISIT_FIELDS:
        if name not in body:
            raise WireError(name, "is required")
    try:
        execution = execution_from_wire(body["execution"])
    except WireError as e:
        raise WireError("execution" if e.field == "body" else f"execution.{e.field}", e.message) from None
    inputs = _list(body["inputs"], "inputs")
    if len(inputs) > MAX_INPUTS:
        raise WireError("inputs", f"at most {MAX_INPUTS} inputs, got {len(inputs)}")
    return execution, inputs


def result_from_wire(body: Any, where: str = "") -> ExecutionResult:
    """An `ExecutionResult`; `where` prefixes the fields a `WireError` names (`runs[2].`)."""
    try:
        return _result(body)
    except WireError as e:
        if not where:
            raise
        raise WireError(where.rstrip(".") if e.field == "body" else f"{where}{e.field}", e.message) from None


def outcomes_from_wire(body: Any) -> tuple[Any, list[Any]]:
    """A check with runs' answer, each result still in its wire form (the caller reads each)."""
    _object(body, "body", _OUTCOMES_FIELDS)
    for name in _OUTCOMES_FIELDS:
        if name not in body:
            raise WireError(name, "is required")
    return body["check"], _list(body["runs"], "runs")


def _result(body: Any) -> ExecutionResult:
    _object(body, "body", _RESULT_FIELDS)
    for name in _RESULT_FIELDS:
        if name not in body:
            raise WireError(name, "is required")
    error = body["error"]
    if error is not None:
        _object(error, "error", _ERROR_FIELDS)
        error = ExecutionError(type=_string(error.get("type"), "error.type"), message=_string(error.get("message"), "error.message"))
    duration = body["durationMillis"]
    if isinstance(duration, bool) or not isinstance(duration, (int, float)) or duration < 0:
        raise WireError("durationMillis", "must be a number of milliseconds, 0 or more")
    return ExecutionResult(output=body["output"], error=error, logs=_strings(body["logs"], "logs"), duration_millis=float(duration))


def _unit(value: Any, where: str) -> SourceUnit:
    _object(value, where, _UNIT_FIELDS)
    return SourceUnit(
        name=_text(value.get("name"), f"{where}.name"),
        content=_text(value.get("content"), f"{where}.content"),
        imports=tuple(_text(item, f"{where}.imports[{i}]") for i, item in enumerate(_list(value.get("imports", []), f"{where}.imports"))),
    )


def _text(value: Any, where: str) -> str:
    """A string that becomes program text: UTF-8 all through, so no lone surrogate (`input` and
    `context` may hold one: they reach the program as JSON escapes)."""
    text = _string(value, where)
    if lone_surrogate_at(text) is not None:
        raise WireError(where, "holds a lone UTF-16 surrogate, which is not text")
    return text


def _object(value: Any, where: str, fields: tuple[str, ...] | None = None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WireError(where, "must be a JSON object")
    if fields is not None:
        for key in value:
            if key not in fields:
                prefix = "" if where == "body" else f"{where}."
                raise WireError(f"{prefix}{key}", f"is not a field of this object (known: {', '.join(fields)})")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise WireError(where, "must be a JSON array")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise WireError(where, "must be a string" if value is not None else "is required (a string)")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    return tuple(_string(item, f"{where}[{i}]") for i, item in enumerate(_list(value, where)))


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise WireError(where, "must be true or false")
    return value


def _positive_int(body: dict[str, Any], name: str, default: int) -> int:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise WireError(name, "must be a whole number, 1 or more")
    return value


def _style(value: Any) -> str:
    if value not in STYLES:
        raise WireError("style", f"must be one of {', '.join(STYLES)}")
    return value
