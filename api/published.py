"""The REST routes every published kind shares (docs/kinds/prompts.md, docs/rest-api.md): an item
written as a draft and published in numbered versions, as a code module is. Written once, for
prompts and any kind built on `application.kinds.published.ItemKind`:

- `GET ""` lists the tenant's items; `POST ""` creates one (201, UNPUBLISHED, its `ETag`);
- `GET /{id}` reads one with its `ETag`, or with `asOf` as it stood then (B2); `PUT /{id}` changes
  its draft (`If-Match`, B7); `DELETE /{id}` deletes it (its history stays); `DELETE /{id}/draft`
  discards the draft (R11);
- `POST /{id}/publish` publishes the draft (with a `message`); `POST /publish` publishes several
  drafts as one changeset (B6, all or nothing); `POST /{id}/revert` makes a version the draft (B1);
- `GET /{id}/history` is every event; `GET /{id}/versions` every published version; `GET
  /{id}/usage` the MCP servers and usage profiles that name it.

Each kind's `routes.py` calls `published_routes` with its request bodies and the way it shows an
item, then adds what is its own (a prompt's test render).
"""

# No `from __future__ import annotations`: the routes' annotations name this call's request models.
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from api.deps import Admin, Reader, ServicesDep
from api.problems import documented, etag, if_match_version
from application.kinds.published import MAX_CHANGESET, ItemKind
from domain import history
from domain.callers import PROFILE, SERVER
from domain.errors import InvalidDefinition, UnknownRecord, Violation

IfMatch = Annotated[str | None, Header(alias="If-Match", description="the item's ETag as read (B7)")]
AsOf = Annotated[datetime | None, Query(description="an ISO 8601 instant: the item as it stood then (B2)")]


class PublishBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str | None = Field(None, max_length=2_000, description="kept with the version, shown in history and versions")


class ChangesetBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ids: list[str] = Field(min_length=1, max_length=MAX_CHANGESET, description="the items whose drafts are published together")
    message: str | None = Field(None, max_length=2_000)
    ifMatch: dict[str, str] = Field({}, description="an item's ETag as read, by id (B7)")


class RevertBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: int = Field(description="the published version whose definition becomes the draft")


@dataclass(frozen=True)
class PublishedApi:
    """One published kind as its REST routes name it."""

    kind: type[ItemKind[Any]]
    noun: str  # "prompt": what a 404 names
    one: str  # "prompt": the routes' names, so the OpenAPI operation ids
    create: type[BaseModel]  # the POST body (`id` and the definition)
    update: type[BaseModel]  # the PUT body (every field optional: those given replace the draft's)
    public: Callable[[Any], dict[str, Any]]  # an item as the API shows it

    def kind_of(self, services: Any) -> Any:
        return services.toolbox.kind(self.kind)


def usage_of(services: Any, tenant: str, name: str) -> dict[str, list[str]]:
    """The MCP servers an item is attached to and the usage profiles that allow it by name."""
    registry = services.store.registry(tenant)
    return {"servers": [s["id"] for s in registry.all(SERVER) if name in s["tools"]],
            "usageProfiles": [p["id"] for p in registry.all(PROFILE) if name in p["allowedTools"]]}


