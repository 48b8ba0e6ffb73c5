"""Request and response bodies of the admin API (camelCase, as docs/rest-api.md names them).

Requests are strict (no coercion of `"3000"` into 3000) and refuse unknown fields. Only the shape is
checked here; the rules (R1–R9) are the domain's, so that every refusal names its rule. What of a
rule JSON Schema can say is said in the OpenAPI document too (`documents`: a pattern, an enum, a
length), from the domain's own constants, and checked by the domain alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from application.modules import MAX_CHANGESET
from application.tokens import MAX_NAME as MAX_TOKEN_NAME
from api.paths import ADMIN_API, OPERATOR_API
from application.principals import ROLES
from domain import callers, rules, tenants
from domain import secrets as domain_secrets


def documents(**keywords: Any) -> dict[str, Any]:
    """`Field` arguments that add JSON Schema `keywords` to the document only: the domain enforces
    the rule, and its refusal (a 400 naming the rule) stays the one a client sees."""
    return {"json_schema_extra": keywords}


def requires(*names: str, not_null: tuple[str, ...] = ()) -> Callable[[dict[str, Any]], None]:
    """A model's `json_schema_extra` listing `names` as required in the document, and `not_null`
    as never null: fields with a default for the model (so that the domain, not the shape check,
    names what is missing)."""

    def add(schema: dict[str, Any]) -> None:
        schema["required"] = sorted({*schema.get("required", []), *names})
        for name in not_null:
            field = schema["properties"][name]
            branches = [branch for branch in field.pop("anyOf", []) if branch.get("type") != "null"]
            field.pop("default", None)
            for branch in branches:  # the field's own keywords (the domain's rules) win over the branch's
                merged = {**branch, **field}
                field.clear()
                field.update(merged)

    return add


def json_pattern(regex: re.Pattern[str]) -> str:
    """A domain's full-match regex (ending in `\\Z`) as an anchored JSON Schema pattern."""
    return "^" + regex.pattern.removesuffix(r"\Z") + "$"


# R1: a tool's, a module's or a plan's id (a JavaScript identifier, not a reserved name).
IDENTIFIER = {"pattern": json_pattern(rules._IDENTIFIER), "minLength": 1, "maxLength": rules.MAX_ID_LENGTH,
              "not": {"enum": sorted(rules.RESERVED_WORDS | rules.SANDBOX_NAMES)}}
# An agent's, an MCP server's or a usage profile's id (not a tool: any slug).
SLUG = {"pattern": json_pattern(callers._SLUG), "minLength": 1, "maxLength": rules.MAX_ID_LENGTH}
# R3: required, some visible character, at most 2,000 characters.
DESCRIPTION = {"minLength": 1, "maxLength": rules.MAX_DESCRIPTION, "pattern": rules.VISIBLE_PATTERN}
TAGS = {"maxItems": rules.MAX_TAGS, "items": {"type": "string", "minLength": 1, "maxLength": rules.MAX_TAG_LENGTH, "pattern": rules.VISIBLE_PATTERN}}
# A plan's, an agent's or a profile's tags (domain.callers): 1 to 64 characters, blank ones too.
CALLER_TAGS = {"maxItems": rules.MAX_TAGS, "items": {"type": "string", "minLength": 1, "maxLength": rules.MAX_TAG_LENGTH}}
TOOL_NAMES = {"maxItems": callers.MAX_NAMED_TOOLS, "uniqueItems": True, "items": {"type": "string", **IDENTIFIER}}


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ParameterIn(_Request):
    name: str = Field(**documents(**IDENTIFIER))
    description: str = Field("", **documents(maxLength=rules.MAX_DESCRIPTION))
    required: bool = False
    type: str = Field("string", description="string, integer, decimal, date, boolean, array or object (V1)",
                      **documents(enum=list(rules.PARAMETER_TYPES)))
    default: Any = None


