"""The REST routes every configured kind shares (docs/kinds/index.md, docs/rest-api.md): a tool whose
configuration is live (no draft), each change an event of the tool's own aggregate. Written once,
for API URL tools, File Search tools and any kind built the same way:

- `GET ""` lists the tenant's tools by name; `POST ""` creates one (201, live at once, its `ETag`);
- `GET /{id}` reads one with its `ETag`, or with `asOf` as it stood then (B2: the instant names its
  time zone); `PUT /{id}` replaces its configuration, refused with 412 when `If-Match` names
  another version (B7); `DELETE /{id}` deletes it (409 while a plan, an agent or another tool names
  it; its history stays);
- `GET /{id}/history` is every event of the tool through all its lives.

Each kind's `routes.py` calls `configured_routes` on its own router with its request models and the
way it shows a tool, then adds what is its own (a File Search tool's documents, an API URL tool's
Playground). The kind (a `ConfiguredKind`, `application/kinds/configured.py`) answers the commands
(`save`, `delete`) and the queries (`tools`, `get`, `events`), and refuses what breaks a rule;
these routes only carry a request to it.
"""

# No `from __future__ import annotations`: the routes' annotations name this call's request models,
# which FastAPI could not resolve from a string.
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Protocol

from fastapi import APIRouter, Header, Query, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from api.deps import Admin, Reader, ServicesDep
from api.problems import documented, etag, if_match_version
from api.schemas import DESCRIPTION, IDENTIFIER, TAGS, documents, requires
from application.kinds.configured import ConfiguredKind
from domain import history
from domain.errors import InvalidDefinition, UnknownRecord, Violation

IfMatch = Annotated[str | None, Header(alias="If-Match", description="the tool's ETag as read (B7)")]
AsOf = Annotated[datetime | None, Query(description="an ISO 8601 instant: the tool as it stood then (B2)")]


