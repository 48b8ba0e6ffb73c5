"""The code modules list (docs/kinds/code-modules.md): search, state, role and used-by filters with facet counts,
ordering and paging, all server side; the filters live in the URL, so a link reproduces the view.
Each row shows what the module does, its state, its role and how many modules use it.

The drafts selected in the list publish together as one changeset (B6) through a review like a
single publish's: the changeset's dry run (every check and example, dependencies first), a diff
per module and a message; and the changesets published are listed. These pages sit on one path
segment beside the list, named with a hyphen so that no module id (R1) can ever be one of them."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from application import queries
from application.context import CONSOLE
from application.modules import Changeset
from toolkinds.code.lifecycle import definition_diff, publish_message, published_label
from console.routing import ConsoleRoute, problem_of
from console.security import Reader, Writer
from console.toast import toast
from domain.errors import ModuleError
from domain.model import STATES, CodeModule
from projections.interface import ORDER_FIELDS

router = APIRouter(prefix="/console/modules", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 20
ROLES = {"tool": True, "library": False}
# The orderings the page offers, by their column's label.
ORDERINGS = {"id": "Name", "description": "What it does", "state": "State", "role": "Role"}
assert set(ORDERINGS) == set(ORDER_FIELDS)
DEFAULTS = {"orderBy": "id", "ascending": "true", "offset": 0}


def _link(filters: dict[str, Any], **changes: Any) -> str:
    """The list's URL for `filters` changed by `changes`, without the parameters at their default."""
    merged = {**filters, **changes}
    kept = {k: v for k, v in merged.items() if v not in (None, "") and DEFAULTS.get(k) != v}
    return "/console/modules" + ("?" + urlencode(kept) if kept else "")