class ToolSectionIn(_Request):
    inputParameters: list[ParameterIn] = Field([], **documents(maxItems=rules.MAX_PARAMETERS))
    timeoutMillis: int | None = Field(None, description="100–10,000; default 3,000 (module) or 5,000 (script)",
                                      **documents(minimum=rules.TIMEOUT_RANGE[0], maximum=rules.TIMEOUT_RANGE[1]))
    memoryLimitMb: int | None = Field(None, description="default 128; the sandbox clamps it",
                                      **documents(minimum=rules.MEMORY_RANGE[0], maximum=rules.MEMORY_RANGE[1]))
    exposeInChat: bool = False
    enabled: bool = True
    tags: list[str] = Field([], **documents(**TAGS))
    style: str = Field("module", description="module (exports.run) or script (docs/kinds/code-modules.md)", **documents(enum=list(rules.STYLES)))
    examples: list[dict[str, Any]] = Field([], description="B4, at most 20: each {name, input, and an expected output "
                                           "(compared as JSON) or an expected error type}; run by /test and by every "
                                           "publish of this module or of a module it imports",
                                           **documents(maxItems=rules.MAX_EXAMPLES))
    annotations: dict[str, Any] | None = Field(None, description=(
        "R17: MCP's tool annotations, each optional: title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint; "
        "what is not given is derived (a module whose code or imports use http.fetch is open-world, one that does not "
        "is read-only, idempotent and closed-world), and a hint the code contradicts is refused"))
    icons: list[dict[str, Any]] | None = Field(None, description=(
        "R17: MCP's icons (2025-11-25), at most 8: src (an https: URL or a data:image/ URI), mimeType, sizes, theme"))
    inputSchema: dict[str, Any] | None = Field(None, description=(
        "V6: the tool's arguments as a JSON Schema 2020-12 document of an object ($defs, enum, oneOf, formats), in place "
        "of inputParameters (give one or the other); checked before any code runs and advertised as it is"))
    outputSchema: dict[str, Any] | None = Field(None, description=(
        "V6: a JSON Schema 2020-12 document of an object; every result's structured value is checked against it "
        "(a mismatch is a `result` error naming the path) and MCP lists it as the tool's outputSchema"))


# What each path parameter that names a thing may be, by the path it is in: an id that breaks its
# rule can never name anything (a GET is 404), and a PUT that would create it is refused. A kind
# adds the rules of its own paths (`KindPlugin.path_rules`).
PATH_RULES: tuple[tuple[re.Pattern[str], str, dict[str, Any]], ...] = (
    (re.compile(re.escape(ADMIN_API) + r"/(code-modules|plans)/\{id\}"), "id", IDENTIFIER),
    (re.compile(re.escape(ADMIN_API) + r"/(agents|mcp-servers|usage-profiles)/\{id\}"), "id", SLUG),
    (re.compile(re.escape(ADMIN_API) + r"/mcp-servers/\{id\}/tools/\{name\}"), "name", IDENTIFIER),
    (re.compile(re.escape(ADMIN_API) + r"/secrets/\{id\}"), "id", {"pattern": json_pattern(domain_secrets._ID)}),
    (re.compile(re.escape(OPERATOR_API) + r"/tenants/\{id\}"), "id", {"pattern": json_pattern(tenants.TENANT_ID)}),
)


PathRule = tuple[re.Pattern[str], str, dict[str, Any]]


def openapi_with_rules(document: dict[str, Any], rules: Iterable[PathRule] = ()) -> dict[str, Any]:
    """The OpenAPI `document` with `PATH_RULES` and `rules` (the kinds') on its path parameters (the
    domain checks them)."""
    every = (*PATH_RULES, *rules)
    for path, operations in document.get("paths", {}).items():
        for pattern, name, keywords in every:
            if not pattern.match(path):
                continue
            for operation in operations.values():
                for parameter in operation.get("parameters", []):
                    if parameter.get("in") == "path" and parameter.get("name") == name:
                        parameter["schema"] = {**parameter.get("schema", {}), **keywords}
    return document


# R4: the source and its imports.
SOURCE = {"maxLength": rules.MAX_SOURCE, "pattern": "^[^\\u0000]*$"}
IMPORTS = {"maxItems": rules.MAX_IMPORTS, "uniqueItems": True, "items": {"type": "string", **IDENTIFIER}}


