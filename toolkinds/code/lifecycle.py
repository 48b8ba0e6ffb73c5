"""A module's lifecycle in the console (docs/kinds/code-modules.md, docs/rules.md B1–B3, B6): publish with a review (the
dry run of every dependent, a diff of the draft against the published version, a message), the `…`
menu (discard the draft, duplicate, delete with the used-by list), and the history: a timeline of
every event (a publish with its changeset and message), a diff of any published version against
another or the draft, the module as of an instant, and "restore into draft" (revert). The diff and
the message are shared with the list's changeset review (`toolkinds.code.pages`).

Each write is the same application command the REST routes (`api/routes/modules.py`) make, with
the version the admin reviewed as `expected` (If-Match, B7). An htmx request that succeeds is
answered with `HX-Redirect`; one that is refused gets a fragment for the dialog it came from.
"""

from __future__ import annotations

import difflib
import json
from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from application import queries
from application.context import CONSOLE
from api.presenters import module_out
from application.modules import MAX_MESSAGE, Written
from console.routing import ConsoleRoute, problem_of
from console.security import Reader, Writer
from console.language import plain
from console.toast import Undo, toast
from domain import history
from domain.errors import IdTaken, InvalidDefinition, InvalidInput, ModuleError, QuotaExceeded, UnknownModule, Violation
from domain.model import CodeModule

router = APIRouter(prefix="/console/modules", route_class=ConsoleRoute, include_in_schema=False)

# What each event of a module's history is called on the timeline.
EVENT_NAMES = {
    "Created": "Created",
    "DraftChanged": "Draft changed",
    "Published": "Published",
    "Reverted": "Restored into the draft",
    "EnabledChanged": "Tool switched on or off",
    "DraftDiscarded": "Draft discarded",
    "Deleted": "Deleted",
    "Recreated": "Created again",
}
DRAFT = "draft"


def _pages(request: Request) -> Any:
    return request.app.state.console_pages


def _htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


async def _wait(request: Request, written: Written) -> None:
    """Read-your-writes for the list and used-by, as the REST routes do (bounded)."""
    services = request.app.state.services
    await services.runner.wait_async(written.position, services.settings.read_your_writes_seconds)


def _go(request: Request, url: str) -> Response:
    """After a write: htmx follows `HX-Redirect`; a plain form post a 303."""
    if _htmx(request):
        return Response(status_code=200, headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)


def _expected(form: FormData) -> int | None:
    """The aggregate version the page was showing (the form's If-Match); None when absent."""
    value = form.get("version")
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


def publish_message(form: FormData) -> str | None:
    """What the publisher said of a publish (B6), None when they said nothing; at most MAX_MESSAGE
    characters, as the REST API takes it."""
    message = _text(form, "message").replace("\r\n", "\n")
    if len(message) > MAX_MESSAGE:
        raise InvalidInput([Violation("message", "B6", f"must be at most {MAX_MESSAGE:,} characters, got {len(message):,}")])
    return message or None


def _refused(request: Request, template: str, error: ModuleError, **context: Any) -> Response:
    """A refusal shown where the admin acted (a dialog); without htmx, ConsoleRoute's page."""
    if not _htmx(request):
        raise error
    problem = problem_of(error)
    return _pages(request).render(request, template, status=problem["status"], problem=problem, **context)


# -- publish with a review ---------------------------------------------------------------------


@router.get("/{module_id}/publish-review")
def publish_review(module_id: str, request: Request, visitor: Writer) -> Response:
    """B3's dry run (each dependent's check) and the diff of the draft against the published
    version; the Publish button only when the dry run says the publish would go through."""
    services = request.app.state.services
    principal = visitor.principal
    module = services.store.module(principal.tenant, module_id)
    context: dict[str, Any] = {"m": module_out(module, []), "version": module.version, "problem": None, "preview": None}
    if module.draft is not None:
        context["diff"] = definition_diff(module.published, module.draft, published_label(module), "the draft")
    try:
        context["preview"] = queries.publish_preview(services, queries.call_context(principal, CONSOLE), module_id)
    except ModuleError as error:  # R5 at publish, R10 nothing to publish: refused before any check runs
        context["problem"] = problem_of(error)
    return _pages(request).render(request, "modules/_review.html", **context)


