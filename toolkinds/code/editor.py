"""Create a module, the module page's editor, its Test window and the save with optimistic
concurrency (docs/kinds/code-modules.md). Each handler turns a form into the same application command the REST
routes (`api/routes/modules.py`) make, and the answer into a page or an htmx fragment."""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from application import queries
from application.context import CONSOLE
from api.presenters import execution_out, module_out
from application.execution import ExampleRun
from application.kinds.base import tagged
from toolkinds.code.kind import CODE_TAG
from toolkinds.code.pages import roles
from application.modules import Written
from application.toolbox import answered, test_entry
from console.display import shown
from console.routing import ConsoleRoute
from console.security import Reader, Writer
from console.language import plain
from console.toast import Undo, toast
from domain.errors import IdTaken, ImportCycle, ImportRefused, InvalidDefinition, InvalidInput, PreconditionFailed, QuotaExceeded, Violation
from domain import annotations as tool_hints
from domain.model import CodeModule
from domain.rules import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT,
    MAX_DESCRIPTION,
    MEMORY_RANGE,
    PARAMETER_TYPES,
    STYLES,
    TIMEOUT_RANGE,
    tool_input_schema,
)

router = APIRouter(prefix="/console/modules", route_class=ConsoleRoute, include_in_schema=False)

# V5: the Test window shows at most this many characters of output, and of logs.
# What the Test window's input starts as, per parameter type.
EXAMPLES: dict[str, Any] = {"string": "", "integer": 0, "decimal": 0, "date": "2024-05-06", "boolean": False, "array": [], "object": {}}
# Where each field of a create request is shown on the Create page.
CREATE_FIELDS = {"id": "id", "description": "description", "draftContent": "content"}


def _pages(request: Request) -> Any:
    return request.app.state.console_pages


async def _wait(request: Request, written: Written) -> None:
    """Read-your-writes for the list, as the REST routes do (bounded; the page does not depend on it)."""
    services = request.app.state.services
    await services.runner.wait_async(written.position, services.settings.read_your_writes_seconds)


# -- create ------------------------------------------------------------------------------------


@router.get("/new")
def new_module(request: Request, visitor: Writer) -> Response:
    return _pages(request).render(request, "modules/new.html", values={"id": "", "description": "", "content": ""},
                                  errors={}, max_description=MAX_DESCRIPTION)


@router.get("/availability")
def availability(request: Request, visitor: Reader, id: str = "") -> Response:
    """The live name check: "✓ free", or which rule of names the name breaks, or who holds it (in words, console.language)."""
    reason = queries.unavailable_because(request.app.state.services, visitor.principal.tenant, id)
    return _pages(request).render(request, "modules/_editor_availability.html", reason=reason)


@router.post("")
async def create_module(request: Request, visitor: Writer) -> Response:
    form = await request.form()
    values = {name: _text(form, name) for name in ("id", "description", "content")}
    services = request.app.state.services
    errors: dict[str, str] = {}
    try:
        written = await run_in_threadpool(
            services.modules.create, visitor.principal.tenant, values["id"], description=values["description"],
            content=values["content"], imports=[], tool=None, by=visitor.principal.name,
        )
    except InvalidDefinition as invalid:
        for violation in invalid.violations:
            field = CREATE_FIELDS.get(violation.field, "general")
            errors.setdefault(field, f"{_sentence(plain(violation.message))}.")
    except IdTaken as taken:
        errors["id"] = f"Already used by {'an' if taken.taken_by[:1] in 'AEIOU' else 'a'} {taken.taken_by}: a name is taken once, across every kind of tool."
    except QuotaExceeded as quota:  # docs/tenants.md: the form again, as typed, with the quota named
        errors["general"] = f"Not created: {quota.detail}. Your organization's operator sets its quotas."
    else:
        await _wait(request, written)
        # Undoing a create is cheap: nothing can import the new module yet, so a delete is never refused.
        return toast(request, RedirectResponse(f"/console/modules/{values['id']}", status_code=303),
                     f"Created the module {values['id']}: a draft until you publish it.",
                     undo=Undo(f"/console/modules/{values['id']}/delete"))
    # The form again, as typed, each message next to its field (200: a form answered, as sign-in does).
    return _pages(request).render(request, "modules/new.html", values=values, errors=errors, max_description=MAX_DESCRIPTION)


def _sentence(message: str) -> str:
    return message[:1].upper() + message[1:]


# -- the module page ---------------------------------------------------------------------------


@router.get("/{module_id}")
def module_page(module_id: str, request: Request, visitor: Reader) -> Response:
    services = request.app.state.services
    view = queries.module_view(services, visitor.principal.tenant, module_id)
    return _pages(request).render(request, "modules/page.html", **_page_context(request, visitor.principal.tenant, view.module, view.used_by))