class ModuleCreate(_Request):
    id: str = Field(**documents(**IDENTIFIER))
    description: str = Field(**documents(**DESCRIPTION))
    draftContent: str = Field(**documents(**SOURCE))
    draftImports: list[str] = Field([], **documents(**IMPORTS))
    tool: ToolSectionIn | None = None


class ModuleUpdate(_Request):
    description: str | None = Field(None, **documents(**DESCRIPTION))
    draftContent: str | None = Field(None, **documents(**SOURCE))
    draftImports: list[str] | None = Field(None, **documents(**IMPORTS))
    tool: ToolSectionIn | None = None


class DuplicateRequest(_Request):
    id: str = Field(**documents(**IDENTIFIER))


class TestRequest(_Request):
    draftContent: str = Field(**documents(**SOURCE))
    draftImports: list[str] = Field([], **documents(**IMPORTS))
    tool: ToolSectionIn | None = None
    input: Any = None
    id: str | None = Field(None, **documents(**IDENTIFIER))


# -- responses ---------------------------------------------------------------------------------


class Parameter(BaseModel):
    name: str
    description: str
    required: bool
    type: str
    default: Any = None


class ToolSection(BaseModel):
    inputParameters: list[Parameter]
    timeoutMillis: int
    memoryLimitMb: int
    exposeInChat: bool
    enabled: bool
    tags: list[str]
    style: str
    examples: list[dict[str, Any]] = Field([], description="B4: the tool's examples (name, input, output or error)")
    inputSchema: dict[str, Any] | None = Field(None, description="V6: the arguments' JSON Schema, in place of inputParameters")
    outputSchema: dict[str, Any] | None = Field(None, description="V6: the results' JSON Schema (MCP's outputSchema)")
    annotations: dict[str, Any] | None = Field(None, description="R17: the annotations the admin gave (MCP lists them over the derived ones)")
    icons: list[dict[str, Any]] | None = Field(None, description="R17: the tool's icons (MCP's, 2025-11-25)")


class Definition(BaseModel):
    description: str
    content: str
    imports: list[str]
    tool: ToolSection | None


class PublishedDefinition(Definition):
    version: int
    publishedAt: datetime
    publishedBy: str
    changeset: str | None = Field(None, description="the changeset this version was published in (B6)")
    message: str | None = Field(None, description="what the publisher said of it")


class PublishRequest(_Request):
    message: str | None = Field(None, max_length=2_000, description="shown in history and versions")


class ChangesetRequest(_Request):
    ids: list[str] = Field(description="the modules whose drafts are published together (1 to 100)",
                           **documents(minItems=1, maxItems=MAX_CHANGESET, uniqueItems=True, items={"type": "string", **IDENTIFIER}))
    message: str | None = Field(None, max_length=2_000)
    ifMatch: dict[str, str] = Field({}, description="a module's ETag as read, by id (B7): 412 when it moved since")


class ChangesetOut(BaseModel):
    id: str = Field(description="the changeset's id; each module's Published event names it")
    message: str | None
    by: str
    at: datetime
    modules: list[dict[str, Any]] = Field(description="each module it published and the version it made")


class ChangesetPreview(BaseModel):
    wouldPublish: bool
    modules: list[dict[str, Any]] = Field(description="each module and the version a publish would make")
    checks: list["CheckOut"] = Field(description="every module checked, dependencies first (each draft, then each importer)")


class ModulePublic(BaseModel):
    id: str
    description: str
    state: str
    draft: Definition | None
    published: PublishedDefinition | None
    inputSchema: dict[str, Any] | None = Field(
        description="JSON Schema (draft 2020-12) of the tool's arguments, derived from the parameters of the "
        "published tool section, or of the draft's while the module was never published (V1; MCP's inputSchema). "
        "null for a library."
    )
    usedBy: list[str]
    createdBy: str
    updatedAt: datetime
    updatedBy: str


