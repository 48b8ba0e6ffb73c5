"""The REST API's request bodies and answers of API URL tools (docs/kinds/api-url-tools.md): what a
tool's configuration may hold as JSON Schema says it (the domain enforces every rule, the document
shows those JSON Schema can say), and a tool as the API shows it. The REST routes and the console's
editor both validate with these models, so that both refuse the same things."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.paths import ADMIN_API
from api.configured import CREATING, ConfiguredBody
from api.schemas import documents
from domain.rules import PARAMETER_TYPES
from toolkinds.api_tools import model as api_rules
from toolkinds.api_tools.model import ApiTool

Scalar = str | int | float | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SecretRef(_Strict):
    secret: str = Field(min_length=1, max_length=64, description=f"the id of a secret (`{ADMIN_API}/secrets`)")


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


class ApiToolBody(ConfiguredBody):
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
    annotations: dict[str, Any] | None = Field(None, description=(
        "R17: MCP's tool annotations (title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint), each optional; "
        "what is not given is derived from the method (GET: read-only and idempotent; DELETE: destructive), and a "
        "hint the method contradicts is refused (a POST, PUT, PATCH or DELETE is never read-only)"))
    icons: list[dict[str, Any]] | None = Field(None, description="R17: MCP's icons (2025-11-25): src, mimeType, sizes, theme")
    outputSchema: dict[str, Any] | None = Field(None, description=(
        "V6: a JSON Schema 2020-12 document of an object; the result (after jmespath and the module) is checked against "
        "it (a mismatch is a `result` error naming the path), sent as structuredContent and listed as MCP's outputSchema"))

    def as_config(self) -> dict[str, Any]:
        given = self.model_dump(exclude={"id", "auth", "headers", "parameters", *(k for k in ("annotations", "icons", "outputSchema") if getattr(self, k) is None)})
        given["auth"] = self.auth.as_config()
        given["headers"] = {k: (v.model_dump() if isinstance(v, SecretRef) else v) for k, v in self.headers.items()}
        given["parameters"] = [p.model_dump(exclude_none=True) | ({"default": p.default} if p.default is not None else {})
                               for p in self.parameters]
        return given


class ApiToolCreate(ApiToolBody):
    """A new tool's body: its `id` is required (on PUT the path names it)."""

    model_config = CREATING


class ApiToolTestCall(_Strict):
    arguments: dict[str, Any] | None = Field(None, description="the tool's arguments, as a JSON object")


def public(tool: ApiTool) -> dict[str, Any]:
    """The tool as the API shows it: its configuration (secrets by id), who changed it and when."""
    return {"id": tool.tool_id, "callType": "API_URL", **tool.config, "version": tool.version,
            "createdBy": tool.created_by, "createdAt": tool.created_on, "updatedBy": tool.updated_by,
            "updatedAt": tool.modified_on}