def _page_context(request: Request, tenant: str, module: CodeModule, used_by: list[str]) -> dict[str, Any]:
    services = request.app.state.services
    definition = module.current
    tool = definition["tool"]
    importable = queries.importable(services, tenant, module.module_id)
    imports = list(definition["imports"])
    return {
        "m": module_out(module, used_by),
        "role": roles(module),
        "usage": {"modules": used_by, **services.records.users_of(tenant, module.module_id),
                  **services.store.users_of(tenant, module.module_id)},  # the prompts and resources it renders
        "version": module.version,
        "definition": definition,
        "tool": tool,
        "params": [_param_row(p) for p in (tool["inputParameters"] if tool else [])],
        "importable": sorted({*importable, *imports}),
        "imports": imports,
        "types": PARAMETER_TYPES,
        "styles": STYLES,
        # the style's own default (the placeholder and hint follow the Style field: module_editor.js)
        "timeout": {"min": TIMEOUT_RANGE[0], "max": TIMEOUT_RANGE[1], "defaults": DEFAULT_TIMEOUT,
                    "default": DEFAULT_TIMEOUT.get(tool["style"] if tool else "module", DEFAULT_TIMEOUT["module"])},
        "memory": {"min": MEMORY_RANGE[0], "max": MEMORY_RANGE[1], "default": DEFAULT_MEMORY_MB},
        "max_description": MAX_DESCRIPTION,
        "preview": _preview_json(module),
        "example_input": _example_input(tool),
        # B4's examples as the textarea shows them (JSON, escaped by the template like any text).
        "examples_text": json.dumps(tool["examples"], indent=2, ensure_ascii=False) if tool and tool.get("examples") else "",
        # V6's schemas as their textareas show them (JSON), empty when the tool has none.
        "input_schema_text": _json_text(tool, "inputSchema"),
        "output_schema_text": _json_text(tool, "outputSchema"),
        # R17: the admin's annotations, the hints derived from the draft's own code, the icons.
        "annotations": (tool or {}).get("annotations") or {},
        "hints": _HINTS,
        "derived": tool_hints.module_facts("" if tool_hints.uses_http(definition["content"]) else None).derived,
        "icons_text": _json_text(tool, "icons"),
        "blank_param": {"name": "", "description": "", "type": "string", "required": False, "default": ""},
    }


def _json_text(tool: dict[str, Any] | None, key: str) -> str:
    value = (tool or {}).get(key)
    return "" if value is None else json.dumps(value, indent=2, ensure_ascii=False)


def _param_row(param: dict[str, Any]) -> dict[str, Any]:
    default = param.get("default")
    shown = "" if default is None else default if param["type"] in ("string", "date") and isinstance(default, str) else json.dumps(default)
    return {**param, "default": shown}


def _preview_json(module: CodeModule) -> str | None:
    """The tool as MCP's tools/list will offer it once published (seen from the saved draft), or None for a library."""
    definition = module.current
    tool = definition["tool"]
    if tool is None:
        return None
    entry = {
        "name": module.module_id,
        "description": definition["description"],
        "inputSchema": tool_input_schema(tool),
        **({"outputSchema": tool["outputSchema"]} if tool.get("outputSchema") is not None else {}),
        **({"icons": list(tool_hints.icons(tool.get("icons")))} if tool.get("icons") else {}),
        # R17, from the draft's own code (what its imports fetch counts too once published).
        "annotations": tool_hints.annotations(
            tool.get("annotations"), tool_hints.module_facts("" if tool_hints.uses_http(definition["content"]) else None)),
        "_meta": {"toolsmith/tags": list(tagged(tool["tags"], CODE_TAG))},
    }
    return json.dumps(entry, indent=2, ensure_ascii=False)


def _example_input(tool: dict[str, Any] | None) -> str:
    if tool is None or not tool["inputParameters"]:
        return "{}"
    return json.dumps({p["name"]: p.get("default", EXAMPLES.get(p["type"])) for p in tool["inputParameters"]}, indent=2)


# -- save (If-Match) ---------------------------------------------------------------------------


@router.post("/{module_id}")
async def save_module(module_id: str, request: Request, visitor: Writer) -> Response:
    form = await request.form()
    services = request.app.state.services
    tenant = visitor.principal.tenant
    mine = _definition(form)
    try:
        written = await run_in_threadpool(
            services.modules.update, tenant, module_id, description=mine["description"], content=mine["content"],
            imports=mine["imports"], tool=mine["tool"], by=visitor.principal.name, expected=_version(form),
        )
    except PreconditionFailed:
        return _conflict(request, tenant, module_id, mine)
    await _wait(request, written)
    module = written.module
    assert module is not None
    context = _page_context(request, tenant, module, queries.used_by(services, tenant, module_id))
    answer = _pages(request).render(request, "modules/_editor_saved.html", saved_at=module.updated_at, **context)
    return toast(request, answer, f"Draft of {module_id} saved.")


