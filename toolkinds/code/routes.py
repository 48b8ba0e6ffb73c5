"""Admin REST API of code modules (docs/rest-api.md): HTTP in, an application command, JSON out."""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Response
from starlette.concurrency import run_in_threadpool

from api.paths import ADMIN_API
from application import queries
from api.deps import Admin, Reader, ServicesDep
from application.context import REST
from application.queries import call_context
from api.problems import documented, etag
from api.presenters import execution_out, module_out
from api.schemas import (
    ChangesetOut,
    ChangesetPreview,
    ChangesetRequest,
    PublishRequest,
    DuplicateRequest,
    ExecutionOut,
    TestOut,
    ModuleCreate,
    ModuleList,
    ModulePublic,
    ModuleUpdate,
    PublishPreview,
    RevertRequest,
    TestRequest,
    Usage,
)
from application.modules import UNSET, Written
from domain.model import STATES
from application.toolbox import answered, test_entry
from application.principals import Principal
from api.services import Services
from projections.interface import MAX_LIMIT, ORDER_FIELDS

log = logging.getLogger("toolsmith.api")

router = APIRouter(prefix=f"{ADMIN_API}/code-modules", tags=["code modules"])


# Set on a write's answer when the list and search may not show the write yet (issue 12, 11b):
# `timeout` (the read model did not apply it within TOOLSMITH_READ_YOUR_WRITES_SECONDS) or
# `unavailable` (it is failing, or no runner follows the log: the API did not wait the bound).
READ_YOUR_WRITES = "Toolsmith-Read-Your-Writes"


async def _answer(services: Services, principal: Principal, written: Written, response: Response) -> dict[str, Any] | None:
    """Waits (bounded) for the read model to apply the write, then presents the module (and its
    new ETag, B7); says so in a header when the read model did not apply it in time. The wait
    holds no worker thread (issue 15, 7): writers waiting on the read side leave them to reads."""
    bound = services.settings.read_your_writes_seconds
    started = time.monotonic()
    if not await services.runner.wait_async(written.position, bound):
        log.warning("read model behind a write", extra={"position": written.position})
        # A wait gives up before its bound only when the read model fails or no runner follows the log.
        response.headers[READ_YOUR_WRITES] = "timeout" if time.monotonic() - started >= bound else "unavailable"
    if written.module is None:
        return None
    response.headers["ETag"] = etag(written.module.version)
    module = written.module
    # Its used-by list from the import graph, the event store's, as exact as the read model's and
    # one query fewer for a write to answer (with OpenSearch, 5 ms of issue 15's write → listed).
    return await run_in_threadpool(lambda: module_out(module, services.store.graph(principal.tenant).importers_of(module.module_id)))


IfMatch = Annotated[
    str | None,
    Header(alias="If-Match", description="the module's ETag as read: the write happens only while it is still current (B7)"),
]


def _expected(if_match: str | None) -> int | None:
    """The aggregate version an `If-Match` names; None for none or `*`. A tag that is not one of
    ours can never match: -1."""
    if if_match is None or if_match.strip() == "*":
        return None
    tag = if_match.split(",")[0].strip().removeprefix("W/").strip('"')
    return int(tag) if tag.isdigit() else -1


@router.get("", response_model=ModuleList, responses=documented(400, 503))
def list_modules(
    services: ServicesDep,
    principal: Reader,
    search: str | None = None,
    state: Annotated[str | None, Query(pattern="^(" + "|".join(STATES) + ")$")] = None,
    tool: bool | None = None,
    usedBy: str | None = None,
    tag: Annotated[list[str], Query(description="only modules with every one of these tags")] = [],  # noqa: B006
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 20,
    orderBy: Annotated[str, Query(pattern="^(" + "|".join(ORDER_FIELDS) + ")$")] = "id",
    ascending: bool = True,
) -> dict[str, Any]:
    """List module summaries with search, filters, facets and paging."""
    page = queries.list_modules(services, principal.tenant, search=search, state=state, tool=tool, used_by=usedBy,
                                tags=tuple(tag), offset=offset, limit=limit, order_by=orderBy, ascending=ascending)
    return {"collection": page.collection, "total": page.total, "facets": page.facets}


