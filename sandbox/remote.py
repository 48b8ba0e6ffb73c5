"""The `Sandbox` port over HTTP: the API's client of a `toolsmith sandbox` service (docs/sandbox.md).

One `httpx.Client` per process keeps connections to the service open between calls. Every call
presents the shared secret, the caller's name and the capability profile (the headers are
`sandbox.wire`'s). What the code does comes back as a result, as from the embedded runner; what
goes wrong with the service becomes the port's errors: `SandboxBusy` when every session is taken
(429), `SandboxUnavailable` when the service cannot be reached, refuses the secret, or fails.
The service's parallelism (how many checks of a publish it is given at once) is what its
`/healthz` says, asked once. A check with runs is one call (`/v1/check-then-run`), one session and
one worker visit on the service; a service from before that call (404) gets the check and each run
as calls of their own, as the port's default does. A background execution is marked with the
priority header (`sandbox.wire`), which a service from before it ignores, and one whose log lines
the service must not write to its log (`Execution.service_log`) with the service-log header.
A run whose caller listens (`Execution.events`: an MCP request's progress and log notifications)
asks the service to tell them as they happen (`X-Sandbox-Events: stream`, `sandbox.wire`), and they
are told to the listener as their lines arrive; a service from before that answers the plain result.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import httpx
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from domain.errors import SandboxBusy, SandboxUnavailable
from domain.ports import Execution, ExecutionError, ExecutionResult, Sandbox
from domain.values import MAX_DEPTH, TOO_DEEP_RESULT, lone_surrogate_at, too_deep, well_formed
from sandbox.capabilities import Capabilities
from sandbox.wire import (
    BACKGROUND, CALLER_HEADER, EVENTS_HEADER, EVENTS_MEDIA_TYPE, EVENTS_STREAM, PRIORITY_HEADER, PROFILE_HEADER, SERVICE_LOG_HEADER,
    SERVICE_LOG_OFF, check_then_run_to_wire, execution_to_wire, outcomes_from_wire, progress_from_wire, result_from_wire, to_json,
)

log = logging.getLogger("toolsmith.sandbox.remote")
_TRACER = trace.get_tracer("toolsmith")


class RemoteSandbox(Sandbox):
    def __init__(
        self,
        url: str,
        *,
        secret: str | None,
        caller_name: str,
        capability_profile: str,
        timeout_margin_seconds: float = 5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        for setting, value in (("CODESANDBOX_SECRET", secret or ""), ("CODESANDBOX_CALLER_NAME", caller_name),
                               ("CODESANDBOX_CAPABILITY_PROFILE", capability_profile)):
            # A header value the HTTP library refuses would put it, secret included, in an error message.
            if not all(" " <= ch <= "~" for ch in value):
                raise ValueError(f"{setting} must be printable ASCII")
        self.url = url.rstrip("/")
        self.capability_profile = capability_profile
        self.timeout_margin_seconds = timeout_margin_seconds
        headers = {CALLER_HEADER: caller_name, "Content-Type": "application/json"}
        if secret:
            headers["Authorization"] = f"Bearer {secret}"
        self._client = httpx.Client(
            base_url=self.url,
            headers=headers,
            trust_env=False,  # no proxy from the environment between the API and its sandbox
            # Idle connections are dropped well before the service's own keep-alive (75 s) ends.
            limits=httpx.Limits(max_connections=100, max_keepalive_connections=32, keepalive_expiry=30),
            transport=transport,
        )
        self._refusal_logged = False
        self._lock = threading.Lock()
        self._parallelism: int | None = None  # the service's, once it has said
        self._visits = True  # until the service answers 404 to /v1/check-then-run

    def __repr__(self) -> str:  # never the headers: they hold the secret
        return f"RemoteSandbox({self.url!r}, profile={self.capability_profile!r})"

    def close(self) -> None:
        self._client.close()

    def run(self, execution: Execution, *, capabilities: Capabilities | None = None) -> ExecutionResult:
        if execution.events is not None:
            return self._told("/v1/run", execution, capabilities)
        return self._call("/v1/run", execution, capabilities)

    def check(self, execution: Execution, *, capabilities: Capabilities | None = None) -> ExecutionResult:
        return self._call("/v1/check", execution, capabilities)

    def check_then_run(
        self, execution: Execution, inputs: Sequence[Any], *, capabilities: Capabilities | None = None,
    ) -> tuple[ExecutionResult, list[ExecutionResult]]:
        if self._visits:
            # The service runs the check and each run one after the other, each within the timeout.
            seconds = execution.timeout_millis / 1000 * (1 + len(inputs)) + self.timeout_margin_seconds
            body = to_json(check_then_run_to_wire(execution, list(inputs)))
            response = self._post("/v1/check-then-run", body, seconds, capabilities, execution)
            if response.status_code != 404:
                return self._outcomes(response)
            self._visits = False
            log.info("the code sandbox has no /v1/check-then-run; checks with runs are separate calls", extra={"sandboxUrl": self.url})
        checked = self.check(execution, capabilities=capabilities)
        if checked.error is not None:
            return checked, []
        return checked, [self.run(dataclasses.replace(execution, input=value), capabilities=capabilities) for value in inputs]

    def parallelism(self) -> int:
        """The service's own figure (`/healthz`), asked the first time a publish needs it; 1 while
        the service cannot be reached (the checks then fail as the service's errors anyway) and
        from a service that does not say."""
        if self._parallelism is None:
            try:
                health = self._client.get("/healthz", timeout=self.timeout_margin_seconds).raise_for_status().json()
            except (httpx.HTTPError, ValueError, RecursionError):
                return 1
            said = health.get("parallelism") if isinstance(health, dict) else None
            self._parallelism = said if isinstance(said, int) and not isinstance(said, bool) and said >= 1 else 1
        return self._parallelism

    def _call(self, path: str, execution: Execution, capabilities: Capabilities | None) -> ExecutionResult:
        # The service clamps the timeout to its own cap, so the call never needs longer than asked.
        seconds = execution.timeout_millis / 1000 + self.timeout_margin_seconds
        response = self._post(path, to_json(execution_to_wire(execution)), seconds, capabilities, execution)
        if response.status_code != 200:
            return self._refused(response)
        try:
            body = response.json()
        except RecursionError:  # nested past the JSON reader's depth: only a result can be
            return ExecutionResult(error=_too_deep())
        except ValueError as e:  # not JSON
            raise SandboxUnavailable(f"the code sandbox at {self.url} answered a malformed result: {e}") from None
        self._refusal_logged = False
        return self._read(body)

    def _told(self, path: str, execution: Execution, capabilities: Capabilities | None) -> ExecutionResult:
        """A run whose events its listener hears as the service tells them (`sandbox.wire`)."""
        seconds = execution.timeout_millis / 1000 + self.timeout_margin_seconds
        deadline = time.monotonic() + seconds
        response = self._post(path, to_json(execution_to_wire(execution)), seconds, capabilities, execution, stream=True)
        try:
            if response.status_code != 200 or not response.headers.get("content-type", "").startswith(EVENTS_MEDIA_TYPE):
                response.read()
                if response.status_code != 200:
                    return self._refused(response)
                return self._result(response.content)
            for line in response.iter_lines():
                if time.monotonic() > deadline:
                    raise SandboxUnavailable(f"the code sandbox at {self.url} did not answer within {seconds:g} s")
                try:
                    message = json.loads(line) if line else None
                except RecursionError:  # nested past the JSON reader's depth: only a result can be
                    return ExecutionResult(error=_too_deep())
                except ValueError:
                    message = None
                if isinstance(message, dict) and "result" in message:
                    self._refusal_logged = False
                    return self._read(message["result"])
                told = _event(message)
                if isinstance(told, str):
                    raise SandboxUnavailable(f"the code sandbox at {self.url} failed the call: {told}")
                if told is not None:
                    _tell(execution, *told)
            raise SandboxUnavailable(f"the code sandbox at {self.url} ended its answer without a result")
        except httpx.TimeoutException:
            raise SandboxUnavailable(f"the code sandbox at {self.url} did not answer within {seconds:g} s") from None
        except httpx.HTTPError as e:
            raise SandboxUnavailable(f"the code sandbox at {self.url} cannot be reached: {_reason(e)}") from None
        finally:
            response.close()

    def _result(self, content: bytes) -> ExecutionResult:
        """A run's result, as a 200's body says it."""
        try:
            body = json.loads(content)
        except RecursionError:  # nested past the JSON reader's depth: only a result can be
            return ExecutionResult(error=_too_deep())
        except ValueError as e:  # not JSON
            raise SandboxUnavailable(f"the code sandbox at {self.url} answered a malformed result: {e}") from None
        self._refusal_logged = False
        return self._read(body)

    def _outcomes(self, response: httpx.Response) -> tuple[ExecutionResult, list[ExecutionResult]]:
        if response.status_code != 200:
            return self._refused(response), []
        try:
            check, runs = outcomes_from_wire(response.json())
        except RecursionError:  # nested past the JSON reader's depth: only a result can be, and it is not named
            return ExecutionResult(error=_too_deep()), []
        except ValueError as e:  # not JSON, or not the wire form (WireError)
            raise SandboxUnavailable(f"the code sandbox at {self.url} answered a malformed result: {e}") from None
        self._refusal_logged = False
        return self._read(check, "check."), [self._read(run, f"runs[{i}].") for i, run in enumerate(runs)]

    def _post(self, path: str, body: bytes, seconds: float, capabilities: Capabilities | None,
              execution: Execution, *, stream: bool = False) -> httpx.Response:
        timeout = httpx.Timeout(seconds, connect=min(seconds, self.timeout_margin_seconds))
        profile = capabilities.name if capabilities is not None else self.capability_profile
        headers = {PROFILE_HEADER: profile}
        if execution.background:
            headers[PRIORITY_HEADER] = BACKGROUND
        if not execution.service_log:
            headers[SERVICE_LOG_HEADER] = SERVICE_LOG_OFF
        if stream:
            headers[EVENTS_HEADER] = EVENTS_STREAM
        # The visit's span (docs/observability.md), inside a recording one: the service queues and
        # runs the program, so its wait is not seen here; `run_ms` is the whole round trip.
        span = _TRACER.start_span("sandbox.visit", attributes={"toolsmith.sandbox": "remote"}) \
            if trace.get_current_span().is_recording() else None
        began = time.perf_counter()
        response = None
        try:
            if stream:  # the body is read by the caller, as it comes
                response = self._client.send(self._client.build_request("POST", path, content=body, headers=headers, timeout=timeout),
                                             stream=True)
            else:
                response = self._client.post(path, content=body, headers=headers, timeout=timeout)
            if span is not None:
                span.set_attribute("http.response.status_code", response.status_code)
            return response
        except httpx.TimeoutException:
            raise SandboxUnavailable(f"the code sandbox at {self.url} did not answer within {seconds:g} s") from None
        except httpx.HTTPError as e:
            raise SandboxUnavailable(f"the code sandbox at {self.url} cannot be reached: {_reason(e)}") from None
        finally:
            if span is not None:
                span.set_attribute("toolsmith.sandbox.run_ms", round((time.perf_counter() - began) * 1000, 3))
                if response is None:
                    span.set_status(StatusCode.ERROR)  # unreachable, or no answer in time
                span.end()

    def _read(self, body: Any, where: str = "") -> ExecutionResult:
        """One result of a 200 answer, as the embedded runner would give it."""
        if isinstance(body, dict) and too_deep(body.get("output"), MAX_DEPTH):
            return ExecutionResult(error=_too_deep())
        try:
            result = result_from_wire(body, where)
        except ValueError as e:  # not the wire form (WireError)
            raise SandboxUnavailable(f"the code sandbox at {self.url} answered a malformed result: {e}") from None
        if lone_surrogate_at([result.output, result.logs, result.error and result.error.message]) is not None:
            # replaced, as the embedded runner does
            error = result.error and dataclasses.replace(result.error, message=well_formed(result.error.message))
            result = dataclasses.replace(result, output=well_formed(result.output), logs=tuple(well_formed(list(result.logs))), error=error)
        return result

    def _refused(self, response: httpx.Response) -> ExecutionResult:
        """What an answer other than 200 means: a port error, or (413) the bundle's own result."""
        status = response.status_code
        if status == 429:
            limit = _problem(response).get("maxActiveSessions")
            raise SandboxBusy(limit if isinstance(limit, int) else 0)
        if status == 401:
            self._log_refusal_once()
            raise SandboxUnavailable(f"the code sandbox at {self.url} refused the shared secret; check CODESANDBOX_SECRET")
        if status == 413:
            # The bundle itself is too large: an outcome of the code, as the port wants it, not an outage.
            detail = _problem(response).get("detail", "the bundle is too large")
            return ExecutionResult(error=ExecutionError("runtime", f"the code sandbox refused the bundle: {detail}"))
        detail = _problem(response).get("detail") or response.reason_phrase
        raise SandboxUnavailable(f"the code sandbox at {self.url} answered {status}: {detail}")

    def _log_refusal_once(self) -> None:
        with self._lock:
            if self._refusal_logged:
                return
            self._refusal_logged = True
        log.error("the code sandbox refused the shared secret; every call will fail until CODESANDBOX_SECRET matches",
                  extra={"sandboxUrl": self.url})


def _event(message: Any) -> tuple[str, Any] | str | None:
    """A streamed answer's line (but its result): (kind, payload) of an event, the detail of a
    problem (a text), or None for a line it does not know (a later service's)."""
    if not isinstance(message, dict):
        return None
    if isinstance(message.get("log"), str):
        return "log", well_formed(message["log"])
    if "progress" in message:
        progress = progress_from_wire(message["progress"])
        return None if progress is None else ("progress", progress)
    problem = message.get("problem")
    if isinstance(problem, dict):
        detail = problem.get("detail")
        return detail if isinstance(detail, str) else "an error"
    return None


def _tell(execution: Execution, kind: str, payload: Any) -> None:
    """An event of the running call to its listener; its failure is the listener's, never the call's."""
    try:
        execution.events(kind, payload)  # type: ignore[misc]
    except Exception:  # noqa: BLE001
        log.debug("a call's listener failed", exc_info=True)


def _too_deep() -> ExecutionError:
    return ExecutionError("result", TOO_DEEP_RESULT)


def _problem(response: httpx.Response) -> dict:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _reason(error: httpx.HTTPError) -> str:
    return str(error) or type(error).__name__