@router.post("/{module_id}/publish")
async def publish(module_id: str, request: Request, visitor: Writer) -> Response:
    form = await request.form()
    services = request.app.state.services
    principal = visitor.principal
    try:
        message = publish_message(form)
        written = await run_in_threadpool(
            services.modules.publish, principal.tenant, module_id, by=principal.name, expected=_expected(form),
            context=queries.call_context(principal, CONSOLE), message=message,
        )
    except ModuleError as error:  # CheckFailed 422, ImportCycle, NothingToPublish 409, PreconditionFailed 412, a long message 400
        return _refused(request, "modules/_review_refused.html", error, module_id=module_id)
    await _wait(request, written)
    version = written.module.published_version if written.module is not None else None
    return toast(request, _go(request, f"/console/modules/{module_id}"),
                 f"Published version {version} of {module_id}." if version else f"Published {module_id}.")


# -- the … menu: discard the draft, duplicate, delete ----------------------------------------------


@router.get("/{module_id}/discard-review")
def discard_review(module_id: str, request: Request, visitor: Writer) -> Response:
    """The discard dialog's body, read when it opens: the confirmation, or why R11 refuses."""
    module = request.app.state.services.store.module(visitor.principal.tenant, module_id)
    return _pages(request).render(request, "modules/_review_discard.html", m=module_out(module, []), version=module.version)


@router.post("/{module_id}/discard")
async def discard(module_id: str, request: Request, visitor: Writer) -> Response:
    form = await request.form()
    services = request.app.state.services
    try:
        written = await run_in_threadpool(
            services.modules.discard_draft, visitor.principal.tenant, module_id, by=visitor.principal.name, expected=_expected(form),
        )
    except ModuleError as error:  # R11: no draft, never published; 412 when the module moved on
        return _refused(request, "modules/_review_message.html", error, module_id=module_id)
    await _wait(request, written)
    return toast(request, _go(request, f"/console/modules/{module_id}"),
                 f"The draft of {module_id} is discarded: the published version is current.", undo=_undo(module_id, written))


@router.get("/{module_id}/delete-review")
def delete_review(module_id: str, request: Request, visitor: Writer) -> Response:
    """The delete dialog's body, read when it opens: every importer, plan and agent that uses the
    module (R12 refuses while there is one), or the confirmation."""
    services = request.app.state.services
    module = services.store.module(visitor.principal.tenant, module_id)
    usage = queries.usage(services, visitor.principal.tenant, module_id)
    return _pages(request).render(request, "modules/_usage.html", m=module_out(module, []), version=module.version, usage=usage)


@router.post("/{module_id}/delete")
async def delete(module_id: str, request: Request, visitor: Writer) -> Response:
    form = await request.form()
    services = request.app.state.services
    try:
        written = await run_in_threadpool(
            services.modules.delete, visitor.principal.tenant, module_id, by=visitor.principal.name, expected=_expected(form),
        )
    except ModuleError as error:  # R12 in use (with the list), 412
        return _refused(request, "modules/_usage_refused.html", error, module_id=module_id)
    await _wait(request, written)
    return toast(request, _go(request, f"/console/modules/{module_id}/deleted"), f"{module_id} is deleted; its history stays.")


@router.get("/{module_id}/deleted")
def deleted(module_id: str, request: Request, visitor: Reader) -> Response:
    """Where a delete leads: says so, and links the list and the history, which stays (B2)."""
    if not request.app.state.services.history.module_events(visitor.principal.tenant, module_id):
        raise UnknownModule(module_id)
    return _pages(request).render(request, "modules/deleted.html", module_id=module_id)