class ConfiguredBody(BaseModel):
    """The fields every configured kind's body has, before its own: the tool's name (optional on PUT,
    where the path names it), what it does, its tags, whether a chat may call it, whether it is on.
    `as_config` is the configuration the kind's `save` takes (every field but the id)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=requires("description"))
    # The rules JSON Schema can say are in the document too (api.schemas.documents); the domain enforces them.
    id: str | None = Field(None, max_length=200, description="the tool's name (R1); on PUT it must be the path's",
                           **documents(**IDENTIFIER))
    description: str = Field("", max_length=4_000, **documents(**DESCRIPTION))
    tags: list[str] = Field(default_factory=list, max_length=100, **documents(**TAGS))
    exposeInChat: bool = True
    enabled: bool = True

    def as_config(self) -> dict[str, Any]:
        return self.model_dump(exclude={"id"})


# A new tool's body says so: its `id` is required (`class XCreate(XBody): model_config = CREATING`).
CREATING = ConfigDict(extra="forbid", json_schema_extra=requires("id", "description", not_null=("id",)))


class Body(Protocol):
    """A configured kind's request body: a tool's `id` (optional on PUT) and its configuration."""

    id: str | None

    def as_config(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ConfiguredApi:
    """One configured kind as its REST routes name it."""

    kind: type[ConfiguredKind[Any]]  # its ToolKind class, as `services.toolbox.kind` finds it
    noun: str  # "API URL tool": what a 404 names
    one: str  # "api_tool": the routes' names (`list_api_tools`, `get_api_tool`, …) and so the OpenAPI operation ids
    body: type[ConfiguredBody]  # the PUT body (`id` optional)
    create: type[ConfiguredBody]  # the POST body (`id` required: `model_config = CREATING`)
    public: Callable[[Any], dict[str, Any]]  # a tool as the API shows it
    # Each route's description in the OpenAPI document where the kind says more than `DESCRIPTIONS`.
    said: Mapping[str, str] = field(default_factory=dict)

    def kind_of(self, services: Any) -> Any:  # the kind's own class, with what it adds (`test`, `documents`)
        return services.toolbox.kind(self.kind)

    def description(self, route: str) -> str:
        return self.said.get(route) or DESCRIPTIONS[route].format(noun=self.noun, a=_article(self.noun))


# What each route says of itself in the OpenAPI document, unless the kind says more.
DESCRIPTIONS = {
    "list": "Every {noun} of the tenant, by name.",
    "create": "Create {a} {noun}; it is live at once.",
    "get": "One {noun}; with `asOf`, as it stood at that instant.",
    "replace": "Replace the tool's configuration; the change is live at once on every server it is attached to.",
    "delete": "Delete the tool (refused while a plan or an agent names it); its history stays.",
    "history": "Every event of the tool, through all its lives: type, version, time, author, what changed.",
}


def _article(noun: str) -> str:
    return "an" if noun[:1].upper() in "AEIOU" else "a"


def configured_routes(router: APIRouter, api: ConfiguredApi) -> APIRouter:
    """Adds the shared routes of `api`'s kind to `router` (its prefix is the kind's path) and answers it."""
    create_body, replace_body = api.create, api.body

    async def create(body: create_body, services: ServicesDep, principal: Admin, response: Response) -> dict[str, Any]:  # type: ignore[valid-type]
        given: Body = body  # type: ignore[assignment]
        if given.id is None:
            raise InvalidDefinition([Violation("id", "R1", "is required")])
        tool, _ = await run_in_threadpool(
            lambda: api.kind_of(services).save(principal.tenant, given.id, given.as_config(), by=principal.name, create=True))
        response.headers["ETag"] = etag(tool.version)
        return api.public(tool)

    def listed(services: ServicesDep, principal: Reader) -> list[dict[str, Any]]:
        return [api.public(tool) for tool in api.kind_of(services).tools(principal.tenant)]

    def read(id: str, services: ServicesDep, principal: Reader, response: Response, asOf: AsOf = None) -> dict[str, Any]:
        kind = api.kind_of(services)
        if asOf is None:
            tool = kind.get(principal.tenant, id)
        else:
            if asOf.tzinfo is None:
                raise InvalidDefinition([Violation("asOf", "B2", "must name its time zone (2024-05-06T10:00:00Z)")])
            tool = history.replay(kind.events(principal.tenant, id), asOf)
            if tool is None or tool.deleted:
                raise UnknownRecord(api.noun, id)
        response.headers["ETag"] = etag(tool.version)
        return api.public(tool)

    async def replace(id: str, body: replace_body, services: ServicesDep, principal: Admin, response: Response,  # type: ignore[valid-type]
                      if_match: IfMatch = None) -> dict[str, Any]:
        given: Body = body  # type: ignore[assignment]
        if given.id is not None and given.id != id:
            raise InvalidDefinition([Violation("id", "R1", f"must be the path's id {id!r} (a tool is renamed by creating another)")])
        expected = if_match_version(if_match)
        tool, _ = await run_in_threadpool(lambda: api.kind_of(services).save(
            principal.tenant, id, given.as_config(), by=principal.name, create=False, expected=expected))
        response.headers["ETag"] = etag(tool.version)
        return api.public(tool)

    async def delete(id: str, services: ServicesDep, principal: Admin) -> Response:
        await run_in_threadpool(lambda: api.kind_of(services).delete(principal.tenant, id, by=principal.name))
        return Response(status_code=204)

    def events(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:
        found = api.kind_of(services).events(principal.tenant, id)
        if not found:
            raise UnknownRecord(api.noun, id)
        return {"id": id, "events": [history.entry(e) for e in found]}

    one = api.one
    # Each route keeps the name it had when each kind wrote its own: its OpenAPI operation id and summary.
    router.add_api_route("", listed, methods=["GET"], name=f"list_{one}s", description=api.description("list"),
                         responses=documented())
    router.add_api_route("", create, methods=["POST"], status_code=201, name=f"create_{one}", description=api.description("create"),
                         responses=documented(400, 409))
    router.add_api_route("/{id}", read, methods=["GET"], name=f"get_{one}", description=api.description("get"),
                         responses=documented(400, 404))
    router.add_api_route("/{id}", replace, methods=["PUT"], name=f"replace_{one}", description=api.description("replace"),
                         responses=documented(400, 404, 409, 412))
    router.add_api_route("/{id}", delete, methods=["DELETE"], status_code=204, response_class=Response, name=f"delete_{one}",
                         description=api.description("delete"), responses=documented(404, 409))
    router.add_api_route("/{id}/history", events, methods=["GET"], name=f"{one}_history", description=api.description("history"),
                         responses=documented(404))
    return router
