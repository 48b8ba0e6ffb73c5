"""API URL tools as a kind of tool (callType API_URL; docs/kinds/index.md, docs/kinds/api-url-tools.md).

A call goes: V1 on the arguments, then the call's own checks (`toolkinds.api_tools.model.call_violations`),
then the request is built — the URL from the template (each path value one encoded segment), the
operator's fixed query, headers and body, the model's header values and body values placed into a
JSON object at their `bodyPath`, the auth — and sent through the one egress path (`Outbound`),
which resolves once, checks every address and every redirect hop, and caps bytes and time (the
request's building is `request`, the OAuth tokens `oauth`). A
non-2xx answer is an error result naming the status; a 2xx answer is extracted (JMESPath within a
budget of what it builds and a deadline, `domain.jmes`, or a published code module's `run(response)`
in the sandbox) and cut at `maxOutputChars` with a marker.

Secrets are read by id for the request that needs them and nowhere else: the request shown back
(the Playground's `test`) has them replaced, and the result leaves `perform` through one redaction
(`domain.redaction`) of every form the call's secrets and access tokens were sent in: its
output, its logs (the post-processing module's, which the sandbox leaves out of the service's log
so that they are written there redacted), its error message and the request shown back. Nothing
after it (REST, the Playground, MCP's `_meta`, the service's log) can see a raw secret (issue 28).

OAuth 2 client credentials follow Authlib's client behaviour: a token is reused until shortly before
it expires (60 s of leeway, or half its lifetime when that is shorter), one fetch at a time per
client, and a 401 from the API drops the token and retries the call once with a new one.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from contextvars import ContextVar
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from application.context import CallContext
from application.kinds.base import Tools, tagged
from application.kinds.configured import ConfiguredKind
from domain import annotations as tool_hints
from domain import jmes
from toolkinds.api_tools.model import API_URL, ApiTool, Config, call_violations, normalise, secret_ids, violations
from domain.catalog import ToolEntry
from domain.errors import InvalidDefinition, InvalidInput, ToolNotCallable, Violation
from domain.ports import ExecutionError, ExecutionResult, OutboundError, OutboundRequest, OutboundResponse
from toolkinds.api_tools.oauth import Tokens
from toolkinds.api_tools.request import RAW_BODY_CHARS, Failed as _Failed, Trace, Used as _Used, build as build_request, secret as read_secret
from domain.rules import input_schema, validate_input
from domain.values import MAX_DEPTH

log = logging.getLogger("toolsmith.api_tools")

# The console's window on the calls made on its behalf (the Playground, through `ApiToolKind.traced`):
# while it holds a list here, each call `perform` makes in this context (and the worker threads it
# hands the call to, which run in a copy of it) appends its redacted Trace. None everywhere else.
TRACES: ContextVar[list[Trace] | None] = ContextVar("api_tool_traces", default=None)

API_TAG = "api"
LABEL = "API URL tool"
CUT_MARKER = "\n[output cut: {shown} of {total} characters shown (maxOutputChars)]"
ERROR_BODY_CHARS = 500


class ApiToolKind(ConfiguredKind[ApiTool]):
    """API URL tools: their configuration is `ConfiguredKind`'s; a call is `perform` (the request from
    `request`, an OAuth token from `oauth`, the answer extracted and cut, everything redacted)."""

    call_type = API_URL
    label = LABEL
    index_name = "api tool index"

    def __init__(self, deps: Any) -> None:
        super().__init__(deps)
        self.tokens = Tokens(self._send, self._secret)

    # -- the configuration (`ConfiguredKind` does the CRUD) -----------------------------------

    def normalise(self, given: dict[str, Any]) -> Config:
        return normalise(given)

    def violations(self, name: str, given: dict[str, Any], config: Config) -> list[Violation]:
        return violations(config)

    def check_references(self, tenant: str, config: Config) -> None:
        """What only the store can say: each secret exists, the post-processing module is a
        published tool module."""
        found = []
        secrets = self.deps.secrets
        for secret in secret_ids(config):
            if secrets is None or not secrets.exists(tenant, secret):
                found.append(Violation(_secret_field(config, secret), "API", f"no secret with id {secret!r}"))
        module_name = config["response"]["module"]
        if module_name is not None:
            module = self.deps.store.find(tenant, module_name)
            if module is None or module.deleted:
                found.append(Violation("response.module", "API", f"no code module {module_name!r}"))
            elif module.published is None:
                found.append(Violation("response.module", "API", f"the module {module_name!r} is not published"))
            elif module.published["tool"] is None:
                found.append(Violation("response.module", "API", f"the module {module_name!r} is a library, not a tool"))
        if found:
            raise InvalidDefinition(found)

    # -- the catalog and R2 --------------------------------------------------------------------

    def entries_of(self, tool: ApiTool) -> list[ToolEntry]:
        return [api_entry(tool)]

    def secrets_used(self, tenant: str) -> Mapping[str, Sequence[str]]:
        used: dict[str, list[str]] = {}
        for tool in self.tools(tenant):
            for secret in secret_ids(tool.config):
                used.setdefault(secret, []).append(tool.tool_id)
        return used

    # -- calls ---------------------------------------------------------------------------------

    def call(self, tenant: str, entry: ToolEntry, arguments: Any, context: CallContext, tools: Tools, depth: int) -> ExecutionResult:
        tool = self.find(tenant, entry.name)
        if tool is None:
            raise ToolNotCallable(entry.name, "no such tool")
        result, _ = self.perform(tenant, tool.tool_id, tool.config, arguments, context)
        return result

    def call_unlisted(self, tenant: str, name: str, arguments: Any, context: CallContext) -> ExecutionResult | None:
        tool = self.find(tenant, name)
        if tool is None:
            return None
        if not tool.config["enabled"]:
            raise ToolNotCallable(name, "the tool is disabled")
        return self.perform(tenant, name, tool.config, arguments, context)[0]

    def test(self, tenant: str, name: str, arguments: Any, context: CallContext) -> tuple[ExecutionResult, Trace]:
        """The Playground (`POST /{id}/test`): a call through exactly the path MCP uses, enabled or
        not, with what it sent (secrets replaced), the status, the bytes and the time."""
        tool = self.get(tenant, name)
        return self.perform(tenant, name, tool.config, arguments, context)

    def perform(self, tenant: str, name: str, config: Config, arguments: Any, context: CallContext) -> tuple[ExecutionResult, Trace]:
        """One call: refused (`InvalidInput`) before anything is sent when the arguments break a rule;
        otherwise an answer or an error result, never an exception for what the API does."""
        started = time.perf_counter()
        arguments = validate_input(config["parameters"], arguments)
        if not config["parameters"] and arguments not in (None, {}):
            raise InvalidInput([Violation("input", "V1", "the tool takes no arguments")])
        arguments = arguments or {}
        found = call_violations(config, arguments)
        if found:
            raise InvalidInput(found)
        trace = Trace()
        used = _Used()
        try:
            request, shown = build_request(self.deps.secrets, tenant, config, arguments, used)
            trace.method, trace.url, trace.headers, trace.body = shown
            response = self.tokens.send_with_auth(tenant, config, request, used, trace)
            trace.status, trace.bytes = response.status, response.bytes_read or len(response.body)
            trace.response_headers = {name: value for name, value in response.headers}
            trace.response_body = response.body[:RAW_BODY_CHARS * 4].decode("utf-8", "replace")[:RAW_BODY_CHARS]
            result = self._answer(tenant, config, response, context)
        except OutboundError as error:
            result = ExecutionError(_ERROR_TYPES.get(error.kind, "egress"), str(error))
        except _Failed as failed:
            result = failed.error
        trace.millis = (time.perf_counter() - started) * 1000
        result = _redacted(result, used, trace)
        _log_module_lines(result, config["response"]["module"], tenant, name)
        traces = TRACES.get()
        if traces is not None:
            traces.append(trace)
        return dataclasses.replace(result, duration_millis=round(trace.millis, 3)), trace

    @contextmanager
    def traced(self) -> Iterator[list[dict[str, Any]]]:
        """Each request a call made in this context sent upstream (secrets replaced) and its raw answer."""
        shown: list[dict[str, Any]] = []
        traces: list[Trace] = []
        token = TRACES.set(traces)
        try:
            yield shown
        finally:
            TRACES.reset(token)
            shown.extend(trace.with_response() for trace in traces)

    def close(self) -> None:
        if self.deps.outbound is not None:
            self.deps.outbound.close()

    # -- sending ---------------------------------------------------------------------------------

    def _secret(self, tenant: str, secret_id: str, used: _Used) -> str:
        return read_secret(self.deps.secrets, tenant, secret_id, used)

    def _send(self, config: Config, request: OutboundRequest) -> OutboundResponse:
        outbound = self.deps.outbound
        if outbound is None:
            raise _Failed(ExecutionError("config", "outbound requests are not configured in this service"))
        return outbound.send(request, seconds=config["timeoutMillis"] / 1000, connect_seconds=config["connectTimeoutMillis"] / 1000,
                             max_bytes=config["response"]["maxBytes"], max_redirects=config["maxRedirects"])

    # -- the answer ----------------------------------------------------------------------------

    def _answer(self, tenant: str, config: Config, response: OutboundResponse, context: CallContext) -> ExecutionResult:
        text = _text(response)
        if not 200 <= response.status < 300:
            start = text[:ERROR_BODY_CHARS] + ("…" if len(text) > ERROR_BODY_CHARS else "")
            raise _Failed(ExecutionError("http", f"the API answered {response.status}: {start}" if start.strip()
                                         else f"the API answered {response.status}"))
        parsed: Any = _json(text)
        expression, module = config["response"]["jmespath"], config["response"]["module"]
        logs: tuple[str, ...] = ()
        references = False  # a JMESPath result whose JSON is not known to be short: measured, not written out
        if expression is not None:
            if parsed is _NOT_JSON:
                raise _Failed(ExecutionError("response", "the answer is not JSON, so the jmespath cannot apply"))
            try:
                found = jmes.evaluate(expression, parsed, answer_chars=len(text),
                                      budget=jmes.budget_for(len(text), config["response"]["maxOutputChars"]))
            except (jmes.Stopped, jmes.Failed) as e:  # past its budget or time, or what jmespath cannot evaluate
                raise _Failed(ExecutionError("response", str(e))) from None
            output: Any = found.value
            references = found.written_at_most is None
        elif module is not None:
            given = {"status": response.status, "headers": dict(response.headers), "body": text if parsed is _NOT_JSON else parsed}
            result = self.deps.execution.post_process(tenant, module, given, context=context)
            if result.error is not None:
                raise _Failed(ExecutionError(result.error.type, f"post-processing by {module!r} failed: {result.error.message}"))
            output, logs = result.output, result.logs
        else:
            output = text if parsed is _NOT_JSON else parsed
        try:
            return ExecutionResult(output=_cut(output, config["response"]["maxOutputChars"], references=references), logs=logs)
        except RecursionError:  # deeper than the stack; what is merely deeper than 100 levels, `answered` refuses
            raise _Failed(ExecutionError("response", f"the answer is JSON nested more than {MAX_DEPTH} levels deep")) from None


_NOT_JSON: Any = object()
# An outbound failure's kind, as the error result's type.
_ERROR_TYPES = {"refused": "egress", "timeout": "timeout", "connect": "connect", "response": "response"}


def api_entry(tool: ApiTool) -> ToolEntry:
    config = tool.config
    return ToolEntry(
        name=tool.tool_id,
        description=config["description"],
        call_type=API_URL,
        input_schema=_schema(config["parameters"]),
        tags=tagged(config["tags"], API_TAG),
        expose_in_chat=config["exposeInChat"],
        enabled=config["enabled"],
        annotations=tool_hints.annotations(config.get("annotations"), tool_hints.http_facts(config["method"])),
        icons=tool_hints.icons(config.get("icons")),
        output_schema=config.get("outputSchema"),
    )


def _schema(parameters: list[dict[str, Any]]) -> dict[str, Any]:
    if not parameters:
        return {"type": "object", "properties": {}, "additionalProperties": False}
    return input_schema([{k: v for k, v in p.items() if k in ("name", "description", "type", "required", "default")} for p in parameters])


def _secret_field(config: Config, secret: str) -> str:
    for header, value in config["headers"].items():
        if isinstance(value, dict) and value.get("secret") == secret:
            return f"headers.{header}"
    return "auth.clientSecret" if config["auth"].get("clientSecret") == secret else "auth.secret"


def _text(response: OutboundResponse) -> str:
    charset = "utf-8"
    for name, value in response.headers:
        if name == "content-type" and "charset=" in value.lower():
            charset = value.lower().split("charset=", 1)[1].split(";")[0].strip().strip('"') or "utf-8"
    try:
        return response.body.decode(charset, errors="replace")
    except LookupError:
        return response.body.decode("utf-8", errors="replace")


def _json(text: str) -> Any:
    stripped = text.lstrip()
    if not stripped or stripped[0] not in '{["0123456789-tfn':
        return _NOT_JSON
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python's stack
        return _NOT_JSON


def _cut(output: Any, limit: int, references: bool = False) -> Any:
    """The output, or its text cut at `limit` characters with a marker saying so. A JMESPath result
    holds references, so its JSON may be far longer than what it holds: unless its length is known
    to be within bounds, it is measured once per object and written only as far as the cut
    (`references`, `domain.jmes`), never in full."""
    if isinstance(output, str):
        text, total = output, len(output)
    elif references:
        text, total = None, jmes.serialized_length(output)
    else:
        text = json.dumps(output, ensure_ascii=False, separators=(",", ":"))
        total = len(text)
    if total <= limit:
        return output
    shown = text[:limit] if text is not None else jmes.serialized_prefix(output, limit)
    return shown + CUT_MARKER.format(shown=limit, total=total)


def _redacted(result: ExecutionResult | ExecutionError, used: _Used, trace: Trace) -> ExecutionResult:
    """The call's result as it may leave the call: every field through the redaction of what it
    `used` (the trace, which the Playground shows, too)."""
    redactor = used.redactor()
    trace.url = redactor.text(trace.url)
    trace.headers = {redactor.text(k): redactor.text(v) for k, v in trace.headers.items()}
    trace.body = redactor.value(trace.body)  # the operator's fixed body and the model's values: as deep as V1 lets them be
    trace.response_headers = {k: redactor.text(v) for k, v in trace.response_headers.items()}
    trace.response_body = None if trace.response_body is None else redactor.text(trace.response_body)
    if isinstance(result, ExecutionError):
        return ExecutionResult(error=ExecutionError(result.type, redactor.text(result.message)))
    try:
        return ExecutionResult(output=redactor.value(result.output), logs=redactor.lines(result.logs))
    except RecursionError:
        return ExecutionResult(error=ExecutionError("response", f"the answer is JSON nested more than {MAX_DEPTH} levels deep"))


def _log_module_lines(result: ExecutionResult, module: str | None, tenant: str, name: str) -> None:
    """The post-processing module's log lines, already redacted, to the service's log: the sandbox
    left them out of it, since it saw them before the redaction."""
    for line in result.logs:
        log.info("module log", extra={"codeModule": module, "apiTool": name, "tenant": tenant, "logLine": line})