def _conflict(request: Request, tenant: str, module_id: str, mine: dict[str, Any]) -> Response:
    """B7's 412 as a person sees it: the newer saved text against theirs, to reload or overwrite."""
    services = request.app.state.services
    view = queries.module_view(services, tenant, module_id)
    return _pages(request).render(
        request, "modules/_conflict_dialog.html", status=412,
        headers={"HX-Retarget": "#conflict-region", "HX-Reswap": "innerHTML"},
        m=module_out(view.module, view.used_by), version=view.module.version, saved=view.module.current, mine=mine,
        saved_at=view.module.updated_at,
    )


def _version(form: FormData) -> int | None:
    """The aggregate version the page was read at (If-Match): a value that is not one can never match."""
    given = _text(form, "version").strip()
    if not given:
        return None
    return int(given) if given.isdigit() else -1


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value.replace("\r\n", "\n") if isinstance(value, str) else ""


def _definition(form: FormData) -> dict[str, Any]:
    """The editor's form as a definition: description, content, imports and the tool section."""
    imports = [name for name in form.getlist("imports") if isinstance(name, str) and name]
    return {
        "description": _text(form, "description"),
        "content": _text(form, "content"),
        "imports": imports,
        "tool": _tool(form) if form.get("tool") == "on" else None,
    }


def _tool(form: FormData) -> dict[str, Any]:
    params = []
    for row in form.getlist("param_row"):
        name = _text(form, f"param_{row}_name").strip()
        description = _text(form, f"param_{row}_description").strip()
        default = _text(form, f"param_{row}_default").strip()
        if not (name or description or default):
            continue  # an empty row added and left
        type_ = _text(form, f"param_{row}_type") or "string"
        params.append({
            "name": name, "description": description, "type": type_,
            "required": form.get(f"param_{row}_required") == "on", "default": _default(default, type_),
        })
    return {
        "inputParameters": params,
        "timeoutMillis": _whole(form, "timeoutMillis", "tool.timeoutMillis"),
        "memoryLimitMb": _whole(form, "memoryLimitMb", "tool.memoryLimitMb"),
        "exposeInChat": form.get("exposeInChat") == "on",
        "enabled": form.get("enabled") != "false",
        "tags": [tag.strip() for tag in _text(form, "tags").split(",") if tag.strip()],
        "style": _text(form, "style") or "module",
        "examples": _examples(form),
        "inputSchema": _schema(form, "inputSchema"),
        "outputSchema": _schema(form, "outputSchema"),
        "annotations": _annotations(form),
        "icons": _icons(form),
    }


# R17's hints as the form shows them: the field, its label, what "yes" and "no" mean.
_HINTS = (
    ("readOnlyHint", "Read-only", "changes nothing", "may change things"),
    ("destructiveHint", "Destructive", "may delete", "only adds"),
    ("idempotentHint", "Idempotent", "repeatable", "each call adds"),
    ("openWorldHint", "Open world", "outside systems", "a closed domain"),
)


def _annotations(form: FormData) -> dict[str, Any] | None:
    """The annotations fields (R17): a title, and each hint as derived (empty), yes or no."""
    given: dict[str, Any] = {}
    title = _text(form, "annotationTitle").strip()
    if title:
        given["title"] = title
    for hint, *_ in _HINTS:
        value = _text(form, hint)
        if value in ("true", "false"):
            given[hint] = value == "true"
    return given or None


def _icons(form: FormData) -> Any:
    """The icons textarea (R17): a JSON list, empty for none; the domain checks each icon."""
    text = _text(form, "icons").strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError as error:
        raise InvalidDefinition([Violation("tool.icons", "R17", f"must be a JSON list of icons: {error}")]) from None


def _schema(form: FormData, name: str) -> Any:
    """A schema textarea (V6): JSON, empty for none; the domain checks the schema itself."""
    text = _text(form, name).strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError as error:
        raise InvalidDefinition([Violation(f"tool.{name}", "V6", f"must be a JSON Schema written as JSON: {error}")]) from None


def _examples(form: FormData) -> Any:
    """The examples textarea (B4): JSON, empty for none; the domain checks each example."""
    text = _text(form, "examples").strip()
    if not text:
        return []
    try:
        return json.loads(text)
    except ValueError as error:
        raise InvalidDefinition([Violation("tool.examples", "B4", f"must be a JSON list of examples: {error}")]) from None


def _default(text: str, type_: str) -> Any:
    """A default as typed: a string or a date as it is, any other type as JSON (left as text when it
    is not JSON, for V1 to name)."""
    if not text:
        return None
    if type_ in ("string", "date"):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _whole(form: FormData, name: str, field: str) -> int | None:
    text = _text(form, name).strip()
    if not text:
        return None
    if not re.fullmatch(r"-?[0-9]{1,9}", text):
        raise InvalidDefinition([Violation(field, "R9", "must be a whole number")])
    return int(text)