@router.get("/{module_id}/duplicate-check")
def duplicate_check(module_id: str, request: Request, visitor: Reader, id: str = "") -> Response:
    """The duplicate dialog's live name check: R1's rule broken, R2's collision, or free."""
    return _pages(request).render(request, "modules/_review_name.html", name=id.strip(), reason=_unavailable(request, visitor, id.strip()))


def _unavailable(request: Request, visitor: Any, name: str) -> str | None:
    """Why `name` cannot be the copy's id (application.queries.unavailable_because, as a sentence)."""
    if not name:
        return None
    reason = queries.unavailable_because(request.app.state.services, visitor.principal.tenant, name)
    return None if reason is None else f"{reason[:1].upper()}{reason[1:]}."


@router.post("/{module_id}/duplicate")
async def duplicate(module_id: str, request: Request, visitor: Writer) -> Response:
    form = await request.form()
    name = _text(form, "id")
    services = request.app.state.services
    try:
        written = await run_in_threadpool(services.modules.duplicate, visitor.principal.tenant, module_id, name, by=visitor.principal.name)
    except (InvalidDefinition, IdTaken, QuotaExceeded) as error:
        if isinstance(error, IdTaken):
            message = f"Already used by {'an' if error.taken_by[:1] in 'AEIOU' else 'a'} {error.taken_by}: a name is taken once, across every kind of tool."
        elif isinstance(error, QuotaExceeded):
            message = f"Not created: {error.detail}. Your organization's operator sets its quotas."
        else:
            found = [v for v in error.violations if v.field == "id"] or error.violations
            message = plain(f"{found[0].message[:1].upper()}{found[0].message[1:]}.")
        context = {"m": {"id": module_id}, "name": name, "error": message}
        if not _htmx(request):
            raise
        return _pages(request).render(request, "modules/_review_duplicate.html", status=422, **context)
    await _wait(request, written)
    return toast(request, _go(request, f"/console/modules/{name}"), f"Duplicated {module_id} as {name}: a draft until you publish it.")


# -- history -----------------------------------------------------------------------------------


@router.get("/{module_id}/history")
def module_history(module_id: str, request: Request, visitor: Reader, a: str = "", b: str = "", at: str = "") -> Response:
    """The timeline of every event, the published versions (each restorable into the draft), a
    diff of any version against another or the draft, and the module as of an instant; the query
    string holds the comparison and the instant, so a link reproduces the view."""
    services = request.app.state.services
    tenant = visitor.principal.tenant
    events = services.history.module_events(tenant, module_id)
    if not events:
        raise UnknownModule(module_id)
    try:
        module: CodeModule | None = services.store.module(tenant, module_id)
    except UnknownModule:
        module = None  # deleted: its history stays (B2)
    versions = history.versions(events)
    by_number = {v["version"]: v for v in versions}
    has_draft = module is not None and module.draft is not None
    errors: dict[str, str] = {}
    compare = _comparison(a, b, by_number, module, has_draft, errors)
    as_of = _as_of(services, tenant, module_id, at, errors)
    defaults = _default_pair(versions, has_draft)
    return _pages(request).render(
        request, "modules/history.html", module_id=module_id, module=module_out(module, []) if module else None,
        version=module.version if module else None, timeline=[_event_row(e) for e in reversed(events)],
        versions=versions, has_draft=has_draft, compare=compare, as_of=as_of, errors=errors,
        chosen={"a": a or defaults[0], "b": b or defaults[1], "at": at},
    )


def _default_pair(versions: list[dict[str, Any]], has_draft: bool) -> tuple[str, str]:
    """What the compare form starts at: the last version against the draft, else the last two."""
    numbers = [str(v["version"]) for v in versions]
    if not numbers:
        return "", ""
    if has_draft:
        return numbers[-1], DRAFT
    return (numbers[-2] if len(numbers) > 1 else numbers[-1]), numbers[-1]