@router.get("/availability", response_model=bool, responses=documented(400, 503))
def availability(services: ServicesDep, principal: Reader, id: str = "") -> bool:
    """Whether an id is valid (R1) and free (R2)."""
    return queries.is_available(services, principal.tenant, id)


@router.post("", status_code=201, response_model=ModulePublic, responses=documented(400, 409, 413))
async def create_module(body: ModuleCreate, services: ServicesDep, principal: Admin, response: Response) -> dict[str, Any] | None:
    """Create a module as an UNPUBLISHED draft."""
    written = await run_in_threadpool(lambda: services.modules.create(
        principal.tenant,
        body.id,
        description=body.description,
        content=body.draftContent,
        imports=body.draftImports,
        tool=body.tool.model_dump() if body.tool else None,
        by=principal.name,
    ))
    return await _answer(services, principal, written, response)


@router.post("/test", response_model=TestOut, response_model_exclude_unset=True, responses=documented(400, 413, 429, 503))
def test_module(body: TestRequest, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Run a definition as it stands in the editor; nothing is saved."""
    tool = body.tool.model_dump() if body.tool else None
    result = services.execution.test(
        principal.tenant,
        content=body.draftContent,
        imports=body.draftImports,
        tool=tool,
        input=body.input,
        module_id=body.id,
        context=call_context(principal, REST),
    )
    out = execution_out(answered(result, test_entry(tool)))
    examples = services.execution.test_examples(principal.tenant, content=body.draftContent, imports=body.draftImports,
                                                tool=tool, module_id=body.id, context=call_context(principal, REST))
    if examples:
        out["examples"] = [example.as_dict() for example in examples]
    return out


@router.get("/{id}", response_model=ModulePublic, responses=documented(400, 404))
def get_module(
    id: str,
    services: ServicesDep,
    principal: Reader,
    response: Response,
    asOf: Annotated[datetime | None, Query(description="an ISO 8601 instant: the module as it stood then (B2)")] = None,
) -> dict[str, Any]:
    """The whole module: its draft, its published version and who uses it; or, with `asOf`, as it was."""
    view = queries.module_view(services, principal.tenant, id, asOf)
    response.headers["ETag"] = etag(view.module.version)
    return module_out(view.module, view.used_by)


@router.put("/{id}", response_model=ModulePublic, responses=documented(400, 404, 409, 412, 413))
async def update_module(
    id: str, body: ModuleUpdate, services: ServicesDep, principal: Admin, response: Response, if_match: IfMatch = None
) -> dict[str, Any] | None:
    """Change the description, the draft source and imports, or the tool section."""
    given = body.model_fields_set
    written = await run_in_threadpool(lambda: services.modules.update(
        principal.tenant,
        id,
        description=body.description if "description" in given else UNSET,
        content=body.draftContent if "draftContent" in given else UNSET,
        imports=body.draftImports if "draftImports" in given else UNSET,
        tool=(body.tool.model_dump() if body.tool else None) if "tool" in given else UNSET,
        by=principal.name,
        expected=_expected(if_match),
    ))
    return await _answer(services, principal, written, response)


@router.post(
    "/{id}/publish",
    response_model=ModulePublic | PublishPreview,
    responses=documented(400, 404, 409, 412, 422, 429, 503),
)
async def publish_module(
    id: str,
    services: ServicesDep,
    principal: Admin,
    response: Response,
    if_match: IfMatch = None,
    dryRun: Annotated[bool, Query(description="check the module and every dependent, publish nothing (B3)")] = False,
    body: PublishRequest | None = Body(None),
) -> dict[str, Any] | None:
    """Publish the draft after checking the module and every module that imports it (and their
    examples, B4); an optional `message` is kept with the version."""
    if dryRun:
        return await run_in_threadpool(queries.publish_preview, services, call_context(principal, REST), id)
    message = body.message if body is not None else None
    written = await run_in_threadpool(lambda: services.modules.publish(
        principal.tenant, id, by=principal.name, expected=_expected(if_match), context=call_context(principal, REST), message=message))
    return await _answer(services, principal, written, response)


@router.post("/publish", response_model=ChangesetOut | ChangesetPreview, responses=documented(400, 404, 409, 412, 422, 429, 503))
async def publish_changeset(
    body: ChangesetRequest, services: ServicesDep, principal: Admin,
    dryRun: Annotated[bool, Query(description="check every draft and every dependent together, publish nothing")] = False,
) -> dict[str, Any]:
    """B6: publish several drafts as one changeset, checked together against the graph as it will
    be (a library may change an export together with its importers) and recorded in one
    transaction: all or nothing. A refusal (422) names every failing module and why."""
    expected = {module_id: _expected(tag) for module_id, tag in body.ifMatch.items()}
    expected = {k: v for k, v in expected.items() if v is not None}
    changeset = await run_in_threadpool(lambda: services.modules.publish_changeset(
        principal.tenant, body.ids, by=principal.name, message=body.message, expected=expected,
        context=call_context(principal, REST), dry_run=dryRun))
    checks = [{"module": name, "ok": result.error is None, "error": result.error.as_dict() if result.error else None}
              for name, result in changeset.checks]
    if dryRun:
        return {"wouldPublish": all(c["ok"] for c in checks), "checks": checks,
                "modules": [{"id": m.module_id, "version": m.published_version + 1} for m in changeset.modules]}
    await services.runner.wait_async(changeset.position, services.settings.read_your_writes_seconds)
    first = changeset.modules[0]
    return {"id": changeset.id, "message": body.message, "by": principal.name, "at": first.published_at,
            "modules": [{"id": m.module_id, "version": m.published_version} for m in changeset.modules]}


@router.post("/{id}/revert", response_model=ModulePublic, responses=documented(400, 404, 409, 412))
async def revert_module(
    id: str, body: RevertRequest, services: ServicesDep, principal: Admin, response: Response, if_match: IfMatch = None
) -> dict[str, Any] | None:
    """Make a published version's definition the draft again (B1); publish it to make it live."""
    written = await run_in_threadpool(lambda: services.modules.revert(
        principal.tenant, id, body.version, by=principal.name, expected=_expected(if_match)))
    return await _answer(services, principal, written, response)


@router.delete("/{id}/draft", response_model=ModulePublic, responses=documented(404, 409, 412))
async def discard_draft(id: str, services: ServicesDep, principal: Admin, response: Response, if_match: IfMatch = None) -> dict[str, Any] | None:
    """Drop the draft and return to the published version."""
    written = await run_in_threadpool(lambda: services.modules.discard_draft(
        principal.tenant, id, by=principal.name, expected=_expected(if_match)))
    return await _answer(services, principal, written, response)


@router.delete("/{id}", status_code=204, response_class=Response, responses=documented(404, 409, 412))
async def delete_module(id: str, services: ServicesDep, principal: Admin, if_match: IfMatch = None) -> Response:
    """Delete a module nothing uses; its history stays."""
    answer = Response(status_code=204)
    written = await run_in_threadpool(lambda: services.modules.delete(principal.tenant, id, by=principal.name, expected=_expected(if_match)))
    await _answer(services, principal, written, answer)
    return answer


@router.get("/{id}/usage", response_model=Usage, responses=documented(404))
def module_usage(id: str, services: ServicesDep, principal: Reader) -> dict[str, list[str]]:
    """The modules, plans and agents that use the module."""
    return queries.usage(services, principal.tenant, id)


@router.post("/{id}/duplicate", status_code=201, response_model=ModulePublic, responses=documented(400, 404, 409, 413))
async def duplicate_module(id: str, body: DuplicateRequest, services: ServicesDep, principal: Admin, response: Response) -> dict[str, Any] | None:
    """Start a new UNPUBLISHED module from this one's current definition."""
    written = await run_in_threadpool(lambda: services.modules.duplicate(principal.tenant, id, body.id, by=principal.name))
    return await _answer(services, principal, written, response)


