"""Admin REST API of API URL tools (docs/kinds/api-url-tools.md): `/api/v1/admin/api-tools`.

Every change is live (no draft) and an event of the tool's own aggregate: `GET /{id}/history` shows
them and `GET /{id}?asOf=` the tool as it stood. `POST /{id}/test` is the Playground: one call
through exactly the path MCP uses, answered with the request as sent (secrets replaced), the
status, the bytes read, the time and the output.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Header, Query, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from api.deps import Admin, Reader, ServicesDep
from api.presenters import execution_out
from api.problems import documented, etag, if_match_version
from api.queries import call_context
from toolkinds.api_tools.kind import ApiToolKind
from application.toolbox import answered
from api.schemas import DESCRIPTION, IDENTIFIER, TAGS, documents, requires
from toolkinds.api_tools import model as api_rules
from domain import history
from toolkinds.api_tools.model import ApiTool
from domain.rules import PARAMETER_TYPES
from domain.errors import InvalidDefinition, UnknownRecord, Violation

router = APIRouter(prefix="/api/v1/admin/api-tools", tags=["API URL tools"])

Scalar = str | int | float | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SecretRef(_Strict):
    secret: str = Field(min_length=1, max_length=64, description="the id of a secret (`/api/v1/admin/secrets`)")


class ApiParameter(_Strict):
    name: str = Field(max_length=200)
    description: str = Field("", max_length=2_000)
    type: str = Field("string", description="string, integer, decimal, date, boolean, array or object (V1)",
                      **documents(enum=list(PARAMETER_TYPES)))
    required: bool = False
    default: Any = None
    location: Literal["path", "query", "header", "body"] = "query"
    bodyPath: str | None = Field(None, max_length=600, description="for a body value: where it goes (`filters.status`)")
    header: str | None = Field(None, max_length=100, description="for a header value: the header's name (default: the parameter's)")


class ApiAuth(_Strict):
    type: Literal["none", "apiKey", "bearer", "basic", "oauth2ClientCredentials"] = "none"
    # apiKey
    name: str | None = Field(None, max_length=100, alias="name")
    # `in` is a Python keyword: the field is `in_` here and `in` on the wire.
    in_: Literal["header", "query"] | None = Field(None, alias="in")
    secret: str | None = Field(None, max_length=64)
    username: str | None = Field(None, max_length=200)
    tokenUrl: str | None = Field(None, max_length=2_000)
    clientId: str | None = Field(None, max_length=500)
    clientSecret: str | None = Field(None, max_length=64)
    scope: str | None = Field(None, max_length=1_000)
    audience: str | None = Field(None, max_length=1_000)
    clientAuth: Literal["clientSecretBasic", "clientSecretPost"] | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def as_config(self) -> dict[str, Any]:
        given = self.model_dump(by_alias=True, exclude_none=True)
        if given.get("type") == "oauth2ClientCredentials":
            given.setdefault("clientAuth", "clientSecretBasic")
        return given


class ApiResponse(_Strict):
    maxBytes: int | None = Field(None, description="reading stops there (default 1 MiB, cap 5 MiB)")
    jmespath: str | None = Field(None, max_length=2_000, description="an expression applied to the JSON answer")
    module: str | None = Field(None, max_length=64, description="a published tool module whose run(response) post-processes")
    maxOutputChars: int | None = Field(None, description="longer output is cut with a marker (default 20,000)")


class ApiToolBody(_Strict):
    model_config = ConfigDict(extra="forbid", json_schema_extra=requires("description"))
    # The rules JSON Schema can say are in the document too (api.schemas.documents); the domain enforces them.
    id: str | None = Field(None, max_length=200, description="the tool's name (R1); on PUT it must be the path's",
                           **documents(**IDENTIFIER))
    description: str = Field("", max_length=4_000, **documents(**DESCRIPTION))
    tags: list[str] = Field(default_factory=list, max_length=100, **documents(**TAGS))
    exposeInChat: bool = True
    enabled: bool = True
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"
    urlTemplate: str = Field(max_length=4_000)
    parameters: list[ApiParameter] = Field(default_factory=list, max_length=100)
    fixedQuery: dict[str, Scalar] = Field(default_factory=dict)
    fixedBody: dict[str, Any] | None = None
    headers: dict[str, str | SecretRef] = Field(default_factory=dict)
    auth: ApiAuth = Field(default_factory=ApiAuth)
    response: ApiResponse = Field(default_factory=ApiResponse)
    timeoutMillis: int | None = Field(None, **documents(minimum=api_rules.TIMEOUT_RANGE[0], maximum=api_rules.TIMEOUT_RANGE[1]))
    connectTimeoutMillis: int | None = Field(None, **documents(minimum=api_rules.CONNECT_RANGE[0], maximum=api_rules.CONNECT_RANGE[1]))
    maxRedirects: int | None = Field(None, **documents(minimum=0, maximum=api_rules.REDIRECTS_CAP))

    def as_config(self) -> dict[str, Any]:
        given = self.model_dump(exclude={"id", "auth", "headers", "parameters"})
        given["auth"] = self.auth.as_config()
        given["headers"] = {k: (v.model_dump() if isinstance(v, SecretRef) else v) for k, v in self.headers.items()}
        given["parameters"] = [p.model_dump(exclude_none=True) | ({"default": p.default} if p.default is not None else {})
                               for p in self.parameters]
        return given


class ApiToolCreate(ApiToolBody):
    """A new tool's body: its `id` is required (on PUT the path names it)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=requires("id", "description", not_null=("id",)))