@router.get("")
def module_list(
    request: Request,
    visitor: Reader,
    search: Annotated[str, Query(max_length=200)] = "",
    state: Annotated[str, Query(pattern="^(|" + "|".join(STATES) + ")$")] = "",
    role: Annotated[str, Query(pattern="^(|tool|library)$")] = "",
    usedBy: Annotated[str, Query(max_length=200)] = "",
    orderBy: Annotated[str, Query(pattern="^(" + "|".join(ORDER_FIELDS) + ")$")] = "id",
    ascending: bool = True,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Response:
    services = request.app.state.services
    filters = {"search": search.strip(), "state": state, "role": role, "usedBy": usedBy.strip(),
               "orderBy": orderBy, "ascending": "true" if ascending else "false"}
    page = queries.list_modules(
        services, visitor.principal.tenant, search=filters["search"] or None, state=state or None,
        tool=ROLES.get(role), used_by=filters["usedBy"] or None, offset=offset, limit=PAGE_SIZE,
        order_by=orderBy, ascending=ascending, count_users=True,
    )
    last = max(0, (page.total - 1) // PAGE_SIZE * PAGE_SIZE)
    paging = {
        "offset": offset, "size": PAGE_SIZE, "total": page.total,
        "number": offset // PAGE_SIZE + 1, "pages": max(1, -(-page.total // PAGE_SIZE)),
        "previous": _link(filters, offset=min(last, max(0, offset - PAGE_SIZE))) if offset > 0 else None,
        "next": _link(filters, offset=offset + PAGE_SIZE) if offset + PAGE_SIZE < page.total else None,
    }
    columns = [
        {"field": field, "label": label, "current": orderBy == field,
         "sort": ("ascending" if ascending else "descending") if orderBy == field else None,
         # a column's header orders by it; the current column's header reverses the order
         "link": _link(filters, orderBy=field, ascending="false" if orderBy == field and ascending else "true", offset=0)}
        for field, label in ORDERINGS.items()
    ]
    # htmx's filter form swaps only #results; any other request (a link, a reload, htmx restoring
    # history) gets the whole page
    fragment = (request.headers.get("hx-request") == "true" and request.headers.get("hx-target") == "results"
                and request.headers.get("hx-history-restore-request") != "true")
    return request.app.state.console_pages.render(
        request, "modules/_results.html" if fragment else "modules/list.html",
        fragment=fragment, filters=filters, page=page, paging=paging, states=STATES, columns=columns, orderings=ORDERINGS,
        roles=_published_roles(services, visitor.principal.tenant, page.collection),
        filtered=any(filters[k] for k in ("search", "state", "role", "usedBy")),
        link=lambda **c: _link(filters, offset=0, **c),
        # where #results reads itself again after a changeset is published (the same view)
        results_url=_link(filters, offset=offset),
    )


def role_of(definition: dict[str, Any] | None) -> str:
    return "tool" if definition and definition.get("tool") else "library"


def roles(module: CodeModule) -> dict[str, str | None]:
    """What a module is to its callers: the published version's role (the draft's while it was
    never published), and the draft's when a pending draft would change it ("tool (draft: library)")."""
    if module.published is None:
        return {"shown": role_of(module.draft), "draft": None}
    shown = role_of(module.published)
    drafted = role_of(module.draft) if module.draft is not None else shown
    return {"shown": shown, "draft": drafted if drafted != shown else None}


def _published_roles(services: Any, tenant: str, rows: list[dict[str, Any]]) -> dict[str, dict[str, str | None]]:
    """The Role column of the rows with a pending draft (the read side's role is the draft's): the
    published version's, with the draft's beside it when it differs. A page holds at most PAGE_SIZE rows."""
    found = {}
    for row in rows:
        if row.get("state") != "DRAFT":
            continue
        module = services.store.find(tenant, row["id"])
        if module is not None:
            found[row["id"]] = roles(module)
    return found


# -- publish the selected drafts as one changeset (B6) -------------------------------------------


@router.get("/publish-selected")
async def publish_selected_review(
    request: Request, visitor: Writer, ids: Annotated[list[str] | None, Query()] = None,
) -> Response:
    """The review of the drafts selected in the list: the changeset's dry run (the drafts and every
    module importing one of them, each checked once with every new version in place, and its
    examples run; dependencies first), a diff of each draft against its published version, a
    message, and Publish when every check passes. Without JavaScript, the same review as a page."""
    services = request.app.state.services
    principal = visitor.principal
    chosen = ids or []
    context: dict[str, Any] = {"ids": chosen, "problem": None, "review": None}
    try:
        changeset = await run_in_threadpool(lambda: services.modules.publish_changeset(
            principal.tenant, chosen, by=principal.name, context=queries.call_context(principal, CONSOLE), dry_run=True))
    except ModuleError as error:  # none selected, an id twice, no draft (R10), unknown, R5 across the drafts
        context["problem"] = problem_of(error)
    else:
        context["review"] = _review(services, principal.tenant, changeset)
    fragment = request.headers.get("hx-request") == "true"
    return request.app.state.console_pages.render(
        request, "modules/_changeset_review.html" if fragment else "modules/publish_selected.html", **context)


@router.post("/publish-selected")
async def publish_selected(request: Request, visitor: Writer) -> Response:
    """The changeset itself: every draft the review showed, at the version it showed (If-Match per
    module, B7), checked again and recorded in one transaction. A refusal names every failing
    module; success names the changeset and each new version, and the list reads itself again."""
    form = await request.form()
    services = request.app.state.services
    principal = visitor.principal
    ids = [value for value in form.getlist("ids") if isinstance(value, str)]
    expected = {module_id: int(value) for module_id in ids
                if isinstance(value := form.get(f"version_{module_id}"), str) and value.isdigit()}
    fragment = request.headers.get("hx-request") == "true"
    render = request.app.state.console_pages.render
    try:
        message = publish_message(form)
        changeset = await run_in_threadpool(lambda: services.modules.publish_changeset(
            principal.tenant, ids, by=principal.name, message=message, expected=expected,
            context=queries.call_context(principal, CONSOLE)))
    except ModuleError as error:  # 422 with every failing module, 412, 409 no draft, R5, a bad request
        problem = problem_of(error)
        if fragment:
            return render(request, "modules/_changeset_refused.html", status=problem["status"], problem=problem)
        return render(request, "modules/publish_selected.html", status=problem["status"], ids=ids, problem=problem, review=None)
    await services.runner.wait_async(changeset.position, services.settings.read_your_writes_seconds)
    said = f"Published {len(changeset.modules)} module{'s' if len(changeset.modules) != 1 else ''} together."
    if not fragment:
        return toast(request, RedirectResponse(f"/console/modules/changeset-history?{urlencode({'id': changeset.id})}", status_code=303), said)
    return toast(request, render(request, "modules/_changeset_published.html", headers={"HX-Trigger": "console:modules-changed"},
                                 changeset={"id": changeset.id, "message": message,
                                            "modules": [{"id": m.module_id, "version": m.published_version} for m in changeset.modules]}),
                 said)


def _review(services: Any, tenant: str, changeset: Changeset) -> dict[str, Any]:
    """The dry run as the review shows it: each check (the drafts and their importers, dependencies
    first) with how many examples it ran, and each draft with its diff, in the checks' order."""
    drafts = {m.module_id: m for m in changeset.modules}
    checks = []
    for name, result in changeset.checks:
        error = result.error.as_dict() if result.error is not None else None
        checks.append({"module": name, "ok": error is None, "error": error, "drafted": name in drafts,
                       "examples": _examples(services, tenant, name, drafts)})
    order = {check["module"]: i for i, check in enumerate(checks)}
    modules = sorted(changeset.modules, key=lambda m: order.get(m.module_id, len(order)))
    return {
        "would_publish": all(check["ok"] for check in checks),
        "failing": [check["module"] for check in checks if not check["ok"]],
        "checks": checks,
        "modules": [_drafted(m) for m in modules],
    }


def _drafted(module: CodeModule) -> dict[str, Any]:
    return {"id": module.module_id, "version": module.version, "next": module.published_version + 1,
            "diff": definition_diff(module.published, module.draft, published_label(module), "the draft")}


def _examples(services: Any, tenant: str, name: str, drafts: dict[str, CodeModule]) -> int:
    """How many examples (B4) a check ran: the draft's of a module in the changeset, the published
    version's of an importer."""
    module = drafts.get(name) or services.store.find(tenant, name)
    definition = None if module is None else module.draft if name in drafts else module.published
    tool = definition["tool"] if definition else None
    return len(tool.get("examples") or []) if tool else 0


# -- the changesets published ------------------------------------------------------------------


@router.get("/changeset-history")
def changeset_history(request: Request, visitor: Reader, id: Annotated[str, Query(max_length=64)] = "") -> Response:
    """Every changeset of the tenant, newest first (B6): its id, message, who, when, and each
    module with the version it made; `?id=` shows one (where a module's history links)."""
    found = request.app.state.services.history.changesets(visitor.principal.tenant)
    chosen = id.strip()
    if chosen:
        found = [c for c in found if c["id"] == chosen]
    return request.app.state.console_pages.render(
        request, "modules/changesets.html", status=404 if chosen and not found else 200, changesets=found, chosen=chosen)
