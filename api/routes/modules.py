"""Admin REST API of code modules (DESIGN §3): HTTP in, an application command, JSON out."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response

from api.deps import Admin, Reader, ServicesDep
from api.problems import documented, etag
from api.presenters import execution_out, module_out
from api.schemas import (
    DuplicateRequest,
    ExecutionOut,
    ModuleCreate,
    ModuleList,
    ModulePublic,
    ModuleUpdate,
    PublishPreview,
    RevertRequest,
    TestRequest,
    Usage,
)
from domain import history
from application.modules import UNSET, Written
from domain.errors import UnknownModule
from domain.callers import AGENT, PLAN, tool_names
from domain.model import STATES
from domain.rules import is_valid_id
from application.toolbox import answered
from infrastructure.auth import Principal
from api.services import Services
from projections.interface import MAX_LIMIT, ORDER_FIELDS, ListQuery, ReadModelUnavailable

log = logging.getLogger("toolsmith.api")

router = APIRouter(prefix="/api/v1/admin/code-modules", tags=["code modules"])


# Set on a write's answer when the list and search may not show the write yet (issue 12, 11b):
# `timeout` (the read model did not apply it within TOOLSMITH_READ_YOUR_WRITES_SECONDS) or
# `unavailable` (it is failing, or no runner follows the log: the API did not wait the bound).
READ_YOUR_WRITES = "Toolsmith-Read-Your-Writes"


def _answer(services: Services, principal: Principal, written: Written, response: Response) -> dict[str, Any] | None:
    """Waits (bounded) for the read model to apply the write, then presents the module (and its
    new ETag, B7); says so in a header when the read model did not apply it in time."""
    bound = services.settings.read_your_writes_seconds
    started = time.monotonic()
    if not services.runner.wait(written.position, bound):
        log.warning("read model behind a write", extra={"position": written.position})
        # A wait gives up before its bound only when the read model fails or no runner follows the log.
        response.headers[READ_YOUR_WRITES] = "timeout" if time.monotonic() - started >= bound else "unavailable"
    if written.module is None:
        return None
    response.headers["ETag"] = etag(written.module.version)
    return module_out(written.module, _used_by(services, principal.tenant, written.module.module_id))


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


def _used_by(services: Services, tenant: str, module_id: str) -> list[str]:
    """The read model's used-by list; while it is unavailable, the import graph's (the event
    store's) answer, so that writes and single-module reads keep working."""
    try:
        return services.read_model.used_by(tenant, module_id)
    except ReadModelUnavailable:
        return services.store.graph(tenant).importers_of(module_id)


def _named_by_callers(services: Services, tenant: str, caller: str | None) -> tuple[str, ...]:
    """`usedBy` may name a plan or an agent: the tools its nodes or its allowed tools name."""
    if caller is None:
        return ()
    registry = services.store.registry(tenant)
    found = [tool_names(kind, r) for kind in (PLAN, AGENT) if (r := registry.get(kind, caller)) is not None]
    return tuple(sorted({name for names in found for name in names}))


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
    query = ListQuery(
        search=search or None,
        state=state,
        tool=tool,
        used_by=usedBy,
        also_used=_named_by_callers(services, principal.tenant, usedBy),
        tags=tuple(tag),
        offset=offset,
        limit=limit,
        order_by=orderBy,
        ascending=ascending,
    )
    page = services.read_model.list(principal.tenant, query)
    return {"collection": page.collection, "total": page.total, "facets": page.facets}


@router.get("/availability", response_model=bool, responses=documented(400, 503))
def availability(services: ServicesDep, principal: Reader, id: str = "") -> bool:
    """Whether an id is valid (R1) and free (R2)."""
    return (
        is_valid_id(id)
        and services.store.tool_holding(principal.tenant, id) is None
        and not services.read_model.is_taken(principal.tenant, id)
    )


@router.post("", status_code=201, response_model=ModulePublic, responses=documented(400, 409, 413))
def create_module(body: ModuleCreate, services: ServicesDep, principal: Admin, response: Response) -> dict[str, Any] | None:
    """Create a module as an UNPUBLISHED draft."""
    written = services.modules.create(
        principal.tenant,
        body.id,
        description=body.description,
        content=body.draftContent,
        imports=body.draftImports,
        tool=body.tool.model_dump() if body.tool else None,
        by=principal.name,
    )
    return _answer(services, principal, written, response)


@router.post("/test", response_model=ExecutionOut, responses=documented(400, 413, 429, 503))
def test_module(body: TestRequest, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Run a definition as it stands in the editor; nothing is saved."""
    result = services.execution.test(
        principal.tenant,
        content=body.draftContent,
        imports=body.draftImports,
        tool=body.tool.model_dump() if body.tool else None,
        input=body.input,
        module_id=body.id,
        context=call_context(principal),
    )
    return execution_out(answered(result))


@router.get("/{id}", response_model=ModulePublic, responses=documented(400, 404))
def get_module(
    id: str,
    services: ServicesDep,
    principal: Reader,
    response: Response,
    asOf: Annotated[datetime | None, Query(description="an ISO 8601 instant: the module as it stood then (B2)")] = None,
) -> dict[str, Any]:
    """The whole module: its draft, its published version and who uses it; or, with `asOf`, as it was."""
    if asOf is None:
        module = services.store.module(principal.tenant, id)
        used_by = _used_by(services, principal.tenant, id)
    else:
        at = asOf if asOf.tzinfo is not None else asOf.replace(tzinfo=timezone.utc)
        past = history.module_as_of(services.history.module_events(principal.tenant, id), at)
        if past is None:
            raise UnknownModule(id)
        module = past
        used_by = history.importers_as_of(services.history.graph_events(principal.tenant), id, at)
    response.headers["ETag"] = etag(module.version)
    return module_out(module, used_by)


@router.put("/{id}", response_model=ModulePublic, responses=documented(400, 404, 409, 412, 413))
def update_module(
    id: str, body: ModuleUpdate, services: ServicesDep, principal: Admin, response: Response, if_match: IfMatch = None
) -> dict[str, Any] | None:
    """Change the description, the draft source and imports, or the tool section."""
    given = body.model_fields_set
    written = services.modules.update(
        principal.tenant,
        id,
        description=body.description if "description" in given else UNSET,
        content=body.draftContent if "draftContent" in given else UNSET,
        imports=body.draftImports if "draftImports" in given else UNSET,
        tool=(body.tool.model_dump() if body.tool else None) if "tool" in given else UNSET,
        by=principal.name,
        expected=_expected(if_match),
    )
    return _answer(services, principal, written, response)


@router.post(
    "/{id}/publish",
    response_model=ModulePublic | PublishPreview,
    responses=documented(400, 404, 409, 412, 422, 429, 503),
)
def publish_module(
    id: str,
    services: ServicesDep,
    principal: Admin,
    response: Response,
    if_match: IfMatch = None,
    dryRun: Annotated[bool, Query(description="check the module and every dependent, publish nothing (B3)")] = False,
) -> dict[str, Any] | None:
    """Publish the draft after checking the module and every module that imports it."""
    if dryRun:
        module, checks = services.modules.preview_publish(principal.tenant, id, context=call_context(principal))
        return {
            "id": id,
            "version": module.published_version + 1,
            "wouldPublish": all(result.error is None for _, result in checks),
            "checks": [
                {"module": name, "ok": result.error is None, "error": result.error.as_dict() if result.error else None}
                for name, result in checks
            ],
        }
    written = services.modules.publish(principal.tenant, id, by=principal.name, expected=_expected(if_match), context=call_context(principal))
    return _answer(services, principal, written, response)


@router.post("/{id}/revert", response_model=ModulePublic, responses=documented(400, 404, 409, 412))
def revert_module(
    id: str, body: RevertRequest, services: ServicesDep, principal: Admin, response: Response, if_match: IfMatch = None
) -> dict[str, Any] | None:
    """Make a published version's definition the draft again (B1); publish it to make it live."""
    written = services.modules.revert(principal.tenant, id, body.version, by=principal.name, expected=_expected(if_match))
    return _answer(services, principal, written, response)


@router.delete("/{id}/draft", response_model=ModulePublic, responses=documented(404, 409, 412))
def discard_draft(id: str, services: ServicesDep, principal: Admin, response: Response, if_match: IfMatch = None) -> dict[str, Any] | None:
    """Drop the draft and return to the published version."""
    written = services.modules.discard_draft(principal.tenant, id, by=principal.name, expected=_expected(if_match))
    return _answer(services, principal, written, response)


@router.delete("/{id}", status_code=204, response_class=Response, responses=documented(404, 409, 412))
def delete_module(id: str, services: ServicesDep, principal: Admin, if_match: IfMatch = None) -> Response:
    """Delete a module nothing uses; its history stays."""
    answer = Response(status_code=204)
    _answer(services, principal, services.modules.delete(principal.tenant, id, by=principal.name, expected=_expected(if_match)), answer)
    return answer


@router.get("/{id}/usage", response_model=Usage, responses=documented(404))
def module_usage(id: str, services: ServicesDep, principal: Reader) -> dict[str, list[str]]:
    """The modules, plans and agents that use the module."""
    services.store.module(principal.tenant, id)
    return {"modules": _used_by(services, principal.tenant, id), **services.records.users_of(principal.tenant, id)}


@router.post("/{id}/duplicate", status_code=201, response_model=ModulePublic, responses=documented(400, 404, 409, 413))
def duplicate_module(id: str, body: DuplicateRequest, services: ServicesDep, principal: Admin, response: Response) -> dict[str, Any] | None:
    """Start a new UNPUBLISHED module from this one's current definition."""
    return _answer(services, principal, services.modules.duplicate(principal.tenant, id, body.id, by=principal.name), response)


def call_context(principal: Principal, **extra: Any) -> dict[str, Any]:
    """What `ai.context()` returns to the code: never a token (V2)."""
    return {
        "user": {"id": principal.name, "roles": [principal.role], "locale": "en"},
        "tenant": principal.tenant,
        "provider": None,
        "usageProfile": principal.usage_profile,
        "conversation": None,
        "request": None,
        "planRun": None,
        **extra,
    }