class ModuleSummary(BaseModel):
    id: str
    description: str
    state: str
    role: str
    tags: list[str]
    imports: list[str]
    publishedVersion: int | None
    exposeInChat: bool
    updatedAt: datetime
    updatedBy: str


class ModuleList(BaseModel):
    collection: list[ModuleSummary]
    total: int
    facets: dict[str, dict[str, int]]


class Usage(BaseModel):
    """R12's list; besides these, each kind whose items name the module by its plural (`prompts`)."""

    model_config = ConfigDict(extra="allow")
    modules: list[str]
    plans: list[str]
    agents: list[str]


class ExecutionErrorOut(BaseModel):
    type: str
    message: str


class ExampleOut(BaseModel):
    module: str | None = Field(None, description="whose example: the module tested (its id, or null for a new draft), "
                                                 "or a module that imports it, run with this draft in place")
    name: str
    passed: bool
    expected: dict[str, Any] = Field(description="{output} or {error}: what the example expects")
    actual: dict[str, Any] = Field(description="{output} or {error}: what the run gave")


class ExecutionOut(BaseModel):
    output: Any
    error: ExecutionErrorOut | None
    logs: list[str]
    durationMillis: float
    content: list[dict[str, Any]] | None = Field(None, description=(
        "only when the code returned MCP content (ai.content): its items as MCP has them (text, image, audio, "
        "resource, resource_link); `output` is then the structured value, or null"), exclude_if=lambda content: content is None)


class TestOut(ExecutionOut):
    examples: list[ExampleOut] | None = Field(None, description="each example of the tool section, run (B4); absent when it has none")


class PlanNodeRunOut(BaseModel):
    node: int = Field(description="the node's place in the plan, from 1")
    toolName: str
    output: Any = Field(description="what the node answered: the next node's input (null when it failed)")
    error: ExecutionErrorOut | None
    logs: list[str]
    durationMillis: float


class PlanRunOut(ExecutionOut):
    nodes: list[PlanNodeRunOut] = Field(description="each node of the run in order, as far as it got")


class FieldError(BaseModel):
    field: str
    rule: str
    message: str


