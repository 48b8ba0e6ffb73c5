"""The sandbox as its own HTTP service (`toolsmith sandbox`, docs/sandbox.md and docs/cli.md).

It owns the service's HTTP surface around any `Sandbox`: the shared-secret check, the capability
profile a call asks for, the session cap answered at once with 429, the body cap, and one
structured log line per call. The wire format is `sandbox.wire`'s; errors are RFC 9457 problems
shaped like the API's. A call's own failure (a syntax error, a timeout, …) is a 200 whose result
carries the error: only the service's refusals are HTTP errors.

    POST /v1/run, POST /v1/check   body: an execution; answer: its result
    POST /v1/check-then-run        body: {"execution", "inputs"}; answer: {"check", "runs"}: the
                                   check, then (if it passed) a run per input, in one session and
                                   one visit to a worker (`Sandbox.check_then_run`)
        Authorization: Bearer <secret>     required unless the service runs in insecure dev mode
        X-Sandbox-Caller: <name>           recorded in the log (default "unknown")
        X-Sandbox-Profile: <profile>       capabilities to grant (default: the configured profile)
        X-Sandbox-Priority: background     a background execution (a tenant's sessions beyond its
                                           first few, docs/tenants.md: it yields the CPU entirely once
                                           it runs long); anything else: normal
        X-Sandbox-Service-Log: off         the module's log lines are not written to this service's
                                           log (its caller writes them, redacted: an API URL tool's
                                           post-processing, issue 28); anything else: written
        X-Sandbox-Events: stream           (a run) its log lines and progress as they happen, as
                                           NDJSON once the first one comes (`sandbox.wire`)
    GET /healthz                           no credentials; the session cap, the parallelism (the
                                           worker processes kept running) and the profile names
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import json
import logging
import threading
import time
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.problems import problem
from domain.errors import SandboxBusy, SandboxUnavailable
from domain.ports import Sandbox
from domain.values import MAX_DEPTH, too_deep
from sandbox.capabilities import PROFILES, UnknownProfile, profile
from sandbox.config import SandboxConfig
from sandbox.embedded import EmbeddedSandbox
from sandbox.wire import (
    BACKGROUND, CALLER_HEADER, EVENTS_HEADER, EVENTS_MEDIA_TYPE, EVENTS_STREAM, PRIORITY_HEADER, PROFILE_HEADER, SERVICE_LOG_HEADER,
    SERVICE_LOG_OFF, WireError, check_then_run_from_wire, event_line, execution_from_wire, outcomes_to_wire, result_to_wire, to_json,
)

log = logging.getLogger("toolsmith.entrypoints.sandbox_service")

MAX_BODY_BYTES = 4 * 1024 * 1024
BUSY_DETAIL = "every sandbox session is busy; try again later"
_MAX_LOGGED_CHARS = 64


class _BodyTooLarge(Exception):
    pass


class _Sessions:
    """Counts the calls in flight, so that one over the cap is refused before it needs a thread.

    Only touched on the event loop, between awaits, so a plain counter is enough.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0

    def try_enter(self) -> bool:
        if self.active >= self.limit:
            return False
        self.active += 1
        return True

    def leave(self) -> None:
        self.active -= 1


