"""API URL tools in the console (docs/kinds/api-url-tools.md, docs/console.md; issue 16): the list, the
editor (create and edit, every field of the configuration), enable and disable, delete (refused
while a plan or an agent names the tool) and its history are the pages every configured kind shares
(`console/configured.py`), with this kind's form (`form.py`) and templates. This module adds the
tool's Playground: one call through the path MCP uses, showing the request as sent with its secrets
replaced, the status, the bytes, the time, the raw answer and the output, on its own page and in
the Test panel docked beside the tool's editor (the same route answers both; the panel swaps in
its result). Every change goes through the kind's
`save` and `delete`, with the REST API's request model (`toolkinds.api_tools.schemas.ApiToolBody`),
so the console and REST refuse the same things."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from api.presenters import execution_out
from application.context import CONSOLE
from application.queries import call_context
from application.toolbox import answered
from console.configured import ConfiguredPages
from console.security import Reader, Writer
from console.display import shown
from domain import errors
from toolkinds.api_tools import form as forms
from toolkinds.api_tools.kind import ApiToolKind
from toolkinds.api_tools.schemas import ApiToolBody, public


def _secret_ids(request: Request, tenant: str) -> list[str]:
    """The tenant's secret ids, for the pickers (each field still takes any id typed)."""
    service = getattr(request.app.state.services, "secrets", None)
    if service is None:
        return []
    try:
        return [record["id"] for record in service.list(tenant)]
    except Exception:  # noqa: BLE001 - a picker's suggestions are a convenience; the field still takes an id
        return []


def _editor_context(request: Request, tool: Any) -> dict[str, Any]:
    """What the editor shows besides the tool: the secrets to pick, the rows to add, the choices."""
    return {"secret_ids": _secret_ids(request, request.state.visitor.principal.tenant), "blank_param": forms.blank_param(),
            "blank_pair": forms.blank_pair(), "auth_fields": forms.AUTH_FIELDS, **forms.CHOICES, "hints": forms.HINTS,
            # The docked Test panel's first arguments (the browser then keeps the last ones typed).
            "raw": forms.example_arguments(tool.config["parameters"]) if tool is not None else "", "problems": [], "result": None}


PAGES = ConfiguredPages(ApiToolKind, base="/console/api-tools", one="api_tool", noun="API URL tool", title="API URL tool",
                        folder="api_tools", body=ApiToolBody, public=public, form=forms.ApiToolForm(),
                        editor_context=_editor_context)
router = PAGES.router


# -- the Playground --------------------------------------------------------------------------------


def _playground(request: Request, tool: Any, *, raw: str, problems: list[str] | None = None,
                result: dict[str, Any] | None = None) -> Response:
    return PAGES.render(request, "api_tools/playground.html", tool=public(tool), raw=raw, problems=problems or [], result=result)


@router.get("/{name}/playground")
def playground(name: str, request: Request, visitor: Reader) -> Response:
    tool = PAGES.kind_of(request).get(visitor.principal.tenant, name)
    return _playground(request, tool, raw=forms.example_arguments(tool.config["parameters"]))


def presented(answer: dict[str, Any]) -> dict[str, Any]:
    """The test's answer as the page shows it: the request (secrets already replaced by the kind),
    the status, the bytes, the time, and the output (V5: up to 128 KB) or the error."""
    output = answer["output"]
    text = None if answer["error"] else output if isinstance(output, str) else json.dumps(output, indent=2, ensure_ascii=False)
    request = answer["request"]
    body = request["body"]
    raw = answer["response"]["body"]
    return {
        **answer,
        "bodyText": None if body is None else body if isinstance(body, str) else json.dumps(body, indent=2, ensure_ascii=False),
        "raw": None if raw is None else shown(raw),
        "outputShown": shown(text),
        "logsShown": shown("\n".join(answer["logs"])) if answer["logs"] else None,
    }


@router.post("/{name}/playground")
async def run_playground(name: str, request: Request, visitor: Writer) -> Response:
    form = await request.form()
    kind = PAGES.kind_of(request)
    principal = visitor.principal
    tool = kind.get(principal.tenant, name)
    raw = str(form.get("arguments", ""))
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as error:
        return _playground(request, tool, raw=raw, problems=[
            f"The arguments are not JSON: {error.msg} (line {error.lineno}, column {error.colno})."])
    if not isinstance(arguments, dict):
        return _playground(request, tool, raw=raw, problems=["The arguments must be a JSON object of the tool's parameters."])
    try:
        result, trace = await run_in_threadpool(lambda: kind.test(principal.tenant, name, arguments, call_context(principal, CONSOLE)))
    except errors.InvalidInput as refusal:
        return _playground(request, tool, raw=raw, problems=[f"{v.field}: {v.message}" for v in refusal.violations])
    answer = {**trace.with_response(), **execution_out(answered(result))}
    return _playground(request, tool, raw=raw, result=presented(answer))