# -- Test --------------------------------------------------------------------------------------


@router.post("/{module_id}/test")
async def test_module(module_id: str, request: Request, visitor: Writer) -> Response:
    """Runs the editor's content as it stands, saved or not (as POST /code-modules/test), then each
    of the tool section's examples (B4); keeps nothing."""
    form = await request.form()
    services = request.app.state.services
    mine = _definition(form)
    render = _pages(request).render
    raw = _text(form, "input")
    try:
        given = json.loads(raw) if raw.strip() else None
    except ValueError as error:
        return render(request, "modules/_test_result.html", refused=f"The input is not JSON: {error}", violations=[])
    tenant, context = visitor.principal.tenant, queries.call_context(visitor.principal, CONSOLE)
    def run() -> tuple[Any, list[ExampleRun]]:
        # One trip to the thread pool for both (a trip costs as much as a small test's own work).
        ran = services.execution.test(tenant, content=mine["content"], imports=mine["imports"], tool=mine["tool"],
                                      input=given, module_id=module_id, context=context)
        # B4: each example of the tool section (and of its importers), run against the code as it stands
        return ran, services.execution.test_examples(tenant, content=mine["content"], imports=mine["imports"],
                                                     tool=mine["tool"], module_id=module_id, context=context)

    try:
        result, examples = await run_in_threadpool(run)
    except (InvalidDefinition, InvalidInput, ImportRefused) as refusal:
        violations = [f"{v.field}: {plain(v.message)}" for v in refusal.violations]
        return render(request, "modules/_test_result.html", refused="Not run: the definition or the input breaks a rule.", violations=violations)
    except ImportCycle as cycle:
        return render(request, "modules/_test_result.html", refused=f"Not run: {plain(cycle.detail)}", violations=[])
    out = execution_out(answered(result, test_entry(mine["tool"])))
    error = out["error"]
    # MCP content the code returned (ai.content) is shown as MCP sends it: its items, and the structured value.
    value = out["output"] if "content" not in out else {
        "content": out["content"], **({"structuredContent": out["output"]} if out["output"] is not None else {})}
    output = shown(None if error else json.dumps(value, indent=2, ensure_ascii=False))
    # "Save as example" (B4) offers the run as an example of the tool section: its input and its
    # whole output (not one cut for the page), named after the examples already there.
    example = None
    if mine["tool"] is not None and error is None and output is not None and not output["cut"] and "content" not in out:
        example = {"name": f"example_{len(mine['tool'].get('examples') or []) + 1}",
                   "input": json.dumps({} if given is None else given, ensure_ascii=False),
                   "output": json.dumps(out["output"], ensure_ascii=False)}
    return render(
        request, "modules/_test_result.html", refused=None, violations=[], error=error, place=_place_of(error, module_id),
        example=example, output=output,
        logs=shown("\n".join(out["logs"])), duration=out["durationMillis"],
        examples=[_example_row(run, module_id) for run in examples],
        importers=sorted({run.module for run in examples if run.module not in (None, module_id)}),
    )


def _example_row(run: ExampleRun, module_id: str) -> dict[str, Any]:
    """One example's result as the Test window shows it: whose it is (this module's, or an
    importer's run with this draft in place), passed or not, expected and actual as text."""
    return {"name": run.name, "module": run.module or module_id, "mine": run.module in (None, module_id), "passed": run.passed,
            "expected": _outcome(run.expected), "actual": _outcome(run.actual)}


def _outcome(outcome: dict[str, Any]) -> str:
    """`{"output": …}` as its JSON, `{"error": type, "message": …}` as words (V5's cap on either)."""
    if "error" in outcome:
        text = f"an error of type {outcome['error']}" + (f": {outcome['message']}" if outcome.get("message") else "")
    else:
        text = json.dumps(outcome.get("output"), ensure_ascii=False)
    shown_text = shown(text)
    assert shown_text is not None
    return shown_text["text"] + (" … (cut)" if shown_text["cut"] else "")


def _place_of(error: dict[str, str] | None, module_id: str) -> dict[str, int] | None:
    """Where a syntax error is in this module's own source (the sandbox names the unit, its line and
    column: "(name, line 2, column 9)"), for the Test panel's link and the editor's gutter mark;
    None for a runtime error or one in a module it imports (that code is not in the editor)."""
    if error is None or error["type"] != "syntax":
        return None
    found = re.search(r"\(([^,()]+), line (\d+)(?:, column (\d+))?\)", error["message"])
    if found is None or found.group(1) != module_id:
        return None
    return {"line": int(found.group(2)), "column": int(found.group(3) or 1)}
