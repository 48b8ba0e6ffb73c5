"""One QuickJS evaluation, inside a worker process (docs/javascript.md, "What the Python binding allows").

Design (b) of the hardening issue: no engine time limit, so the context may call into Python —
`Intl` formats with Babel, `http.fetch` performs its request in Python, `log` and `ai.context()`
hand strings across — and the wall-clock deadline is enforced from outside, by the supervisor
killing the worker (`sandbox.embedded`). The engine's own time limit counts the process's CPU
time, not the caller's wall clock, so it could not be the deadline anyway.

All of it goes through one callable, `$host(kind, payload)`, which takes and returns strings only
and never raises into the engine (a raise leaves the binding in a `SystemError`) nor calls back
into it (a re-entrant call from a host function aborts the interpreter): whatever goes wrong
becomes an error value that the JavaScript side throws as its own error. It serves only what the
call's capability profile grants (`grants`), whatever program calls it, and refuses payloads over
the caps the harness enforces first (`sandbox.bundle.HOST_PAYLOAD_CHARS`).

A result is written by the engine's own `JSON.stringify`, primitives included: the supervisor
reads exact JSON of the JavaScript value (a NUL stays in a string, `2**31` is a whole number).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from typing import Any

import _quickjs

from domain.values import well_formed
from sandbox.bundle import HOST_PAYLOAD_CHARS, MAX_LOG_CHARS, MAX_LOG_LINES

# What a call's capability profile grants, as the bits of one byte in its frame; `HOST`: the
# program uses the host function at all. The worker's host function serves nothing else.
HOST, LOG, CONTEXT, INTL, HTTP = 1, 2, 4, 8, 16

log = logging.getLogger("toolsmith.sandbox")

STACK_BYTES = 1024 * 1024
DEFAULT_MEMORY_MB = 128
# The most a result may weigh, in characters of JSON: it crosses into the worker's heap, then into
# the service's, so the worker's memory bound sizes its allowance from it.
MAX_RESULT_CHARS = 8 * 1024 * 1024
# `ai.progress` (docs/javascript.md, "Progress"): at most one notification per PROGRESS_INTERVAL
# seconds and MAX_PROGRESS per call, each with a `done` greater than the last (MCP: progress
# increases). One that comes too soon is held, replaced by any later one, and sent when the
# interval has passed at the next call of ai.progress, or when the program ends; the one that
# reaches its total goes at once. A loop that reports every item thus costs the client at most
# twenty notifications a second, and the last state is never lost.
PROGRESS_INTERVAL = 0.05
MAX_PROGRESS = 200


_NOT_AVAILABLE = json.dumps({"error": "http.fetch is not available in this sandbox's capability profile"})
_WITHHELD = json.dumps({"error": ["TypeError", "this capability is not available in this sandbox's capability profile"]})
_TOO_LARGE = json.dumps({"error": ["RangeError", "the sandbox refuses a host call payload this large"]})
_UNKNOWN = json.dumps({"error": ["TypeError", "unknown host call"]})
_FAILED = json.dumps({"error": ["Error", "the sandbox could not complete this call"]})
# The binding's own text when it cannot turn a thrown value into a string (a Proxy whose traps
# throw, a revoked Proxy, an object whose name, message or toString throws). A value the program
# throws always comes with its stack on a second line, so this exact text is the binding's.
_BINDING_UNREADABLE = "(Failed obtaining QuickJS error string. Concurrency issue?)"
UNREADABLE = "the code threw a value that cannot be read as an error (a Proxy, or an object whose name, message or toString throws)"
# The settled value or reason of a promise `run` returned, into `$v` / `$x`.
_AWAIT = "$v.then(function(v){$v=v;$d=1},function(e){$x=e;$d=2}),$d=0"
_REASON = (
    "(function(e){try{if(typeof e=='unknown')return 'InternalError: out of memory';"
    "return (e&&e.name?e.name+': '+e.message:String(e)).toWellFormed()}catch(x){return %s}})($x)" % json.dumps(UNREADABLE)
)
# What `run` threw (kept in `$x` by the call's program), as the binding reads it (`String`), inside an
# array so that the engine's own JSON.stringify writes it (`_exact`): a NUL in it stays.
_THROWN = "typeof $x=='unknown'?'[uninitialized]':String($x)"
# `$v` as JSON: an object (or array) by the engine's own JSON.stringify, reached from Python (so a
# program that replaces the global JSON.stringify changes nothing); a string inside an array, the
# binding's own conversion of a string stopping at a NUL; a number as JSON.stringify writes its
# value (a whole number below 1e21 as an integer).
_STRING_JSON = "[$v]"


def _sources() -> dict[str, str]:
    from sandbox.intl import INTL_JS, LOCALE_JS
    from sandbox.net import FETCH_JS

    return {"intl": INTL_JS, "locale": LOCALE_JS, "fetch": FETCH_JS}


class Engine:
    """Makes fresh contexts and evaluates programs in them; one call at a time."""

    def __init__(self, fetch: Callable[[str, float], str] | None = None, emit: Callable[[str], None] | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        """`emit`, when given, receives each log line as it is written (the worker streams them to
        the supervisor, so a call killed at its deadline keeps what it logged); otherwise the
        lines are part of the answer."""
        from sandbox.intl import intl_call

        self._sources = _sources()
        self._intl = intl_call
        self._fetch = fetch
        self._deadline = 0.0
        self._grants = 0
        self._context_json = "{}"
        self._logs: list[str] = []
        self._logged = 0
        self._emit = emit
        # `progress`, when given, receives each ai.progress report let through, as its JSON array.
        self._progress = progress
        self._progress_state: list[Any] = [None, 0.0, 0, None]  # last done, last sent at, sent, held
        # Python ran out of memory during the call (the worker's process bound): whatever the
        # program made of it, the call's answer is a memory error.
        self.exhausted = False

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
        grants: int = HOST | LOG | CONTEXT | INTL | HTTP,
        deadline: float,
        context_json: str = "{}",
    ) -> str:
        """Runs `program` and answers the JSON the supervisor reads: `[1, value, logs]`,
        `[0, type, message, logs]`, or `[tag, message, logs]` for what escaped the program."""
        self._deadline, self._grants, self._context_json, self._logs, self._logged = deadline, grants, context_json, [], 0
        self._progress_state = [None, 0.0, 0, None]
        self.exhausted = False
        answer = self._evaluate(context, program, kind, memory_mb, grants)
        return self._answer("memory", "") if self.exhausted else answer

    def _evaluate(self, context: _quickjs.Context, program: str, kind: str, memory_mb: int, grants: int) -> str:
        if memory_mb != DEFAULT_MEMORY_MB:
            context.set_memory_limit(memory_mb * 1024 * 1024)
        if grants & HOST:
            context.add_callable("$host", self._host)
        try:
            try:
                outcome = context.eval(program)
            except (TypeError, UnicodeError):
                if kind != "value":
                    raise
                return self._value(context, None, readable=False)
            if kind == "json":
                if not isinstance(outcome, str):
                    return self._answer("refused", "the program ended without a result")
                if len(outcome) > MAX_RESULT_CHARS + 8:  # `[1,` … `]` around the value
                    return json.dumps([0, "result", f"the result is larger than {MAX_RESULT_CHARS} characters of JSON", self._logs])
                return outcome[:-1] + "," + json.dumps(self._logs) + "]"
            if kind == "check":
                return json.dumps([1, outcome if isinstance(outcome, str) else None, self._logs])
            return self._value(context, outcome)
        except _quickjs.StackOverflow as e:
            return self._answer("stack", str(e))
        except _quickjs.JSException as e:
            text = str(e)
            if text == _BINDING_UNREADABLE:
                return json.dumps([0, "runtime", UNREADABLE, self._logs])
            if kind == "value" and text.startswith("TypeError: not a function") and _no_run(context):
                return json.dumps([0, "runtime", "TypeError: the module does not assign a function to exports.run", self._logs])
            exact = self._thrown(context, text) if kind == "value" else None
            if exact is not None:
                return json.dumps(["escaped", text, self._logs, exact])
            return self._answer("escaped", text)
        except MemoryError:
            self.exhausted = True
            return self._answer("memory", "")
        except (ValueError, SystemError, TypeError) as e:  # the binding refusing its input, never the caller's fault
            return self._answer("refused", str(e))

    def _value(self, context: _quickjs.Context, value: object, readable: bool = True) -> str:
        """`run`'s result (`value`, `$v` as the binding read it; not `readable`: the binding could
        not read it), awaited if it is a promise, as JSON written by the engine: an object by
        JSON.stringify, a string inside an array by JSON.stringify (the binding's own reading of a
        string stops at a NUL), a number as JSON.stringify writes it (2**31 stays whole)."""
        if isinstance(value, _quickjs.Object) and context.eval("$v instanceof Promise"):
            context.eval(_AWAIT)
            while context.execute_pending_job():
                pass
            state = context.eval("$d")
            if state == 0:
                return self._answer("never", "")
            if state == 2:
                return json.dumps([0, "", _exact(context, _REASON), self._logs])
            try:
                value = context.get("$v")
            except (TypeError, UnicodeError):
                readable = False
        try:
            if not readable:  # a string the binding cannot hand over as it is, or a BigInt, a Symbol
                kind = context.eval("typeof $v")
                if kind != "string":
                    return json.dumps([0, "result", f"the result is a {kind}, which is not JSON", self._logs])
                value = ""
            if isinstance(value, _quickjs.Object):
                text = value.json()
                if text is None:  # a function, or an object whose toJSON gives undefined
                    return json.dumps([0, "result", f"the result is a {context.eval('typeof $v')}, which is not JSON", self._logs])
            elif isinstance(value, str):
                if len(value) > MAX_RESULT_CHARS:
                    return self._too_large()
                text = context.eval(_STRING_JSON).json()  # exact, NUL and lone surrogates included
                if text[:1] != "[" or text[-1:] != "]":
                    return json.dumps([0, "result", "the result is a string JSON.stringify does not write", self._logs])
                text = text[1:-1]
            else:
                text = _primitive_json(value)
        except _quickjs.StackOverflow:
            return json.dumps([0, "result", "the result is nested too deeply to be written as JSON", self._logs])
        except _quickjs.JSException as e:
            message = _first_line(str(e))
            if "out of memory" in message:
                return self._answer("memory", "")
            if "stack overflow" in message or "call stack" in message:
                return json.dumps([0, "result", "the result is nested too deeply to be written as JSON", self._logs])
            return json.dumps([0, "result", f"the result is not JSON: {message}", self._logs])
        if len(text) > MAX_RESULT_CHARS:
            return self._too_large()
        return f"[1,{text},{json.dumps(self._logs) if self._logs else '[]'}]"

    def _thrown(self, context: _quickjs.Context, text: str) -> str | None:
        """The exact text of the value `run` threw, when the binding's `text` is a cut of it (at a
        NUL, or at a line break): read again through the engine's JSON.stringify, and taken only if
        it is what the binding read up to where its reading stops. None when `text` is whole, when
        the engine is out of memory, or when the value cannot be read again."""
        first = _first_line(text)
        if "out of memory" in first or first == "[uninitialized]":
            return None
        try:
            message = _exact(context, _THROWN)
        except MemoryError:
            self.exhausted = True
            return None
        except Exception:  # noqa: BLE001 - the binding's text stands
            return None
        if message == first or _as_the_binding_reads(message) != first:
            return None
        return message

    def _too_large(self) -> str:
        return json.dumps([0, "result", f"the result is larger than {MAX_RESULT_CHARS} characters of JSON", self._logs])

    def _answer(self, tag: str, message: str) -> str:
        return json.dumps([tag, message, self._logs])

    def _host(self, *args: object) -> str | None:
        """The one way from JavaScript into Python. Never raises into the engine. Refuses every
        kind the call's capability profile withholds, whoever calls it."""
        try:
            kind = args[0] if args else None
            payload = args[1] if len(args) > 1 else None
            if isinstance(payload, str) and len(payload) > HOST_PAYLOAD_CHARS.get(kind, 0):  # type: ignore[arg-type]
                return _TOO_LARGE
            grants = self._grants
            if kind == "l":
                if grants & LOG and self._logged < MAX_LOG_LINES and isinstance(payload, str):
                    line = _log_line(payload)
                    if line is None:
                        return None
                    self._logged += 1
                    if self._emit is not None:
                        self._emit(line)
                    else:
                        self._logs.append(line)
                return None
            if kind == "p":
                if grants & LOG and self._progress is not None and isinstance(payload, str):
                    self._progressed(payload)
                return None
            if kind == "c":
                return self._context_json if grants & CONTEXT else _WITHHELD
            if kind == "i":
                return self._intl(payload) if grants & INTL else _WITHHELD
            if kind == "f":
                if not grants & HTTP or self._fetch is None:
                    return _NOT_AVAILABLE
                return self._fetch(payload, self._deadline - time.monotonic())
            if kind == "s" and isinstance(payload, str):
                granted = grants & HTTP if payload == "fetch" else grants & INTL
                return self._sources.get(payload, "undefined") if granted else "undefined"
            return _UNKNOWN
        except MemoryError:
            self.exhausted = True
            return _FAILED
        except BaseException as e:  # noqa: BLE001 - see the docstring
            log.warning("host function failed", extra={"reason": repr(e)[:200]})
            return _FAILED


    def _progressed(self, payload: str) -> None:
        """One ai.progress report, let through or held (PROGRESS_INTERVAL, MAX_PROGRESS)."""
        try:
            done, total, message = json.loads(payload)
        except (ValueError, TypeError):
            return
        if not isinstance(done, (int, float)) or isinstance(done, bool):
            return
        state = self._progress_state
        if state[0] is not None and done <= state[0]:
            return  # MCP: a report's progress is greater than the one before
        state[0] = done
        now = time.monotonic()
        final = isinstance(total, (int, float)) and done >= total
        if not final and (now - state[1] < PROGRESS_INTERVAL or state[2] >= MAX_PROGRESS):
            state[3] = payload
            return
        state[1], state[2], state[3] = now, state[2] + 1, None
        self._progress(json.dumps([done, total, message]))

    def flush_progress(self) -> None:
        """Sends the report held back, if any: the program has ended, the last state goes out."""
        state = self._progress_state
        if state[3] is not None and self._progress is not None:
            held, state[3] = state[3], None
            state[2] += 1
            self._progress(held)