def _comparison(a: str, b: str, by_number: dict[int, dict[str, Any]], module: CodeModule | None, has_draft: bool,
                errors: dict[str, str]) -> dict[str, Any] | None:
    if not a and not b:
        return None
    sides = []
    for field, value in (("a", a), ("b", b)):
        if value == DRAFT and has_draft and module is not None:
            sides.append((module.draft, "the draft"))
        elif value.isdigit() and int(value) in by_number:
            sides.append((by_number[int(value)], f"version {int(value)}"))
        else:
            errors[field] = "Choose a published version" + (" or the draft." if field == "b" and has_draft else ".")
    if len(sides) != 2:
        return None
    return definition_diff(sides[0][0], sides[1][0], sides[0][1], sides[1][1])


def _as_of(services: Any, tenant: str, module_id: str, at: str, errors: dict[str, str]) -> dict[str, Any] | None:
    """The module as it stood at `at` (a `datetime-local` value, read as UTC)."""
    if not at:
        return None
    try:
        instant = datetime.fromisoformat(at)
    except ValueError:
        errors["at"] = "Give a date and time, for example 2026-11-30T20:31."
        return None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=timezone.utc)
    try:
        view = queries.module_view(services, tenant, module_id, instant)
    except UnknownModule:
        return {"at": instant, "module": None}
    return {"at": instant, "module": module_out(view.module, view.used_by)}


def _event_row(event: Any) -> dict[str, Any]:
    """One timeline entry: the REST history's entry (B2), named for a person."""
    entry = history.entry(event)
    data = entry["data"]
    definition = data.get("definition") if isinstance(data.get("definition"), dict) else None
    what = EVENT_NAMES.get(entry["type"], entry["type"])
    if entry["type"] == "Published":
        what = f"Published version {data.get('version')}"
    elif entry["type"] == "Reverted":
        what = f"Version {data.get('version')} restored into the draft"
    elif entry["type"] == "EnabledChanged":
        what = "Tool switched on" if data.get("enabled") else "Tool switched off"
    return {
        **entry,
        "what": what,
        "description": definition.get("description") if definition else None,
        "imports": definition.get("imports") if definition else None,
        "changeset": data.get("changeset"),
        "message": data.get("message"),
        "recorded": json.dumps(data, indent=2, ensure_ascii=False, default=str),
    }


# -- diffs -------------------------------------------------------------------------------------


def published_label(module: CodeModule) -> str:
    return f"published version {module.published_version}" if module.published is not None else "nothing published"


def definition_diff(before: dict[str, Any] | None, after: dict[str, Any] | None, before_label: str, after_label: str) -> dict[str, Any]:
    """Two definitions side by side for a person: the code (for the merge view, and as a unified
    diff in text), the description, the imports, and the tool section field by field."""
    old = before or {}
    new = after or {}
    old_code = old.get("content") or ""
    new_code = new.get("content") or ""
    unified = "\n".join(difflib.unified_diff(
        old_code.splitlines(), new_code.splitlines(), fromfile=before_label, tofile=after_label, lineterm="",
    ))
    old_tool, new_tool = _tool_rows(old.get("tool")), _tool_rows(new.get("tool"))
    tool = [
        {"field": field, "before": old_tool.get(field, "—"), "after": new_tool.get(field, "—"),
         "changed": old_tool.get(field) != new_tool.get(field)}
        for field in dict.fromkeys([*old_tool, *new_tool])
    ]
    return {
        "before_label": before_label, "after_label": after_label,
        "before_code": old_code, "after_code": new_code, "unified": unified, "code_changed": old_code != new_code,
        "description": {"before": old.get("description"), "after": new.get("description"),
                        "changed": old.get("description") != new.get("description")},
        "imports": {"before": list(old.get("imports") or []), "after": list(new.get("imports") or []),
                    "changed": list(old.get("imports") or []) != list(new.get("imports") or [])},
        "tool": tool, "tool_changed": any(row["changed"] for row in tool),
    }


TOOL_FIELDS = {
    "timeoutMillis": "Timeout (ms)", "memoryLimitMb": "Memory (MB)", "exposeInChat": "Callable in chat",
    "enabled": "Enabled", "tags": "Tags", "style": "Style", "inputSchema": "Input schema", "outputSchema": "Output schema",
}