def create_sandbox_app(
    sandbox: Sandbox,
    *,
    secret: str | None,
    insecure: bool = False,
    config: SandboxConfig | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> FastAPI:
    """The service around `sandbox`. `config` is what the sandbox was built from (its session cap and
    default profile; by default the sandbox's own `config`, if it has one). Without a secret,
    `insecure=True` is required: calls are then accepted unchecked."""
    own = getattr(sandbox, "config", None)
    config = config or (own if isinstance(own, SandboxConfig) else SandboxConfig())
    expected = secret.encode("utf-8") if secret else None
    if expected is None and not insecure:
        raise ValueError("the sandbox service needs a secret, or insecure=True for development")
    default_profile = config.capability_profile
    profile(default_profile)  # an unknown configured profile fails here, at start
    sessions = _Sessions(config.max_active_sessions)
    # One thread per admitted call: the sessions gate keeps the count within the cap.
    threads = anyio.CapacityLimiter(config.max_active_sessions)
    running_runs: set[asyncio.Future[Any]] = set()  # the streamed runs, held until they end

    app = FastAPI(title="Toolsmith sandbox", version="1", docs_url=None, redoc_url=None, openapi_url=None)

    def authorized(request: Request) -> bool:
        if expected is None:
            return True
        scheme, _, presented = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            presented = ""
        # Starlette decodes header bytes as latin-1: encoding back gives the bytes that were sent.
        return hmac.compare_digest(presented.strip().encode("latin-1"), expected)

    async def call(request: Request, mode: str) -> Response:
        caller = _printable(request.headers.get(CALLER_HEADER), "unknown")
        profile_name = request.headers.get(PROFILE_HEADER) or default_profile
        started = time.perf_counter()

        def record(outcome: str, module: str | None = None, level: int = logging.INFO) -> None:
            log.log(level, "sandbox call", extra={
                "caller": caller, "codeModule": module, "mode": mode, "profile": _printable(profile_name, ""),
                "durationMillis": round((time.perf_counter() - started) * 1000, 3), "outcome": outcome,
            })

        if not authorized(request):
            reason = "missing-credentials" if "authorization" not in request.headers else "wrong-secret"
            record(f"refused:{reason}", level=logging.WARNING)
            detail = "this call needs Authorization: Bearer <the sandbox's shared secret>"
            return problem(401, "unauthorized", detail, headers={"WWW-Authenticate": "Bearer"})
        try:
            capabilities = profile(profile_name)
        except UnknownProfile as e:
            record("bad-request:profile")
            return problem(400, "unknown-profile", f"{PROFILE_HEADER}: {e}", header=PROFILE_HEADER)
        try:
            body = await _read_body(request, max_body_bytes)
        except _BodyTooLarge:
            record("bad-request:too-large")
            return problem(413, "body-too-large", f"the request body is larger than {max_body_bytes} bytes")
        visit = mode == "check-then-run"
        try:
            parsed = json.loads(body)
            # The body's own object (and a visit's execution and inputs), then an input or context of MAX_DEPTH.
            if too_deep(parsed, MAX_DEPTH + (2 if visit else 1)):
                raise RecursionError
            if visit:
                execution, inputs = check_then_run_from_wire(parsed)
            else:
                execution, inputs = execution_from_wire(parsed), []
        except WireError as e:
            record("bad-request:body")
            return problem(400, "invalid-execution", str(e), field=e.field)
        except RecursionError:  # the reader's own depth guard, or `too_deep`
            record("bad-request:too-deep")
            detail = f"the body nests objects and arrays deeper than {MAX_DEPTH} levels (in input, context or units)"
            return problem(400, "too-deep", detail, field="body")
        except ValueError as e:  # not JSON, or not UTF-8
            record("bad-request:json")
            return problem(400, "malformed-json", f"the body is not valid JSON: {e}", field="body")
        module = execution.target.name
        if request.headers.get(PRIORITY_HEADER, "").strip().lower() == BACKGROUND:
            execution = dataclasses.replace(execution, background=True)
        if request.headers.get(SERVICE_LOG_HEADER, "").strip().lower() == SERVICE_LOG_OFF:
            execution = dataclasses.replace(execution, service_log=False)
        if not sessions.try_enter():
            record("busy", module)
            return _busy(sessions.limit)
        if mode == "run" and request.headers.get(EVENTS_HEADER, "").strip().lower() == EVENTS_STREAM:
            return await streamed_run(execution, capabilities, module, record)
        try:
            if mode == "run" and isinstance(sandbox, EmbeddedSandbox):
                # A run's answer is awaited on the loop (sandbox.embedded: `arun`), without a thread.
                answer = await sandbox.arun(execution, capabilities=capabilities)
            else:
                if visit:
                    work = partial(sandbox.check_then_run, execution, inputs, capabilities=capabilities)
                else:
                    work = partial(sandbox.check if mode == "check" else sandbox.run, execution, capabilities=capabilities)
                answer = await anyio.to_thread.run_sync(work, limiter=threads)
        except SandboxBusy as e:
            record("busy", module)
            return _busy(e.limit)
        except SandboxUnavailable as e:
            record("unavailable", module, logging.ERROR)
            return problem(503, "sandbox-unavailable", e.detail)
        finally:
            sessions.leave()
        if visit:
            checked, runs = answer
            failed = next((r.error.type for r in (checked, *runs) if r.error is not None), None)
            record(failed or "ok", module)
            return Response(to_json(outcomes_to_wire(checked, runs)), media_type="application/json")
        record(answer.error.type if answer.error else "ok", module)
        return Response(to_json(result_to_wire(answer)), media_type="application/json")

    async def streamed_run(execution: Any, capabilities: Any, module: str, record: Any) -> Response:
        """A run told as it goes (`X-Sandbox-Events: stream`): the plain answer if it ends before
        telling anything, else NDJSON from its first event on (`sandbox.wire`). Its session is held
        until the run ends, whether or not the caller still reads."""
        loop = asyncio.get_running_loop()
        on_loop = threading.get_ident()
        told: asyncio.Queue[bytes] = asyncio.Queue()  # bounded by the sandbox: its log cap, progress at most 20 a second

        def tell(kind: str, payload: Any) -> None:
            line = event_line(kind, payload)
            if line is None:
                return
            if threading.get_ident() == on_loop:
                told.put_nowait(line)
            else:
                loop.call_soon_threadsafe(told.put_nowait, line)

        execution = dataclasses.replace(execution, events=tell)

        async def execute() -> Any:
            try:
                if isinstance(sandbox, EmbeddedSandbox):
                    return await sandbox.arun(execution, capabilities=capabilities)
                return await anyio.to_thread.run_sync(partial(sandbox.run, execution, capabilities=capabilities), limiter=threads)
            finally:
                sessions.leave()

        running = asyncio.ensure_future(execute())
        running_runs.add(running)
        running.add_done_callback(running_runs.discard)
        first = asyncio.ensure_future(told.get())
        await asyncio.wait((running, first), return_when=asyncio.FIRST_COMPLETED)
        if not first.done():
            first.cancel()
            try:
                answer = running.result()
            except SandboxBusy as e:
                record("busy", module)
                return _busy(e.limit)
            except SandboxUnavailable as e:
                record("unavailable", module, logging.ERROR)
                return problem(503, "sandbox-unavailable", e.detail)
            record(answer.error.type if answer.error else "ok", module)
            return Response(to_json(result_to_wire(answer)), media_type="application/json")

        async def lines() -> AsyncIterator[bytes]:
            outcome = "gone"  # the caller stopped reading before the end
            try:
                yield first.result()
                while True:
                    while not told.empty():
                        yield told.get_nowait()
                    if running.done():
                        break
                    waiting = asyncio.ensure_future(told.get())
                    await asyncio.wait((running, waiting), return_when=asyncio.FIRST_COMPLETED)
                    if waiting.done():
                        yield waiting.result()
                    else:
                        waiting.cancel()
                try:
                    answer = running.result()
                except (SandboxBusy, SandboxUnavailable) as e:
                    outcome = "unavailable"
                    yield to_json({"problem": {"status": 503, "detail": e.detail if isinstance(e, SandboxUnavailable) else BUSY_DETAIL}}) + b"\n"
                else:
                    outcome = answer.error.type if answer.error else "ok"
                    yield to_json({"result": result_to_wire(answer)}) + b"\n"
            finally:
                record(outcome, module, logging.ERROR if outcome == "unavailable" else logging.INFO)

        return StreamingResponse(lines(), media_type=EVENTS_MEDIA_TYPE)

    @app.post("/v1/run")
    async def run(request: Request) -> Response:
        """Runs an execution: the target's `exports.run(input)`, or the script."""
        return await call(request, "run")

    @app.post("/v1/check")
    async def check(request: Request) -> Response:
        """Loads an execution's bundle without calling it, and checks its links."""
        return await call(request, "check")

    @app.post("/v1/check-then-run")
    async def check_then_run(request: Request) -> Response:
        """Checks an execution's bundle, then, if it passed, runs it once per input, each in a fresh context."""
        return await call(request, "check-then-run")

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        """Liveness, the session cap, the parallelism and the capability profiles; needs no credentials."""
        return {
            "status": "ok",
            "maxActiveSessions": sessions.limit,
            "activeSessions": sessions.active,
            "parallelism": min(sandbox.parallelism(), sessions.limit),
            "profiles": list(PROFILES),
            "defaultProfile": default_profile,
        }

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, error: StarletteHTTPException) -> JSONResponse:
        code = {404: "not-found", 405: "method-not-allowed"}.get(error.status_code, "http-error")
        detail = error.detail if isinstance(error.detail, str) else "error"
        return problem(error.status_code, code, detail, headers=getattr(error, "headers", None))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.error("unhandled error", exc_info=error, extra={"path": request.url.path})
        return problem(500, "internal-error", "the sandbox service failed to handle this call; it has been logged")

    return app


def _busy(limit: int) -> JSONResponse:
    return problem(429, "sandbox-busy", BUSY_DETAIL, headers={"Retry-After": "1"}, maxActiveSessions=limit)


def _printable(header: str | None, default: str) -> str:
    """A header's value as it may appear in a log line: printable and short."""
    value = (header or "").strip()[:_MAX_LOGGED_CHARS]
    return "".join(ch if ch.isprintable() else "?" for ch in value) or default


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _BodyTooLarge
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _BodyTooLarge
    return bytes(body)