def _primitive_json(value: object) -> str:
    """A number, a boolean or undefined as JSON.stringify writes it (NaN and the infinities as
    null, -0 as 0, a whole number below 1e21 without a fraction)."""
    if type(value) is int:
        return str(value)
    if value is None or isinstance(value, (bool, int)):
        return json.dumps(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "null"
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    return "null"


def _no_run(context: _quickjs.Context) -> bool:
    """Whether the target (the last module the program defined) lacks `exports.run`."""
    try:
        return context.eval("(function(k){return typeof $m[k[k.length-1]].run!='function'})(Object.keys($m))") is True
    except Exception:  # noqa: BLE001 - then the original error stands
        return False


def _exact(context: _quickjs.Context, expression: str) -> str:
    """The string `expression` gives, exactly: written by the engine's own JSON.stringify inside an
    array (a NUL stays, a lone surrogate is an escape), not converted by the binding."""
    written = context.eval(f"[{expression}]").json()
    value = json.loads(written)[0] if written else None
    if not isinstance(value, str):
        raise ValueError("not a string")
    return value


def _as_the_binding_reads(text: str) -> str:
    """The first line of `text` as the binding reads a string: up to a NUL, as UTF-8 decoded with
    replacement (a lone surrogate becomes replacement characters)."""
    return _first_line(text.split("\0", 1)[0].encode("utf-8", "surrogatepass").decode("utf-8", "replace"))


def _log_line(payload: str) -> str | None:
    """A log line from the JSON string the harness sends (`sandbox.bundle._LOG`, kind `l`): its first
    MAX_LOG_CHARS characters, well-formed; None for a payload that is not a JSON string."""
    try:
        line = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    return well_formed(line[:MAX_LOG_CHARS]) if isinstance(line, str) else None


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]
