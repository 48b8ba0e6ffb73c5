"""One QuickJS evaluation, inside a worker process (DESIGN §5, "What the Python binding allows").

Design (b) of the hardening issue: no engine time limit, so the context may call into Python —
`Intl` formats with Babel, `http.fetch` performs its request in Python, `log` and `ai.context()`
hand strings across — and the wall-clock deadline is enforced from outside, by the supervisor
killing the worker (`sandbox.embedded`). The engine's own time limit counts the process's CPU
time, not the caller's wall clock, so it could not be the deadline anyway.

All of it goes through one callable, `$host(kind, payload)`, which takes and returns strings only
and never raises into the engine (a raise leaves the binding in a `SystemError`) nor calls back
into it (a re-entrant call from a host function aborts the interpreter): whatever goes wrong
becomes an error value that the JavaScript side throws as its own error.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable

import _quickjs

from sandbox.bundle import MAX_LOG_CHARS, MAX_LOG_LINES

log = logging.getLogger("toolsmith.sandbox")

STACK_BYTES = 1024 * 1024
DEFAULT_MEMORY_MB = 128
_NOT_AVAILABLE = json.dumps({"error": "http.fetch is not available in this sandbox's capability profile"})
_UNKNOWN = json.dumps({"error": ["TypeError", "unknown host call"]})
_FAILED = json.dumps({"error": ["Error", "the sandbox could not complete this call"]})
# The settled value or reason of a promise `run` returned, into `$v` / `$x`.
_AWAIT = "$v.then(function(v){$v=v;$d=1},function(e){$x=e;$d=2}),$d=0"
_REASON = "(function(e){try{return e&&e.name?e.name+': '+e.message:String(e)}catch(x){return 'an unprintable value was thrown'}})($x)"


def _sources() -> dict[str, str]:
    from sandbox.intl import INTL_JS, LOCALE_JS
    from sandbox.net import FETCH_JS

    return {"intl": INTL_JS, "locale": LOCALE_JS, "fetch": FETCH_JS}


class Engine:
    """Makes fresh contexts and evaluates programs in them; one call at a time."""

    def __init__(self, fetch: Callable[[str, float], str] | None = None, emit: Callable[[str], None] | None = None) -> None:
        """`emit`, when given, receives each log line as it is written (the worker streams them to
        the supervisor, so a call killed at its deadline keeps what it logged); otherwise the
        lines are part of the answer."""
        from sandbox.intl import intl_call

        self._sources = _sources()
        self._intl = intl_call
        self._fetch = fetch
        self._deadline = 0.0
        self._http = False
        self._context_json = "{}"
        self._logs: list[str] = []
        self._logged = 0
        self._emit = emit

    def fresh(self) -> _quickjs.Context:
        """A context for the next call, with the stack cap and the usual memory cap set."""
        context = _quickjs.Context()
        context.set_max_stack_size(STACK_BYTES)
        context.set_memory_limit(DEFAULT_MEMORY_MB * 1024 * 1024)
        return context

    def evaluate(
        self,
        context: _quickjs.Context,
        program: str,
        *,
        kind: str,
        memory_mb: int,
        host: bool = True,
        deadline: float,
        http: bool,
        context_json: str = "{}",
    ) -> str:
        """Runs `program` and answers the JSON the supervisor reads: `[1, value, logs]`,
        `[0, type, message, logs]`, or `[tag, message, logs]` for what escaped the program."""
        self._deadline, self._http, self._context_json, self._logs, self._logged = deadline, http, context_json, [], 0
        if memory_mb != DEFAULT_MEMORY_MB:
            context.set_memory_limit(memory_mb * 1024 * 1024)
        if host:
            context.add_callable("$host", self._host)
        try:
            try:
                outcome = context.eval(program)
            except (TypeError, UnicodeError):
                if kind != "value":
                    raise
                outcome = _read_value(context)
            if kind == "json":
                if not isinstance(outcome, str):
                    return self._answer("refused", "the program ended without a result")
                return outcome[:-1] + "," + json.dumps(self._logs) + "]"
            return self._value(context, outcome)
        except _quickjs.StackOverflow as e:
            return self._answer("stack", str(e))
        except _quickjs.JSException as e:
            if kind == "value" and str(e).startswith("TypeError: not a function") and _no_run(context):
                return json.dumps([0, "runtime", "TypeError: the module does not assign a function to exports.run", self._logs])
            return self._answer("escaped", str(e))
        except MemoryError:
            return self._answer("memory", "")
        except TypeError:  # a value the binding cannot convert: a BigInt
            return json.dumps([0, "result", f"the result is a {_type_of_value(context)}, which is not JSON", self._logs])
        except (ValueError, SystemError) as e:  # the binding refusing its input, never the caller's fault
            return self._answer("refused", str(e))

    def _value(self, context: _quickjs.Context, value: object) -> str:
        """`run`'s result, awaited if it is a promise, as JSON written by the engine."""
        if isinstance(value, _quickjs.Object) and context.eval("$v instanceof Promise"):
            context.eval(_AWAIT)
            while context.execute_pending_job():
                pass
            state = context.eval("$d")
            if state == 0:
                return self._answer("never", "")
            if state == 2:
                return json.dumps([0, "", context.eval(_REASON), self._logs])
            value = _read_value(context)
        if isinstance(value, _quickjs.Object):
            try:
                text = value.json()
            except _quickjs.JSException as e:
                return json.dumps([0, "result", f"the result is not JSON: {_first_line(str(e))}", self._logs])
            if text is None:
                return json.dumps([0, "result", f"the result is a {context.eval('typeof $v')}, which is not JSON", self._logs])
            return f"[1,{text},{json.dumps(self._logs)}]"
        if isinstance(value, float) and not math.isfinite(value):
            value = None  # as JSON.stringify writes it
        return json.dumps([1, value, self._logs])

    def _answer(self, tag: str, message: str) -> str:
        return json.dumps([tag, message, self._logs])

    def _host(self, *args: object) -> str | None:
        """The one way from JavaScript into Python. Never raises into the engine."""
        try:
            kind = args[0] if args else None
            payload = args[1] if len(args) > 1 else None
            if kind == "l":
                if self._logged < MAX_LOG_LINES and isinstance(payload, str):
                    self._logged += 1
                    if self._emit is not None:
                        self._emit(payload[:MAX_LOG_CHARS])
                    else:
                        self._logs.append(payload[:MAX_LOG_CHARS])
                return None
            if kind == "c":
                return self._context_json
            if kind == "i":
                return self._intl(payload)
            if kind == "f":
                if not self._http or self._fetch is None:
                    return _NOT_AVAILABLE
                return self._fetch(payload, self._deadline - time.monotonic())
            if kind == "s" and isinstance(payload, str):
                return self._sources.get(payload, "undefined")
            return _UNKNOWN
        except BaseException as e:  # noqa: BLE001 - see the docstring
            log.warning("host function failed", extra={"reason": repr(e)[:200]})
            return _FAILED


def _read_value(context: _quickjs.Context) -> object:
    """`$v` as Python reads it. A string the binding cannot hand over as it is (a rope, which
    quickjs-ng makes by concatenation, or one with a lone surrogate) is flattened and made well
    formed first; a BigInt still raises `TypeError`."""
    return context.eval("typeof $v=='string'?$v.slice(0).toWellFormed():$v")


def _type_of_value(context: _quickjs.Context) -> str:
    try:
        kind = context.eval("typeof $v")
        return kind if isinstance(kind, str) else "value"
    except Exception:  # noqa: BLE001 - only words for a message
        return "value"


def _no_run(context: _quickjs.Context) -> bool:
    """Whether the target (the last module the program defined) lacks `exports.run`."""
    try:
        return context.eval("(function(k){return typeof $m[k[k.length-1]].run!='function'})(Object.keys($m))") is True
    except Exception:  # noqa: BLE001 - then the original error stands
        return False


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]