class ApiToolTestCall(_Strict):
    arguments: dict[str, Any] | None = Field(None, description="the tool's arguments, as a JSON object")


IfMatch = Annotated[str | None, Header(alias="If-Match", description="the tool's ETag as read (B7)")]


def _kind(services: Any) -> ApiToolKind:
    return services.toolbox.kind(ApiToolKind)


def public(tool: ApiTool) -> dict[str, Any]:
    """The tool as the API shows it: its configuration (secrets by id), who changed it and when."""
    return {"id": tool.tool_id, "callType": "API_URL", **tool.config, "version": tool.version,
            "createdBy": tool.created_by, "createdAt": tool.created_on, "updatedBy": tool.updated_by,
            "updatedAt": tool.modified_on}


@router.get("", responses=documented())
def list_api_tools(services: ServicesDep, principal: Reader) -> list[dict[str, Any]]:
    """Every API URL tool of the tenant, by name."""
    return [public(tool) for tool in _kind(services).tools(principal.tenant)]


@router.post("", status_code=201, responses=documented(400, 409))
async def create_api_tool(body: ApiToolCreate, services: ServicesDep, principal: Admin, response: Response) -> dict[str, Any]:
    """Create an API URL tool; it is live at once."""
    if body.id is None:
        raise InvalidDefinition([Violation("id", "R1", "is required")])
    tool, _ = await run_in_threadpool(
        lambda: _kind(services).save(principal.tenant, body.id, body.as_config(), by=principal.name, create=True))  # type: ignore[arg-type]
    response.headers["ETag"] = etag(tool.version)
    return public(tool)


@router.get("/{id}", responses=documented(400, 404))
def get_api_tool(
    id: str, services: ServicesDep, principal: Reader, response: Response,
    asOf: Annotated[datetime | None, Query(description="an ISO 8601 instant: the tool as it stood then (B2)")] = None,
) -> dict[str, Any]:
    """One API URL tool; with `asOf`, as it stood at that instant."""
    kind = _kind(services)
    if asOf is None:
        tool = kind.get(principal.tenant, id)
    else:
        if asOf.tzinfo is None:
            raise InvalidDefinition([Violation("asOf", "B2", "must name its time zone (2024-05-06T10:00:00Z)")])
        tool = history.replay(kind.events(principal.tenant, id), asOf)
        if tool is None or tool.deleted:
            raise UnknownRecord("API URL tool", id)
    response.headers["ETag"] = etag(tool.version)
    return public(tool)


@router.put("/{id}", responses=documented(400, 404, 409, 412))
async def replace_api_tool(id: str, body: ApiToolBody, services: ServicesDep, principal: Admin, response: Response,
                           if_match: IfMatch = None) -> dict[str, Any]:
    """Replace the tool's configuration; the change is live at once on every server it is attached to."""
    if body.id is not None and body.id != id:
        raise InvalidDefinition([Violation("id", "R1", f"must be the path's id {id!r} (a tool is renamed by creating another)")])
    expected = if_match_version(if_match)
    tool, _ = await run_in_threadpool(
        lambda: _kind(services).save(principal.tenant, id, body.as_config(), by=principal.name, create=False, expected=expected))
    response.headers["ETag"] = etag(tool.version)
    return public(tool)


@router.delete("/{id}", status_code=204, response_class=Response, responses=documented(404, 409))
async def delete_api_tool(id: str, services: ServicesDep, principal: Admin) -> Response:
    """Delete the tool (refused while a plan or an agent names it); its history stays."""
    await run_in_threadpool(lambda: _kind(services).delete(principal.tenant, id, by=principal.name))
    return Response(status_code=204)


@router.post("/{id}/test", responses=documented(400, 404))
async def test_api_tool(id: str, services: ServicesDep, principal: Admin,
                        body: ApiToolTestCall = Body(default_factory=ApiToolTestCall)) -> dict[str, Any]:
    """The Playground: one call with these arguments through the path MCP uses (enabled or not);
    the request as sent with every secret replaced, the status, the bytes read, the time, the output."""
    result, trace = await run_in_threadpool(
        lambda: _kind(services).test(principal.tenant, id, body.arguments, call_context(principal)))
    return {**trace.as_dict(), **execution_out(answered(result))}


@router.get("/{id}/history", responses=documented(404))
def api_tool_history(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:
    """Every event of the tool, through all its lives: type, version, time, author, what changed."""
    events = _kind(services).events(principal.tenant, id)
    if not events:
        raise UnknownRecord("API URL tool", id)
    return {"id": id, "events": [history.entry(e) for e in events]}