def published_routes(router: APIRouter, api: PublishedApi) -> APIRouter:
    """Adds the shared routes of `api`'s kind to `router` (its prefix is the kind's path) and answers it."""
    create_body, update_body = api.create, api.update

    async def written(services: Any, item: Any, position: int | None, response: Response) -> dict[str, Any]:
        await services.runner.wait_async(position, services.settings.read_your_writes_seconds)
        response.headers["ETag"] = etag(item.version)
        return api.public(item)

    async def create(body: create_body, services: ServicesDep, principal: Admin, response: Response) -> dict[str, Any]:  # type: ignore[valid-type]
        given = body.model_dump(exclude={"id"})  # type: ignore[attr-defined]
        item, position = await run_in_threadpool(
            lambda: api.kind_of(services).create(principal.tenant, body.id, given, by=principal.name))  # type: ignore[attr-defined]
        return await written(services, item, position, response)

    def listed(services: ServicesDep, principal: Reader) -> list[dict[str, Any]]:
        return [api.public(item) for item in api.kind_of(services).items(principal.tenant)]

    def read(id: str, services: ServicesDep, principal: Reader, response: Response, asOf: AsOf = None) -> dict[str, Any]:
        kind = api.kind_of(services)
        if asOf is None:
            item = kind.get(principal.tenant, id)
        else:
            if asOf.tzinfo is None:
                raise InvalidDefinition([Violation("asOf", "B2", "must name its time zone (2024-05-06T10:00:00Z)")])
            item = history.replay(kind.events(principal.tenant, id), asOf)
            if item is None or item.deleted:
                raise UnknownRecord(api.noun, id)
        response.headers["ETag"] = etag(item.version)
        return api.public(item)

    async def update(id: str, body: update_body, services: ServicesDep, principal: Admin, response: Response,  # type: ignore[valid-type]
                     if_match: IfMatch = None) -> dict[str, Any]:
        given = body.model_dump(include=body.model_fields_set)  # type: ignore[attr-defined]
        expected = if_match_version(if_match)
        item, position = await run_in_threadpool(lambda: api.kind_of(services).update(
            principal.tenant, id, given, by=principal.name, expected=expected))
        return await written(services, item, position, response)

    async def publish(id: str, services: ServicesDep, principal: Admin, response: Response, if_match: IfMatch = None,
                      body: PublishBody | None = Body(None)) -> dict[str, Any]:
        expected = if_match_version(if_match)
        item, position = await run_in_threadpool(lambda: api.kind_of(services).publish(
            principal.tenant, id, by=principal.name, expected=expected, message=body.message if body else None))
        return await written(services, item, position, response)

    async def changeset(body: ChangesetBody, services: ServicesDep, principal: Admin) -> dict[str, Any]:
        expected = {k: v for k, tag in body.ifMatch.items() if (v := if_match_version(tag)) is not None}
        changeset_id, items, position = await run_in_threadpool(lambda: api.kind_of(services).publish_changeset(
            principal.tenant, body.ids, by=principal.name, message=body.message, expected=expected))
        await services.runner.wait_async(position, services.settings.read_your_writes_seconds)
        return {"id": changeset_id, "message": body.message, "by": principal.name, "at": items[0].published_at,
                "items": [{"id": i.item_id, "version": i.published_version} for i in items]}

    async def revert(id: str, body: RevertBody, services: ServicesDep, principal: Admin, response: Response,
                     if_match: IfMatch = None) -> dict[str, Any]:
        expected = if_match_version(if_match)
        item, position = await run_in_threadpool(lambda: api.kind_of(services).revert(
            principal.tenant, id, body.version, by=principal.name, expected=expected))
        return await written(services, item, position, response)

    async def discard(id: str, services: ServicesDep, principal: Admin, response: Response, if_match: IfMatch = None) -> dict[str, Any]:
        expected = if_match_version(if_match)
        item, position = await run_in_threadpool(lambda: api.kind_of(services).discard_draft(
            principal.tenant, id, by=principal.name, expected=expected))
        return await written(services, item, position, response)

    async def delete(id: str, services: ServicesDep, principal: Admin, if_match: IfMatch = None) -> Response:
        expected = if_match_version(if_match)
        position = await run_in_threadpool(lambda: api.kind_of(services).delete(
            principal.tenant, id, by=principal.name, expected=expected))
        await services.runner.wait_async(position, services.settings.read_your_writes_seconds)
        return Response(status_code=204)

    def events(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:
        found = api.kind_of(services).events(principal.tenant, id)
        if not found:
            raise UnknownRecord(api.noun, id)
        return {"id": id, "events": [history.entry(e) for e in found]}

    def versions(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:
        kind = api.kind_of(services)
        if not kind.events(principal.tenant, id):
            raise UnknownRecord(api.noun, id)
        return {"id": id, "versions": kind.versions(principal.tenant, id)}

    def usage(id: str, services: ServicesDep, principal: Reader) -> dict[str, list[str]]:
        api.kind_of(services).get(principal.tenant, id)
        return usage_of(services, principal.tenant, id)

    one, noun = api.one, api.noun
    add = router.add_api_route
    add("", listed, methods=["GET"], name=f"list_{one}s", description=f"Every {noun} of the tenant, by id.", responses=documented())
    add("", create, methods=["POST"], status_code=201, name=f"create_{one}", description=f"Create a {noun} as an UNPUBLISHED draft.",
        responses=documented(400, 409))
    add("/publish", changeset, methods=["POST"], name=f"publish_{one}_changeset",
        description=f"Publish several {noun}s' drafts as one changeset (B6): all or nothing.", responses=documented(400, 404, 409, 412))
    add("/{id}", read, methods=["GET"], name=f"get_{one}", description=f"One {noun}: its draft and published version; with `asOf`, as it was.",
        responses=documented(400, 404))
    add("/{id}", update, methods=["PUT"], name=f"update_{one}", description="Change the draft: the fields given replace the draft's.",
        responses=documented(400, 404, 409, 412))
    add("/{id}", delete, methods=["DELETE"], status_code=204, response_class=Response, name=f"delete_{one}",
        description=f"Delete the {noun}; its history stays.", responses=documented(404, 409, 412))
    add("/{id}/draft", discard, methods=["DELETE"], name=f"discard_{one}_draft", description="Drop the draft (R11).",
        responses=documented(404, 409, 412))
    add("/{id}/publish", publish, methods=["POST"], name=f"publish_{one}", description="Publish the draft as the next version.",
        responses=documented(400, 404, 409, 412))
    add("/{id}/revert", revert, methods=["POST"], name=f"revert_{one}", description="Make a published version the draft again (B1).",
        responses=documented(400, 404, 409, 412))
    add("/{id}/history", events, methods=["GET"], name=f"{one}_history", description="Every event, through all its lives.",
        responses=documented(404))
    add("/{id}/versions", versions, methods=["GET"], name=f"{one}_versions", description="Every published version, oldest first.",
        responses=documented(404))
    add("/{id}/usage", usage, methods=["GET"], name=f"{one}_usage", description="The MCP servers and usage profiles that name it.",
        responses=documented(404))
    return router