class Problem(BaseModel):
    """RFC 9457 problem details, with a stable machine `code` and, where it helps, what was involved."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    errors: list[FieldError] | None = None
    cycle: list[str] | None = None
    usedBy: Usage | list[str] | None = Field(None, description="R12's users of a module, or the tools that use a secret")
    failingModule: str | None = None
    error: ExecutionErrorOut | None = None
    quota: str | None = Field(None, description="the tenant's quota a change would exceed (docs/tenants.md)")
    limit: int | None = None
    used: int | None = None
    holds: list[str] | None = Field(None, description="what a tenant still holds, refusing its deletion")


# -- the tool catalog and its callers (docs/rest-api.md, docs/mcp.md; docs/kinds/index.md and docs/kinds/code-modules.md) ------------------------


class ToolOut(BaseModel):
    name: str
    description: str
    callType: str = Field(description="the tool's kind: LOCAL (native), CODE (code module), MCP (external MCP tool), PLAN, "
                                      "or another kind's call type (the catalog's `callType` parameter lists every one)")
    tags: list[str]
    inputSchema: dict[str, Any]
    exposeInChat: bool
    enabled: bool
    shadowedBy: str | None = Field(None, description="the call type that holds the same name first (R15); calls reach it, not this tool")
    runsWith: str | None = Field(
        None,
        description="PLAN only: `caller`, a plan runs with its caller's permissions (R14): every node's tool is checked "
        "against the caller's usage profile before anything runs",
    )
    readOnly: bool = Field(False, description="the tool only reads what the server holds (MCP's readOnlyHint)")
    group: str | None = Field(None, description="the tool this entry is a capability of, for a tool that stands for several")
    annotations: dict[str, Any] | None = Field(None, description="R17: MCP's annotations as tools/list shows them (title and the "
                                               "four hints: derived by the kind, the admin's over them); null when nothing is known")
    icons: list[dict[str, Any]] = Field([], description="R17: MCP's icons (2025-11-25)")


class NodeIn(_Request):
    type: str = Field("DIRECT_TOOL", description="DIRECT_TOOL: the tool is called with no LLM in the loop",
                      **documents(enum=list(callers.NODE_TYPES)))
    toolName: str = Field(**documents(**IDENTIFIER))


class PlanFields(_Request):
    description: str = Field(**documents(**DESCRIPTION))
    nodes: list[NodeIn] = Field(description="called in order; each output is the next node's input",
                                **documents(minItems=1, maxItems=callers.MAX_NODES))
    exposeAsTool: bool = Field(False, description="listed in the catalog and callable as a tool under the plan's id")
    exposeInChat: bool = False
    tags: list[str] = Field([], **documents(**CALLER_TAGS))


class PlanIn(PlanFields):
    id: str = Field(**documents(**IDENTIFIER))


class AgentFields(_Request):
    description: str = Field(**documents(**DESCRIPTION))
    allowedTools: list[str] = Field([], **documents(**TOOL_NAMES))
    allowedTags: list[str] = Field([], **documents(**CALLER_TAGS))


class AgentIn(AgentFields):
    id: str = Field(**documents(**SLUG))


class ToolSearchIn(_Request):
    enabled: bool = Field(False, description="tools/list offers find_tool and call_tool beside the pinned tools (docs/mcp.md)")
    pinned: list[str] = Field([], description="the attached tools always listed beside find_tool and call_tool",
                              **documents(**TOOL_NAMES))


class McpServerFields(_Request):
    description: str = Field("", max_length=2_000)
    tools: list[str] = Field([], description="the attached tools, by name", **documents(**TOOL_NAMES))
    toolSearch: ToolSearchIn = Field(default_factory=ToolSearchIn, description="tool search for large catalogs (docs/mcp.md)")


class McpServerIn(McpServerFields):
    id: str = Field(**documents(**SLUG))


class UsageProfileFields(_Request):
    description: str = Field("", max_length=2_000)
    allowedTools: list[str] = Field([], **documents(**TOOL_NAMES))
    allowedTags: list[str] = Field([], **documents(**CALLER_TAGS))


class UsageProfileIn(UsageProfileFields):
    id: str = Field(**documents(**SLUG))


# Responses are built by the server: no strictness, and fields they do not declare are dropped.
_RESPONSE = ConfigDict(extra="ignore", strict=False)


class _Stamped(BaseModel):
    createdAt: datetime
    createdBy: str
    updatedAt: datetime
    updatedBy: str


class PlanPublic(PlanIn, _Stamped):
    model_config = _RESPONSE


class AgentPublic(AgentIn, _Stamped):
    model_config = _RESPONSE
    tools: list[str] = Field(description="the tools the agent may use now: those it names and those with an allowed tag")


class McpServerPublic(McpServerIn, _Stamped):
    model_config = _RESPONSE
    url: str = Field(description="the server's MCP endpoint (streamable HTTP), relative to this API")


class UsageProfilePublic(UsageProfileIn, _Stamped):
    model_config = _RESPONSE


class RunRequest(_Request):
    input: Any = None


class TokenIn(_Request):
    name: str = Field(**documents(minLength=1, maxLength=MAX_TOKEN_NAME))
    role: str = Field(description="admin, auditor or caller (docs/security.md)", **documents(enum=list(ROLES)))
    usageProfile: str | None = Field(None, description="a caller token's usage profile (R14)")


class TokenPublic(BaseModel):
    id: str
    name: str
    role: str
    usageProfile: str | None
    createdAt: datetime
    createdBy: str


class TokenIssued(TokenPublic):
    token: str = Field(description="the bearer token; shown once, only its hash is kept")


# -- organizations (docs/tenants.md) ----------------------------------------------------------------


class TenantIn(_Request):
    id: str = Field(description="1–63 lower-case letters, digits or '-'; never in a tenant's own URLs",
                    **documents(pattern=json_pattern(tenants.TENANT_ID)))
    name: str = Field(**documents(minLength=1, maxLength=tenants.MAX_NAME, pattern=rules.VISIBLE_PATTERN))
    quotas: dict[str, Any] | None = Field(None, description="modules, tools, documents, storedBytes: a number, or null for no limit")


class TenantChange(_Request):
    name: str | None = None
    suspended: bool | None = Field(None, description="a suspended tenant's tokens answer 403 tenant-suspended; its MCP sessions end")
    quotas: dict[str, Any] | None = Field(None, description="the quotas to set; one left out keeps its value, null lifts it")


class Quotas(BaseModel):
    modules: int | None
    tools: int | None
    documents: int | None
    storedBytes: int | None


class TenantUsage(BaseModel):
    modules: int
    tools: int
    documents: int
    storedBytes: int


class TenantPublic(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=False)

    id: str
    name: str
    suspended: bool
    quotas: Quotas
    usage: TenantUsage | None = Field(None, description="what it holds now (on GET of one tenant)")
    createdAt: datetime | None
    createdBy: str | None
    updatedAt: datetime | None
    updatedBy: str | None


class TenantCreated(BaseModel):
    tenant: TenantPublic
    adminToken: str = Field(description="the tenant's first admin token; shown once, only its hash is kept")
    adminTokenId: str


# -- history (docs/rules.md B1, B2, B3) ------------------------------------------------------------


class HistoryEvent(BaseModel):
    type: str = Field(description="Created, DraftChanged, Published, EnabledChanged, Reverted, DraftDiscarded, Deleted, Recreated")
    version: int = Field(description="the event's position in the module's own history, from 1")
    at: datetime
    by: str | None
    data: dict[str, Any] = Field(description="what the event recorded (a definition, a version number, …)")
    previousHash: str = Field(description="SHA-256 of the module's event before this one (B5); empty for the first")
    hash: str | None = Field(description="SHA-256 of this event, recorded with it (B5)")


class HistoryOut(BaseModel):
    id: str
    events: list[HistoryEvent]


class VersionSummary(BaseModel):
    version: int
    publishedAt: datetime
    publishedBy: str
    description: str
    changeset: str | None = Field(None, description="the changeset this version was published in (B6)")
    message: str | None = Field(None, description="what the publisher said of it")


class VersionOut(Definition):
    version: int
    publishedAt: datetime
    publishedBy: str
    changeset: str | None = Field(None, description="the changeset this version was published in (B6)")
    message: str | None = Field(None, description="what the publisher said of it")


class RevertRequest(_Request):
    version: int = Field(description="the published version whose definition becomes the draft")


class CheckOut(BaseModel):
    module: str
    ok: bool
    error: ExecutionErrorOut | None


class PublishPreview(BaseModel):
    id: str
    version: int = Field(description="the version a publish would make")
    wouldPublish: bool
    checks: list[CheckOut] = Field(description="the module first, then each module that imports it, transitively")


# -- secrets (docs/kinds/index.md) -----------------------------------------------------------------------


# At most 8 KiB of UTF-8: never more characters than that (JSON Schema counts characters, not bytes).
SECRET_VALUE = {"minLength": 1, "maxLength": domain_secrets.MAX_VALUE_BYTES}


class SecretIn(_Request):
    id: str = Field(**documents(pattern=json_pattern(domain_secrets._ID)))
    # A SecretStr: shown as stars wherever a model is printed or logged.
    value: SecretStr = Field(description="the value; never answered, recorded in an event, logged or exported",
                             **documents(**SECRET_VALUE))
    description: str = Field("", **documents(maxLength=domain_secrets.MAX_DESCRIPTION))


class SecretFields(_Request):
    value: SecretStr | None = Field(None, description="a new value (a rotation): tools use it from their next call",
                                    **documents(**SECRET_VALUE))
    description: str | None = Field(None, **documents(maxLength=domain_secrets.MAX_DESCRIPTION))


class SecretPublic(BaseModel):
    model_config = _RESPONSE
    id: str
    description: str
    fingerprint: str = Field(description="HMAC-SHA256 of the value under the service's key, 16 hex characters")
    createdAt: datetime | None
    createdBy: str
    updatedAt: datetime | None
    updatedBy: str
    usedBy: list[str] = Field(description="the tools that refer to the secret")