def _tool_rows(tool: dict[str, Any] | None) -> dict[str, str]:
    """The tool section as labelled text, one entry per field and per parameter."""
    if tool is None:
        return {"Call it as a tool": "no"}
    rows = {"Call it as a tool": "yes"}
    for param in tool.get("inputParameters", []):
        parts = [param.get("type", "string"), "required" if param.get("required") else "optional"]
        if param.get("default") is not None:
            parts.append(f"default {json.dumps(param['default'], ensure_ascii=False)}")
        rows[f"Parameter {param.get('name')}"] = f"{', '.join(parts)}: {param.get('description') or ''}".rstrip(": ")
    for key, value in tool.items():
        if key == "inputParameters":
            continue
        label = TOOL_FIELDS.get(key, key)
        if isinstance(value, bool):
            rows[label] = "yes" if value else "no"
        elif isinstance(value, list):
            rows[label] = ", ".join(str(v) if not isinstance(v, dict) else json.dumps(v, ensure_ascii=False) for v in value) or "none"
        elif isinstance(value, dict):  # a schema (V6), annotations: as the JSON it is
            rows[label] = json.dumps(value, ensure_ascii=False, sort_keys=True)
        else:
            rows[label] = "none" if value is None else str(value)
    return rows


# -- restore into draft (B1) --------------------------------------------------------------------


@router.post("/{module_id}/restore")
async def restore(module_id: str, request: Request, visitor: Writer) -> Response:
    """A published version's definition becomes the draft again; publish it to make it live."""
    form = await request.form()
    chosen = _text(form, "restore")
    services = request.app.state.services
    written = await run_in_threadpool(
        services.modules.revert, visitor.principal.tenant, module_id, int(chosen) if chosen.isdigit() else chosen,
        by=visitor.principal.name, expected=_expected(form),
    )
    await _wait(request, written)
    return toast(request, _go(request, f"/console/modules/{module_id}"),
                 f"Version {chosen} of {module_id} is restored into the draft; publish it to make it live.", undo=_undo(module_id, written))


# -- Undo (a toast's button): the draft a discard or a restore replaced, put back ------------------

UNDOABLE = ("DraftDiscarded", "Reverted")


def _undo(module_id: str, written: Written) -> Undo | None:
    """The toast's Undo of the write that made version `written`: it names that version only (the
    draft it replaced is read back from the history, never carried in the toast)."""
    if written.module is None:
        return None
    return Undo(f"/console/modules/{module_id}/undo", fields={"version": str(written.module.version)})


@router.post("/{module_id}/undo")
async def undo(module_id: str, request: Request, visitor: Writer) -> Response:
    """Puts back the draft that a discard or a restore (the event at `version`) replaced, as a new
    change at that version (If-Match: refused if anything changed since); a restore made where
    there was no draft is undone by discarding the draft again."""
    form = await request.form()
    services = request.app.state.services
    tenant, by = visitor.principal.tenant, visitor.principal.name
    version = _expected(form)
    before: CodeModule | None = None
    action = None
    for event in services.history.module_events(tenant, module_id):
        if event.originator_version == version:
            action = event
            break
        before = event.mutate(before)
    if action is None or type(action).__name__ not in UNDOABLE or before is None:
        raise InvalidInput([Violation("version", "B1", "names no discard or restore of this module to undo")])
    draft = before.draft
    if draft is None:
        written = await run_in_threadpool(services.modules.discard_draft, tenant, module_id, by=by, expected=version)
    else:
        written = await run_in_threadpool(
            services.modules.update, tenant, module_id, description=draft["description"], content=draft["content"],
            imports=list(draft["imports"]), tool=draft["tool"], by=by, expected=version,
        )
    await _wait(request, written)
    return toast(request, _go(request, f"/console/modules/{module_id}"), "Undone: the draft is as it was.")
