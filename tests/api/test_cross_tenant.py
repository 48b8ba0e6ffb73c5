"""Two tenants in one service, never seeing each other (issue 19; docs/security.md, docs/tenants.md).

`alpha` and `beta` own things of the same names, and beta more besides (tests/tenants.py). Every
route of the OpenAPI document, and every console page that takes an id, is tried with each of
alpha's tokens against beta's ids, and the same request against ids nobody ever had: the two
answers are the same (status and body, the ids aside; never a 403 for one and a 404 for the
other), no body, header or log line holds anything of beta's, and beta's audit export is byte for
byte what it was. MCP likewise, over raw JSON-RPC and with the SDK's client in both eras: beta's
tools are unknown tools, beta's server an unknown server, beta's session no session, beta's changes
no news to alpha's sessions. Then the names: both own `dates`, and R2, R12 and used-by are each
tenant's own.

The world is made once, in file order: the reads come first, then the walks (whose writes alpha
undoes), then the tests that change the world on purpose.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from itertools import count
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest

from console.routes import ROUTERS as CONSOLE_ROUTERS
from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, expect, page_csrf
from tests.tenants import (
    AGENT, ALPHA, API_TOOL, BETA, BETA_ONLY, DRAFT, GHOSTS, LIBRARY, MODULES, PLAN, PROFILE, PROMPT, RESOURCE, SEARCH_TOOL, SECRET,
    SECRET_VALUES, SERVER, STAMP, TOOL, LogLines, Tenant, create_tenant, events_of, populate, serving, settle,
)

OPERATOR_TOKEN = "tso_cross-tenant-operator"
ROLES = ("admin", "auditor", "caller")
GHOST_USER = "0123456789abcdef"  # a person id nobody has (docs/users.md)
GHOST_TENANT, GHOST_TOKEN_ID, GHOST_DOCUMENT, GHOST_CHANGESET = "ghost-tenant", "feedfacefeedface", "f" * 20, "cs_" + "0" * 20
GHOST_CALL = "0" * 32
# The tool names alpha calls: a module, an API URL tool, a File Search capability, a plan, a library (and a prompt).
BETA_TOOLS = [BETA_ONLY["module"], BETA_ONLY["api-tool"], f"{BETA_ONLY['search-tool']}_search", BETA_ONLY["plan"], BETA_ONLY["library"],
              BETA_ONLY["prompt"], BETA_ONLY["resource"]]
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
MCP_VERSION, MODERN = "2025-11-25", "2026-07-28"


@dataclass
class World:
    http: httpx.Client
    url: str
    alpha: Tenant
    beta: Tenant
    logs: LogLines
    openapi: dict[str, Any]
    console_routes: list[tuple[str, str]]  # (method, path template) of every console route taking an id
    tried: dict[str, int] = field(default_factory=dict)  # how many cases each walk tried

    def of_beta(self) -> list[str]:
        """Everything of beta's that no answer to alpha may hold: its hidden values and the names
        only it has (an answer may still echo a name alpha itself sent)."""
        return [*self.beta.hidden(), *BETA_ONLY.values()]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, shared_sandbox: Any) -> Iterator[World]:
    # No request rate limit, a token's, a tenant's or an address's failed authentications': the
    # walks send their thousands of requests as fast as the machine can (issue 28, finding 10).
    settings = Settings(data_dir=tmp_path_factory.mktemp("tenants") / "data", admin_token=ADMIN_TOKEN,
                        operator_token=OPERATOR_TOKEN, rate_per_second=0, tenant_rate_per_second=0,
                        auth_failures_per_minute=0)
    app = create_app(wire(settings, shared_sandbox))
    kinds_pages = [router for plugin in app.state.services.plugins for router in plugin.console]
    console_routes = sorted({(method, route.path) for router in (*CONSOLE_ROUTERS, *kinds_pages) for route in router.routes
                             for method in route.methods if "{" in route.path and method != "HEAD"})
    with LogLines().installed() as logs, serving(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        alpha, beta = create_tenant(http, OPERATOR_TOKEN, ALPHA), create_tenant(http, OPERATOR_TOKEN, BETA)
        populate(http, alpha, extras=False)
        populate(http, beta, extras=True)
        for tenant in (alpha, beta):  # one person each (the same email: another tenant's is another person)
            tenant.user = expect(http.post("/api/v1/admin/users", headers=tenant.headers(), json={
                "email": "ada@example.com", "name": f"Ada {tenant.mark}", "role": "auditor"}), 201).json()["id"]
        for tenant in (alpha, beta):  # one call each, for the call log's routes (docs/calls.md)
            expect(http.post(f"/api/v1/tools/{TOOL}/call", json={}, headers=tenant.headers()), 200)
            tenant.call = expect(http.get("/api/v1/admin/calls", params={"tool": TOOL}, headers=tenant.headers()), 200).json()[0]["id"]
        yield World(http, url, alpha, beta, logs, expect(http.get("/openapi.json"), 200).json(), console_routes)


# -- a case: one request naming beta's ids, the same naming ids nobody had --------------------------

_fresh = count()


class Side:
    """The ids one side of a case names, by sort: beta's (what alpha must not reach) or ghosts'."""

    def __init__(self, world: World, name: str) -> None:
        self.name = name
        beta = world.beta
        if name == BETA:
            self.ids = {**BETA_ONLY, "changeset": beta.changeset, "tenant": BETA, "document": beta.documents[BETA_ONLY["search-tool"]],
                        "shared-document": beta.documents[SEARCH_TOOL], "call": beta.call}
            self.tokens = list(beta.token_ids.values())
        else:
            self.ids = {**GHOSTS, "changeset": GHOST_CHANGESET, "tenant": GHOST_TENANT, "document": GHOST_DOCUMENT,
                        "shared-document": GHOST_DOCUMENT, "call": GHOST_CALL}
            self.tokens = [GHOST_TOKEN_ID] * len(beta.token_ids)
        self.ids["user"] = beta.user if name == BETA else GHOST_USER
        self.made: list[str] = []

    def __getitem__(self, sort: str) -> str:
        return self.ids[sort]

    def fresh(self) -> str:
        """A new id for something alpha would create (its own, whichever side)."""
        self.made.append(f"x{self.name[0]}{next(_fresh)}")
        return self.made[-1]

    def placeholders(self) -> dict[str, str]:
        """Each id this side names → a placeholder both sides share."""
        named = {value: f"<{sort}>" for sort, value in self.ids.items()}
        named.update({token: "<token>" for token in self.tokens})
        named.update({made: "<new>" for made in self.made})
        return named


@dataclass
class Request:
    method: str
    path: str
    json: Any = None
    files: Any = None
    form: dict[str, str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # what it names that its answer may echo → placeholder
    made: list[str] = field(default_factory=list)  # the ids it would create

    @property
    def sent(self) -> str:
        return self.path + json.dumps(self.json) + json.dumps(self.form)


@dataclass
class Case:
    route: str
    beta: Request
    ghost: Request

    @property
    def label(self) -> str:
        return f"{self.beta.method} {self.beta.path}" + (f" {json.dumps(self.beta.json)}" if self.beta.json is not None else "")

    @property
    def reads(self) -> bool:
        """Whether it only reads (a call, a test or a dry run runs code and changes nothing)."""
        return self.beta.method == "GET" or self.route.endswith(("/call", "/test")) or "dryRun=true" in self.beta.path


Body = Callable[[Side], dict[str, Any]]


def pair(method: str, route: str, world: World, path: Callable[[Side], str], *, body: Body | None = None, files: Any = None,
         form: bool = False, headers: dict[str, str] | None = None, same: Callable[[Side], str] | None = None) -> Case:
    """The case of `route`: `path` and `body` made once with beta's ids and once with ghosts'.
    `same`: a value each side names that both answers may echo under one placeholder."""

    def made(side: Side) -> Request:
        request = Request(method, path(side), json=body(side) if body else None, files=files, headers=dict(headers or {}))
        if form:
            request.form = {"csrf_token": "{csrf}"}
        names = side.placeholders()
        if same is not None:
            names[same(side)] = "<same>"
        request.names = {name: placeholder for name, placeholder in names.items() if name in request.sent}
        request.made = [name for name in side.made if name in request.sent]
        return request

    return Case(route, made(Side(world, BETA)), made(Side(world, "ghost")))


# -- every route of the OpenAPI document -----------------------------------------------------------

# Each {id} of a path is the id of the resource its segment names.
SORT_OF_SEGMENT = {
    "code-modules": "module", "plans": "plan", "agents": "agent", "mcp-servers": "server", "usage-profiles": "profile",
    "secrets": "secret", "api-tools": "api-tool", "search-tools": "search-tool", "changesets": "changeset",
    "tokens": "token", "tenants": "tenant", "modules": "module", "servers": "server", "profiles": "profile",
    "users": "user",
    "calls": "call", "prompts": "prompt", "resources": "resource",
}


INTRUDER_UPLOAD = [("files", ("intruder.txt", b"an intruder's document"))]  # a multipart upload's files


def body_of(method: str, route: str) -> Body | None:
    """A valid body for the route, naming the side's ids wherever it takes a reference: a lookup
    that crossed tenants would find beta's, and a missing guard would write."""
    if method in ("GET", "DELETE") or "/tools/{name}" in route and route.startswith("/api/v1/admin/mcp-servers"):
        return None
    bodies: dict[str, Body] = {
        "/api/v1/admin/code-modules": lambda s: {"id": s.fresh(), "description": "intruder", "draftContent": "exports.x = 1;",
                                                 "draftImports": [s["library"]]},
        "/api/v1/admin/code-modules/test": lambda s: {"draftContent": f"exports.run = function () {{ return {s['library']}.mark; }};",
                                                      "draftImports": [s["library"]], "tool": {}, "id": s["module"]},
        "/api/v1/admin/code-modules/publish": lambda s: {"ids": [s["module"]], "message": "intruder"},
        "/api/v1/admin/code-modules/{id}": lambda s: {"description": "overwritten"},
        "/api/v1/admin/code-modules/{id}/publish": lambda s: {"message": "intruder"},
        "/api/v1/admin/code-modules/{id}/revert": lambda s: {"version": 1},
        "/api/v1/admin/code-modules/{id}/duplicate": lambda s: {"id": s.fresh()},
        "/api/v1/admin/plans": lambda s: {"id": s.fresh(), "description": "p", "nodes": [{"toolName": s["module"]}]},
        "/api/v1/admin/plans/{id}": lambda s: {"description": "p2", "nodes": [{"toolName": TOOL}]},
        "/api/v1/admin/plans/{id}/run": lambda s: {"input": {}},
        "/api/v1/admin/agents": lambda s: {"id": s.fresh(), "description": "a", "allowedTools": [s["module"]]},
        "/api/v1/admin/agents/{id}": lambda s: {"description": "a2", "allowedTools": [TOOL]},
        "/api/v1/admin/mcp-servers": lambda s: {"id": s.fresh(), "description": "s", "tools": [s["module"]]},
        "/api/v1/admin/mcp-servers/{id}": lambda s: {"description": "s2", "tools": [TOOL]},
        "/api/v1/admin/usage-profiles": lambda s: {"id": s.fresh(), "description": "u", "allowedTools": [s["module"]]},
        "/api/v1/admin/usage-profiles/{id}": lambda s: {"description": "u2", "allowedTools": [TOOL]},
        "/api/v1/admin/tokens": lambda s: {"name": s.fresh(), "role": "caller", "usageProfile": s["profile"]},
        "/api/v1/admin/secrets": lambda s: {"id": s.fresh(), "value": "intruder-value", "description": "s"},
        "/api/v1/admin/secrets/{id}": lambda s: {"value": "rotated-by-intruder", "description": "s2"},
        "/api/v1/admin/api-tools": lambda s: {"id": s.fresh(), "description": "a", "urlTemplate": "https://api.example.invalid/x",
                                              "auth": {"type": "bearer", "secret": s["secret"]}, "response": {"module": s["module"]}},
        "/api/v1/admin/api-tools/{id}": lambda s: {"description": "a2", "urlTemplate": "https://api.example.invalid/y"},
        "/api/v1/admin/api-tools/{id}/test": lambda s: {"arguments": {}},
        "/api/v1/admin/search-tools": lambda s: {"id": s.fresh(), "description": "f"},
        "/api/v1/admin/search-tools/{id}": lambda s: {"description": "f2"},
        "/api/v1/admin/search-tools/{id}/test": lambda s: {"capability": "search", "arguments": {"query": "lighthouse"}},
        "/api/v1/admin/search-tools/{id}/documents/{docId}/metadata": lambda s: {},
        "/api/v1/admin/search-tools/{id}/embedding": lambda s: None,
        "/api/v1/tools/{name}/call": lambda s: {},
        "/api/v1/operator/tenants": lambda s: {"id": s.fresh(), "name": "intruder"},
        "/api/v1/operator/tenants/{id}": lambda s: {"name": "renamed"},
        "/api/v1/admin/users": lambda s: {"email": f"{s.fresh()}@example.com", "name": "intruder", "role": "caller",
                                          "usageProfile": s["profile"]},
        "/api/v1/admin/users/{id}": lambda s: {"role": "caller", "usageProfile": s["profile"]},
        "/api/v1/admin/prompts": lambda s: {"id": s.fresh(), "description": "intruder",
                                            "messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]},
        "/api/v1/admin/prompts/publish": lambda s: {"ids": [s["prompt"]], "message": "intruder"},
        "/api/v1/admin/prompts/{id}": lambda s: {"description": "overwritten"},
        "/api/v1/admin/prompts/{id}/publish": lambda s: {"message": "intruder"},
        "/api/v1/admin/prompts/{id}/revert": lambda s: {"version": 1},
        "/api/v1/admin/prompts/{id}/test": lambda s: {"arguments": {"who": "alpha"}, "draft": False},
        "/api/v1/admin/resources": lambda s: {"id": s.fresh(), "description": "intruder", "uri": "memo://intruder",
                                              "mimeType": "text/plain", "text": "x"},
        "/api/v1/admin/resources/publish": lambda s: {"ids": [s["resource"]], "message": "intruder"},
        "/api/v1/admin/resources/{id}": lambda s: {"description": "overwritten"},
        "/api/v1/admin/resources/{id}/publish": lambda s: {"message": "intruder"},
        "/api/v1/admin/resources/{id}/revert": lambda s: {"version": 1},
        "/api/v1/admin/resources/{id}/test": lambda s: {"draft": False},
        "/api/v1/admin/calls/capture/{name}": lambda s: {"maxBytes": 100},
        "/api/v1/admin/users/{id}/disable": lambda s: None,
        "/api/v1/admin/users/{id}/enable": lambda s: None,
        "/api/v1/admin/users/{id}/invitation": lambda s: None,
    }
    if route.endswith("/documents"):
        return None  # a multipart upload
    assert route in bodies, f"no body for {method} {route}: give it one in body_of"
    return bodies[route]


def api_cases(world: World, method: str, route: str) -> list[Case]:
    """The cases of one route: each way its path, query or body can name something of beta's."""
    body = body_of(method, route)
    files = INTRUDER_UPLOAD if route.endswith("/documents") and method == "POST" else None

    def case(path: Callable[[Side], str], **options: Any) -> Case:
        return pair(method, route, world, path, **{"body": body, "files": files, **options})

    if "{" not in route:
        return [case(lambda s: route), *[case(lambda s, q=q: route + q(s)) for q in QUERIES.get((method, route), [])]]
    if route == "/api/v1/tools/{name}/call":
        cases = [case(lambda s, name=name: route.replace("{name}", name if s.name == BETA else GHOSTS["module"]),
                      same=lambda s, name=name: name if s.name == BETA else GHOSTS["module"]) for name in BETA_TOOLS]
        # alpha's own File Search tool, asked for beta's document (whose id is its bytes' hash)
        for capability, arguments in (("fetch", lambda s: {"id": s["shared-document"]}),
                                      ("search", lambda s: {"query": "gulls", "documentIds": [s["shared-document"]]})):
            cases.append(case(lambda s, c=capability: route.replace("{name}", f"{SEARCH_TOOL}_{c}"), body=arguments))
        return cases
    if route.endswith("/tools/{name}"):  # a server's attachment: beta's server, or alpha's with beta's tool
        return [case(lambda s: route.replace("{id}", s["server"]).replace("{name}", TOOL)),
                case(lambda s: route.replace("{id}", SERVER).replace("{name}", s["module"]))]
    if route.endswith(("/documents/{docId}", "/documents/{docId}/metadata")):  # beta's tool and document, or alpha's tool with beta's document
        return [case(lambda s: route.replace("{id}", s["search-tool"]).replace("{docId}", s["document"])),
                case(lambda s: route.replace("{id}", SEARCH_TOOL).replace("{docId}", s["shared-document"]))]
    if route == "/api/v1/admin/calls/capture/{name}":  # value capture switched for beta's tool
        return [case(lambda s: route.replace("{name}", s["module"]))]
    sort = SORT_OF_SEGMENT[route.split("/")[4]]
    unknown = {part for part in route.split("/") if part.startswith("{")} - {"{id}", "{version}"}
    assert not unknown, f"{route}: which of beta's ids is {unknown}? Say so in api_cases"

    def at(side: Side, value: str | None = None) -> str:
        return route.replace("{id}", value or side[sort]).replace("{version}", "1")

    if sort == "token":
        cases = [case(lambda s, i=i: at(s, s.tokens[i])) for i in range(len(world.beta.token_ids))]
    else:
        cases = [case(at)]
    if sort == "module":
        cases.append(case(lambda s: at(s, s["library"])))
    documented = {p["name"] for p in world.openapi["paths"][route][method.lower()].get("parameters", [])}
    if "If-Match" in documented:  # an old version: beta's module, were it found, would be a 412
        cases.append(case(at, headers={"If-Match": '"1"'}))
    if "dryRun" in documented:
        cases.append(case(lambda s: at(s) + "?dryRun=true"))
    if "asOf" in documented:  # its history, replayed to an instant
        cases.append(case(lambda s: at(s) + "?asOf=2100-01-01T00:00:00Z"))
    if (method, route) == ("PUT", "/api/v1/admin/api-tools/{id}"):
        # alpha's own tool, told to use beta's secret, or to post-process with beta's module
        cases.append(case(lambda s: at(s, API_TOOL), body=lambda s: {"description": "w", "urlTemplate": "https://api.example.invalid/w",
                                                                     "auth": {"type": "bearer", "secret": s["secret"]}}))
        cases.append(case(lambda s: at(s, API_TOOL), body=lambda s: {"description": "w", "urlTemplate": "https://api.example.invalid/w",
                                                                     "response": {"module": s["module"]}}))
    if (method, route) == ("GET", "/api/v1/admin/search-tools/{id}/documents"):  # alpha's own, paged from beta's document
        cases.append(case(lambda s: at(s, SEARCH_TOOL) + f"?cursor={s['shared-document']}"))
    if (method, route) == ("POST", "/api/v1/admin/search-tools/{id}/test"):
        cases.append(case(lambda s: at(s, SEARCH_TOOL), body=lambda s: {"capability": "fetch", "arguments": {"id": s["shared-document"]}}))
    return cases


# Lists and look-ups whose query names beta's: what they find is alpha's, or nothing.
QUERIES: dict[tuple[str, str], list[Callable[[Side], str]]] = {
    ("GET", MODULES): [lambda s: f"?usedBy={s['module']}", lambda s: f"?usedBy={s['plan']}", lambda s: f"?usedBy={s['agent']}",
                       lambda s: f"?search={s['module']}", lambda s: f"?tag={s['module']}"],
    ("GET", f"{MODULES}/availability"): [lambda s, sort=sort: f"?id={s[sort]}" for sort in ("module", "library", "api-tool", "plan")],
    ("GET", "/api/v1/admin/tools"): [lambda s: f"?tag={s['module']}", lambda s: f"?cursor={s['module']}"],
}


def every_api_case(world: World) -> list[Case]:
    return [case for route, operations in world.openapi["paths"].items() for method in operations
            for case in api_cases(world, method.upper(), route)]


# -- every console route that takes an id ----------------------------------------------------------

CONSOLE_PARAMS = {"record_id": None, "module_id": "module", "token_id": "token", "secret_id": "secret", "tenant_id": "tenant",
                  "doc_id": "document", "user_id": "user"}


def console_cases(world: World) -> list[Case]:
    cases = []
    for method, route in world.console_routes:
        segment = route.split("/")[2]

        def path(side: Side, route: str = route, segment: str = segment) -> str:
            filled = route
            for param, sort in CONSOLE_PARAMS.items():
                if "{" + param + "}" not in route:
                    continue
                value = side.tokens[0] if sort == "token" else side[sort or SORT_OF_SEGMENT[segment]]
                filled = filled.replace("{" + param + "}", value)
            if "{name}" in filled:  # a server's tool, or the API URL or File Search tool the segment names
                filled = filled.replace("{name}", side["module"] if segment == "servers" else side[SORT_OF_SEGMENT[segment]])
            return filled

        upload = INTRUDER_UPLOAD if method == "POST" and route.endswith("/documents") else None
        cases.append(pair(method, route, world, path, form=method == "POST", files=upload))
    return cases


# -- sending, comparing, walking -------------------------------------------------------------------

# Answers that change from one request to the next, whoever asks: looked at for leaks only. (Alpha's
# call log, as its export, holds every name alpha called, those of beta's it tried among them.)
VOLATILE = {"/api/v1/admin/audit/export", "/api/v1/admin/calls", "/healthz"}
DURATION = re.compile(r'"(toolsmith/)?durationMillis":\s*[0-9.]+|Time: [0-9.]+ ms')


def normalized(text: str, names: dict[str, str]) -> str:
    """`text` with the ids its request named as placeholders, and without its timings."""
    text = DURATION.sub("<time>", text)
    for name in sorted(names, key=len, reverse=True):
        text = text.replace(name, names[name])
    return text


def leaks(world: World, answer: httpx.Response, request: Request, route: str) -> list[str]:
    """What of beta's the answer (body or headers) holds, beyond what alpha itself sent. (Alpha's
    export holds every name alpha ever sent, those of beta's it tried among them.)"""
    seen = answer.text + "\n" + "\n".join(f"{k}: {v}" for k, v in answer.headers.items())
    candidates = world.beta.hidden() if route in VOLATILE else world.of_beta()
    return [s for s in candidates if s in seen and s not in request.sent]


def beta_as_it_is(world: World) -> tuple[bytes, Any]:
    """Beta's events, and its tokens (whose registry is the store's, not in a tenant's export)."""
    tokens = expect(world.http.get("/api/v1/admin/tokens", headers=world.beta.headers()), 200).json()
    return events_of(world.http, world.beta), tokens


Send = Callable[[Request], httpx.Response]


def walk(world: World, who: str, send: Send, cases: list[Case]) -> list[str]:
    """Each case sent by `send`; the findings, one line each."""
    findings: list[str] = []
    before = beta_as_it_is(world)
    for case in cases:
        mark = len(world.logs.lines)
        beta, ghost = send(case.beta), send(case.ghost)
        where = f"{who}: {case.label}"
        if beta.status_code >= 500 or ghost.status_code >= 500:
            findings.append(f"{where}: {beta.status_code} / {ghost.status_code} {beta.text[:200]}")
        if beta.status_code != ghost.status_code:
            findings.append(f"{where}: {beta.status_code} for beta's, {ghost.status_code} for unknown ids "
                            f"({beta.text[:200]} | {ghost.text[:200]})")
        elif (case.reads or beta.status_code >= 400) and case.route not in VOLATILE:
            # a refusal, or a read: the same answer, the ids aside (a write's success holds its own times)
            said = normalized(beta.text, case.beta.names), normalized(ghost.text, case.ghost.names)
            if said[0] != said[1]:
                findings.append(f"{where}: the answers differ:\n    beta's:  {said[0][:400]}\n    unknown: {said[1][:400]}")
        if beta.status_code == 403 and who.startswith("admin") and "operator" not in case.route:
            findings.append(f"{where}: 403 for an admin (docs/security.md: 404, never 403)")
        leaked = leaks(world, beta, case.beta, case.route)
        if leaked:
            findings.append(f"{where}: the answer holds beta's {leaked}: {beta.text[:300]}")
        logged = [line for line in world.logs.since(mark) if any(s in line for s in world.of_beta() if s not in case.beta.sent)]
        if logged:
            findings.append(f"{where}: a log line holds beta's: {logged[:2]}")
        for request, answer in ((case.beta, beta), (case.ghost, ghost)):
            if not case.reads and answer.status_code < 400:
                undo(world, case.route, request, answer)
        if not case.reads:
            after = beta_as_it_is(world)
            if after != before:
                findings.append(f"{where}: beta changed")
                before = after
        world.tried[who] = world.tried.get(who, 0) + 1
    return findings


def undo(world: World, route: str, request: Request, answer: httpx.Response) -> None:
    """Removes what a write of the walk made in alpha (alpha's own records, naming ids alpha does
    not have, accepted as they are for unknown ids): later cases find alpha as it was built."""
    admin = world.alpha.headers()
    if route == "/api/v1/admin/tokens":
        expect(world.http.delete(f"{route}/{answer.json()['id']}", headers=admin), 204)
    elif route.startswith("/api/v1/admin/") and "{" not in route and request.method == "POST" and request.made:
        for made in request.made:
            expect(world.http.delete(f"{route}/{made}", headers=admin), 204)
    else:
        raise AssertionError(f"{request.method} {request.path} {request.sent} wrote ({answer.status_code} {answer.text[:200]}): "
                             "say in `undo` how to take it back")


def rest_sender(world: World, role: str) -> Send:
    token = world.alpha.tokens[role]

    def send(request: Request) -> httpx.Response:
        return world.http.request(request.method, request.path, json=request.json, files=request.files,
                                  headers={"Authorization": f"Bearer {token}", **request.headers})

    return send


@pytest.fixture
def console(world: World) -> Iterator[Callable[[str], Send]]:
    """A browser-like client of alpha's console, signed in with a token of the role asked for."""
    clients: list[httpx.Client] = []

    def signed_in(role: str) -> Send:
        client = httpx.Client(base_url=world.url, timeout=60, follow_redirects=False)
        clients.append(client)
        origin = {"Origin": world.url}
        signed = client.post("/console/sign-in", data={"token": world.alpha.tokens[role], "next": "/console/tools"}, headers=origin)
        assert signed.status_code == 303, signed.text
        csrf = page_csrf(expect(client.get("/console/tools"), 200).text)

        def send(request: Request) -> httpx.Response:
            form = {k: v.replace("{csrf}", csrf) for k, v in (request.form or {}).items()} or None
            return client.request(request.method, request.path, data=form, files=request.files, headers={**origin, **request.headers})

        return send

    yield signed_in
    for client in clients:
        client.close()


# -- reads of the names both own -------------------------------------------------------------------


def own_ids(world: World) -> dict[str, str]:
    alpha = world.alpha
    return {"module": LIBRARY, "plan": PLAN, "agent": AGENT, "server": SERVER, "profile": PROFILE, "secret": SECRET,
            "api-tool": API_TOOL, "search-tool": SEARCH_TOOL, "changeset": alpha.changeset, "tenant": ALPHA, "call": alpha.call,
            "prompt": PROMPT, "resource": RESOURCE}


@pytest.mark.parametrize("role", ROLES)
def test_alphas_reads_of_the_names_both_own_answer_alphas_own(world: World, role: str) -> None:
    own, findings = {**own_ids(world), "user": world.alpha.user}, []
    for route, operations in world.openapi["paths"].items():
        if "get" not in operations:
            continue
        path = route.replace("{version}", "1").replace("{docId}", world.alpha.documents[SEARCH_TOOL])
        if "{id}" in path:
            path = path.replace("{id}", own[SORT_OF_SEGMENT[route.split("/")[4]]])
        mark = len(world.logs.lines)
        answer = world.http.get(path, headers=world.alpha.headers(role))
        if route == "/healthz":
            expected = 200
        elif route.startswith("/api/v1/operator/") or role == "caller":
            expected = 403
        else:
            expected = 403 if route.startswith("/api/v1/admin/tokens") and role != "admin" else 200
        if answer.status_code != expected:
            findings.append(f"{role} GET {path}: {answer.status_code}, not {expected}: {answer.text[:200]}")
        seen = answer.text + "\n".join(f"{k}: {v}" for k, v in answer.headers.items())
        if leaked := [s for s in world.of_beta() if s in seen]:
            findings.append(f"{role} GET {path}: holds beta's {leaked}: {answer.text[:300]}")
        if logged := [line for line in world.logs.since(mark) if any(s in line for s in world.of_beta())]:
            findings.append(f"{role} GET {path}: a log line holds beta's: {logged[:2]}")
    assert not findings, "\n".join(findings)


def test_each_tenants_things_of_the_same_names_are_its_own(world: World) -> None:
    for tenant, other in ((world.alpha, world.beta), (world.beta, world.alpha)):
        for path in (f"{MODULES}/{LIBRARY}", f"{MODULES}/{TOOL}", f"{MODULES}/{DRAFT}", f"/api/v1/admin/api-tools/{API_TOOL}",
                     f"/api/v1/admin/plans/{PLAN}", f"/api/v1/admin/search-tools/{SEARCH_TOOL}", f"/api/v1/admin/secrets/{SECRET}",
                     f"/api/v1/admin/agents/{AGENT}", f"/api/v1/admin/mcp-servers/{SERVER}", f"/api/v1/admin/usage-profiles/{PROFILE}",
                     f"/api/v1/admin/changesets/{tenant.changeset}"):
            text = expect(world.http.get(path, headers=tenant.headers()), 200).text
            assert tenant.mark in text and not any(s in text for s in other.hidden()), (tenant.id, path, text[:300])
        documents = expect(world.http.get(f"/api/v1/admin/search-tools/{SEARCH_TOOL}/documents", headers=tenant.headers()), 200).text
        assert tenant.documents[SEARCH_TOOL] in documents and other.documents[SEARCH_TOOL] not in documents
        tokens = {t["id"] for t in expect(world.http.get("/api/v1/admin/tokens", headers=tenant.headers()), 200).json()}
        assert tokens == set(tenant.token_ids.values())


# -- calls, the catalog, availability, exports -----------------------------------------------------


@pytest.mark.parametrize("tenant_name", [ALPHA, BETA])
def test_a_call_runs_the_callers_tenants_code_and_ai_context_names_that_tenant(world: World, tenant_name: str) -> None:
    tenant = world.alpha if tenant_name == ALPHA else world.beta
    for role in ("admin", "caller"):
        ran = expect(world.http.post(f"/api/v1/tools/{TOOL}/call", json={}, headers=tenant.headers(role)), 200).json()
        assert ran["error"] is None, ran
        assert ran["output"] == {"mark": tenant.mark, "lib": tenant.mark, "tenant": tenant.id, "user": ran["output"]["user"]}
        assert ran["logs"] == [f"{tenant.mark} ran"]
    # the plan of the same name runs the tenant's own node
    run = expect(world.http.post(f"/api/v1/tools/{PLAN}/call", json={}, headers=tenant.headers()), 200).json()
    assert run["output"]["tenant"] == tenant.id and run["output"]["mark"] == tenant.mark, run


def test_the_catalog_lists_each_tenants_own_tools(world: World) -> None:
    def names(tenant: Tenant) -> set[str]:
        return {tool["name"] for tool in expect(world.http.get("/api/v1/admin/tools?limit=500", headers=tenant.headers()), 200).json()}

    alpha, beta = names(world.alpha), names(world.beta)
    assert {TOOL, STAMP, PLAN, API_TOOL, f"{SEARCH_TOOL}_search"} <= alpha
    assert not any(name.startswith("beta_") for name in alpha), alpha
    assert {BETA_ONLY["module"], BETA_ONLY["api-tool"], BETA_ONLY["plan"], f"{BETA_ONLY['search-tool']}_search"} <= beta


def test_availability_says_betas_names_are_free_for_alpha(world: World) -> None:
    for name in (*BETA_ONLY.values(), f"{BETA_ONLY['search-tool']}_search"):
        free = expect(world.http.get(f"{MODULES}/availability", params={"id": name}, headers=world.alpha.headers()), 200).json()
        assert free is True, name
    for name in (BETA_ONLY["module"], BETA_ONLY["api-tool"], f"{BETA_ONLY['search-tool']}_search", BETA_ONLY["plan"]):
        assert expect(world.http.get(f"{MODULES}/availability", params={"id": name}, headers=world.beta.headers()), 200).json() is False


def test_each_tenants_audit_export_holds_its_own_events_only(world: World) -> None:
    exported = {tenant.id: events_of(world.http, tenant).decode() for tenant in (world.alpha, world.beta)}
    for own, other in ((world.alpha, world.beta), (world.beta, world.alpha)):
        text = exported[own.id]
        assert own.mark in text
        assert not any(s in text for s in other.hidden() if s not in own.hidden()), f"{own.id}'s export holds {other.id}'s"
        assert SECRET_VALUES[own.id] not in text  # and never a secret's value, its own neither
        assert f'"tenant":"{other.id}"' not in text.replace(" ", "")
    assert not any(f'"{name}"' in exported[ALPHA] for name in BETA_ONLY.values())


# -- MCP -------------------------------------------------------------------------------------------


def mcp_post(world: World, path: str, message: dict[str, Any], token: str, session: str | None = None) -> httpx.Response:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    if session is not None:
        headers |= {"Mcp-Session-Id": session, "Mcp-Protocol-Version": MCP_VERSION}
    return world.http.post(path, json={"jsonrpc": "2.0", **message}, headers=headers)


INITIALIZE = {"id": 0, "method": "initialize",
              "params": {"protocolVersion": MCP_VERSION, "capabilities": {}, "clientInfo": {"name": "cross-tenant", "version": "1"}}}


def mcp_session(world: World, path: str, token: str) -> str:
    opened = mcp_post(world, path, INITIALIZE, token)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    assert mcp_post(world, path, {"method": "notifications/initialized"}, token, session).status_code == 202
    return session


def mcp_result(answer: httpx.Response) -> Any:
    assert answer.status_code == 200, answer.text
    data = [line[len("data:"):] for line in answer.text.splitlines() if line.startswith("data:")]
    return (json.loads(data[-1]) if data else answer.json())["result"]


def mcp_messages(tool: str, document: str) -> list[tuple[str, dict[str, Any]]]:
    """Every method a client may send, naming `tool` and `document` wherever one takes a name."""
    return [
        ("ping", {}),
        ("tools/list", {}),
        ("tools/list", {"cursor": tool}),
        ("tools/call", {"name": tool, "arguments": {}}),
        ("tools/call", {"name": f"{SEARCH_TOOL}_fetch", "arguments": {"id": document}}),
        ("tools/call", {"name": f"{SEARCH_TOOL}_search", "arguments": {"query": "gulls", "documentIds": [document]}}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": f"toolsmith://{tool}"}),
        ("resources/read", {"uri": f"memo://{tool}"}),
        ("resources/read", {"uri": f"toolsmith://search-tools/{SEARCH_TOOL}/documents/{document}"}),
        ("resources/subscribe", {"uri": f"memo://{tool}"}),
        ("prompts/list", {}),
        ("prompts/get", {"name": tool}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": tool}, "argument": {"name": "a", "value": ""}}),
        ("logging/setLevel", {"level": "info"}),
    ]


@pytest.mark.parametrize("role", ["admin", "caller"])
@pytest.mark.parametrize("path", ["/mcp", f"/mcp/{SERVER}"])
def test_every_mcp_method_answers_alpha_as_if_beta_did_not_exist(world: World, role: str, path: str) -> None:
    token, beta_document = world.alpha.tokens[role], world.beta.documents[SEARCH_TOOL]
    session = mcp_session(world, path, token)
    mark, findings, n = len(world.logs.lines), [], count(1)
    for tool in BETA_TOOLS:
        for (method, beta_params), (_, ghost_params) in zip(mcp_messages(tool, beta_document), mcp_messages(GHOSTS["module"], GHOST_DOCUMENT)):
            number = next(n)
            beta = mcp_post(world, path, {"id": number, "method": method, "params": beta_params}, token, session)
            ghost = mcp_post(world, path, {"id": number, "method": method, "params": ghost_params}, token, session)
            said = (normalized(beta.text, {tool: "<tool>", beta_document: "<doc>"}),
                    normalized(ghost.text, {GHOSTS["module"]: "<tool>", GHOST_DOCUMENT: "<doc>"}))
            if beta.status_code != ghost.status_code or said[0] != said[1]:
                findings.append(f"{method} {beta_params}: beta's {beta.status_code} {said[0][:300]}\n"
                                f"    unknown {ghost.status_code} {said[1][:300]}")
            if leaked := [s for s in world.of_beta() if s in beta.text and s not in json.dumps(beta_params)]:
                findings.append(f"{method} {beta_params}: holds beta's {leaked}: {beta.text[:300]}")
    assert not findings, "\n".join(findings)
    listed = mcp_result(mcp_post(world, path, {"id": 0, "method": "tools/list", "params": {}}, token, session))["tools"]
    assert {tool["name"] for tool in listed} >= {TOOL, f"{SEARCH_TOOL}_search"}
    assert not any(s in json.dumps(listed) for s in world.of_beta())
    called = mcp_result(mcp_post(world, path, {"id": 0, "method": "tools/call", "params": {"name": TOOL, "arguments": {}}}, token, session))
    assert called["structuredContent"]["tenant"] == ALPHA and called["structuredContent"]["mark"] == world.alpha.mark
    logged = [line for line in world.logs.since(mark) if any(s in line for s in world.beta.hidden())]
    assert not logged, logged[:3]


def test_betas_server_and_sessions_are_unknown_to_alpha(world: World) -> None:
    for role in ("admin", "caller"):
        beta = mcp_post(world, f"/mcp/{BETA_ONLY['server']}", INITIALIZE, world.alpha.tokens[role])
        ghost = mcp_post(world, f"/mcp/{GHOSTS['server']}", INITIALIZE, world.alpha.tokens[role])
        assert beta.status_code == ghost.status_code == 404
        assert beta.text.replace(BETA_ONLY["server"], "<id>") == ghost.text.replace(GHOSTS["server"], "<id>")
    # beta's open session, presented with alpha's token, is no session at all, on any path, to
    # post to, to read its stream, or to end
    session = mcp_session(world, "/mcp", world.beta.tokens["admin"])
    listing = {"id": 1, "method": "tools/list", "params": {}}
    for path in ("/mcp", f"/mcp/{SERVER}"):
        stolen = mcp_post(world, path, listing, world.alpha.tokens["admin"], session)
        unknown = mcp_post(world, path, listing, world.alpha.tokens["admin"], "0" * 32)
        assert stolen.status_code == unknown.status_code == 404
        assert stolen.text.replace(session, "<session>") == unknown.text.replace("0" * 32, "<session>")
        for method in ("GET", "DELETE"):
            answers = [world.http.request(method, path, headers={**MCP_HEADERS, "Authorization": f"Bearer {world.alpha.tokens['admin']}",
                                                                 "Mcp-Session-Id": sid, "Mcp-Protocol-Version": MCP_VERSION})
                       for sid in (session, "0" * 32)]
            assert answers[0].status_code == answers[1].status_code == 404, (method, [a.text for a in answers])
            assert answers[0].text.replace(session, "<session>") == answers[1].text.replace("0" * 32, "<session>")
    # beta's session still answers beta
    betas = mcp_result(mcp_post(world, "/mcp", listing, world.beta.tokens["admin"], session))["tools"]
    assert BETA_ONLY["module"] in {tool["name"] for tool in betas}


class Inbox:
    """The `tools/list_changed` notifications one client receives."""

    def __init__(self) -> None:
        self.count = 0
        self.arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        from mcp_types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self.count += 1
            self.arrived.set()


@asynccontextmanager
async def sdk_client(world: World, token: str, path: str = "/mcp", **options: Any) -> AsyncIterator[Any]:
    """The MCP SDK's client of `path` with `token`."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300)) as http:
        async with Client(streamable_http_client(world.url + path, http_client=http), read_timeout_seconds=30, **options) as client:
            yield client


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_the_sdk_client_of_alpha_sees_nothing_of_beta(world: World, mode: str) -> None:
    for role in ("admin", "caller"):
        async with sdk_client(world, world.alpha.tokens[role], mode=mode) as client:
            tools = (await client.list_tools()).tools
            assert TOOL in {tool.name for tool in tools}
            assert not any(s in json.dumps([tool.model_dump(mode="json") for tool in tools]) for s in world.of_beta())
            unknown = await client.call_tool(GHOSTS["module"], {})
            for name in BETA_TOOLS:
                refused = await client.call_tool(name, {})
                assert refused.is_error and unknown.is_error
                assert refused.content[0].text.replace(name, "<t>") == unknown.content[0].text.replace(GHOSTS["module"], "<t>")
            mine = await client.call_tool(TOOL, {})
            assert not mine.is_error and mine.structured_content["tenant"] == ALPHA
            assert mine.structured_content["mark"] == world.alpha.mark
            await sees_no_prompt_or_resource_of_beta(world, client, role)


async def refused(call: Any, name: str, ghost: str) -> None:
    """`call(name)` and `call(ghost)` are refused alike: the same code, the same words but the name."""
    from mcp.shared.exceptions import MCPError

    errors = []
    for each in (name, ghost):
        with pytest.raises(MCPError) as raised:
            await call(each)
        errors.append((raised.value.error.code, raised.value.error.message.replace(each, "<name>")))
    assert errors[0] == errors[1], errors


async def sees_no_prompt_or_resource_of_beta(world: World, client: Any, role: str) -> None:
    """Beta's prompt and resource are to alpha's admin and caller what a name nobody has is; so are
    alpha's own to its caller, whose usage profile names neither (issue 33: prompts and resources
    follow the tenant and profile rules of tools), in whichever era `client` speaks."""
    prompts = (await client.list_prompts()).prompts
    resources = (await client.list_resources()).resources
    listed = json.dumps([item.model_dump(mode="json") for item in [*prompts, *resources]])
    assert not any(s in listed for s in world.of_beta())
    await refused(lambda name: client.get_prompt(name, {"who": "x"}), BETA_ONLY["prompt"], GHOSTS["prompt"])
    await refused(client.read_resource, f"memo://{BETA_ONLY['resource']}", f"memo://{GHOSTS['resource']}")
    if role == "admin":
        assert PROMPT in {p.name for p in prompts} and f"memo://{RESOURCE}" in {str(r.uri) for r in resources}
        assert (await client.get_prompt(PROMPT)).messages[0].content.text == f"Hi from {world.alpha.mark}"
        assert (await client.read_resource(f"memo://{RESOURCE}")).contents[0].text == f"A notice from {world.alpha.mark}"
    else:
        assert prompts == [] and f"memo://{RESOURCE}" not in {str(r.uri) for r in resources}
        await refused(client.get_prompt, PROMPT, GHOSTS["prompt"])
        await refused(client.read_resource, f"memo://{RESOURCE}", f"memo://{GHOSTS['resource']}")


# -- the walks -------------------------------------------------------------------------------------


def test_every_route_of_the_openapi_document_is_walked_with_betas_ids(world: World) -> None:
    cases = every_api_case(world)
    routes = {(method.upper(), path) for path, operations in world.openapi["paths"].items() for method in operations}
    assert {(case.beta.method, case.route) for case in cases} == routes
    for case in cases:
        if "{" in case.route:
            assert case.beta.sent != case.ghost.sent and case.beta.names, case.label


@pytest.mark.parametrize("role", ROLES)
def test_alphas_tokens_find_nothing_of_beta_on_any_route(world: World, role: str) -> None:
    cases = every_api_case(world)
    findings = walk(world, role, rest_sender(world, role), cases)
    assert not findings, f"{len(findings)} findings:\n" + "\n".join(findings)
    assert world.tried[role] == len(cases) > 100


@pytest.mark.parametrize("role", ["admin", "auditor"])
def test_alphas_console_finds_nothing_of_beta_on_any_page(world: World, console: Callable[[str], Send], role: str) -> None:
    cases = console_cases(world)
    findings = walk(world, f"{role} (console)", console(role), cases)
    assert not findings, f"{len(findings)} findings:\n" + "\n".join(findings)
    assert len(cases) >= 50


# -- names are each tenant's own (these change the world, after the walks) -------------------------


def test_r2_a_name_beta_gave_to_one_kind_is_free_in_alpha_for_another(world: World) -> None:
    alpha, beta = world.alpha, world.beta
    before = events_of(world.http, beta)
    # beta's API URL tool's name for a module of alpha's; beta's module's name for an API URL tool
    expect(world.http.post(MODULES, json={"id": BETA_ONLY["api-tool"], "description": "alpha's", "draftContent": "exports.x = 1;"},
                           headers=alpha.headers()), 201)
    expect(world.http.post("/api/v1/admin/api-tools", json={"id": BETA_ONLY["module"], "description": "alpha's",
                                                            "urlTemplate": "https://a.example.invalid/"}, headers=alpha.headers()), 201)
    # within beta, R2 holds as ever
    clash = world.http.post(MODULES, json={"id": BETA_ONLY["api-tool"], "description": "d", "draftContent": "exports.x = 1;"},
                            headers=beta.headers())
    assert clash.status_code == 409, clash.text
    taken = expect(world.http.get(f"{MODULES}/availability", params={"id": BETA_ONLY["api-tool"]}, headers=beta.headers()), 200)
    assert taken.json() is False
    # alpha takes back what it made; beta never changed
    expect(world.http.delete(f"{MODULES}/{BETA_ONLY['api-tool']}", headers=alpha.headers()), 204)
    expect(world.http.delete(f"/api/v1/admin/api-tools/{BETA_ONLY['module']}", headers=alpha.headers()), 204)
    assert events_of(world.http, beta) == before


def test_r12_and_used_by_never_cross(world: World) -> None:
    alpha, beta = world.alpha, world.beta
    before = events_of(world.http, beta)

    def usage(tenant: Tenant, name: str) -> dict[str, list[str]]:
        found = expect(world.http.get(f"{MODULES}/{name}/usage", headers=tenant.headers()), 200).json()
        return {key: sorted(value) for key, value in found.items()}

    for tenant in (alpha, beta):
        assert usage(tenant, LIBRARY) == {"modules": sorted([TOOL, DRAFT]), "plans": [], "agents": []}
    assert usage(alpha, STAMP) == {"modules": [], "plans": [], "agents": []}
    assert usage(beta, STAMP) == {"modules": [], "plans": [BETA_ONLY["plan"]], "agents": [BETA_ONLY["agent"]]}
    assert expect(world.http.get(f"{MODULES}/{STAMP}", headers=alpha.headers()), 200).json()["usedBy"] == []
    # alpha's `dates` is refused by alpha's own importers, and only by them
    refused = world.http.delete(f"{MODULES}/{LIBRARY}", headers=alpha.headers())
    assert refused.status_code == 409, refused.text
    used_by = {key: sorted(value) for key, value in refused.json()["usedBy"].items()}
    assert used_by == {"modules": sorted([TOOL, DRAFT]), "plans": [], "agents": []}
    # alpha's `stamp` goes, although beta's plan and agent name a `stamp` (beta's own)
    expect(world.http.delete(f"{MODULES}/{STAMP}", headers=alpha.headers()), 204)
    assert events_of(world.http, beta) == before
    refused = world.http.delete(f"{MODULES}/{STAMP}", headers=beta.headers())
    assert refused.status_code == 409 and refused.json()["usedBy"]["plans"] == [BETA_ONLY["plan"]], refused.text
    assert expect(world.http.post(f"/api/v1/tools/{STAMP}/call", json={}, headers=beta.headers()), 200).json()["output"] == beta.mark
    assert expect(world.http.post(f"/api/v1/tools/{STAMP}/call", json={}, headers=alpha.headers()), 404).json()["code"] == "tool-not-found"


def test_the_same_bytes_in_both_tenants_are_two_documents(world: World) -> None:
    twin, data, ids = "twin", b"# Shared\n\nThe ferryman of both tenants counted eleven herons.\n", {}
    for tenant in (world.alpha, world.beta):
        expect(world.http.post("/api/v1/admin/search-tools", json={"id": twin, "description": tenant.mark}, headers=tenant.headers()), 201)
        made = expect(world.http.post(f"/api/v1/admin/search-tools/{twin}/documents", files=[("files", ("same.md", data))],
                                      headers=tenant.headers()), 202).json()["documents"][0]
        ids[tenant.id] = made["id"]
        settle(world.http, tenant, twin, made["id"])
    assert ids[ALPHA] == ids[BETA]  # the id is the bytes' hash: the same in both tenants, yet two documents

    def search(tenant: Tenant) -> list[Any]:
        found = expect(world.http.post(f"/api/v1/tools/{twin}_search/call", json={"query": "herons"}, headers=tenant.headers()), 200)
        return found.json()["output"]["results"]

    assert len(search(world.alpha)) == len(search(world.beta)) == 1
    # alpha deletes its copy: beta's stays, found and fetched whole
    expect(world.http.delete(f"/api/v1/admin/search-tools/{twin}/documents/{ids[ALPHA]}", headers=world.alpha.headers()), 204)
    assert search(world.alpha) == [] and len(search(world.beta)) == 1
    fetched = expect(world.http.post(f"/api/v1/tools/{twin}_fetch/call", json={"id": ids[BETA]}, headers=world.beta.headers()), 200)
    fetched = fetched.json()
    assert fetched["error"] is None and "eleven herons" in fetched["output"]["text"], fetched


@pytest.mark.anyio
async def test_a_change_in_beta_tells_no_session_of_alpha(world: World) -> None:
    alpha, beta = world.alpha, world.beta
    default_inbox, main_inbox, listener_inbox = Inbox(), Inbox(), Inbox()
    caller = alpha.tokens["caller"]
    async with sdk_client(world, caller, mode="legacy", message_handler=default_inbox) as default, \
            sdk_client(world, caller, f"/mcp/{SERVER}", mode="legacy", message_handler=main_inbox) as main, \
            sdk_client(world, alpha.tokens["admin"], mode=MODERN) as modern, modern.listen(tools_list_changed=True) as listening:
        assert TOOL in {tool.name for tool in (await default.list_tools()).tools}
        assert TOOL in {tool.name for tool in (await main.list_tools()).tools}
        await anyio.sleep(0.5)  # the GET streams open just after the handshake

        async def listen() -> None:
            from mcp_types import ToolListChangedNotification

            async for _ in listening:
                await listener_inbox(ToolListChangedNotification())

        def change(tenant: Tenant, new: str | None) -> None:
            # the tool `report` (a name alpha's sessions offer too) changes and is published again;
            # a new tool is attached to `main` and allowed by `callers`
            h = tenant.headers()
            expect(world.http.put(f"{MODULES}/{TOOL}", json={"description": f"Changed {tenant.mark}"}, headers=h), 200)
            expect(world.http.post(f"{MODULES}/{TOOL}/publish", headers=h), 200)
            if new is not None:
                expect(world.http.post(MODULES, json={"id": new, "description": tenant.mark, "tool": {"exposeInChat": True},
                                                      "draftContent": "exports.run = function () { return 1; };"}, headers=h), 201)
                expect(world.http.post(f"{MODULES}/{new}/publish", headers=h), 200)
                expect(world.http.put(f"/api/v1/admin/mcp-servers/{SERVER}/tools/{new}", headers=h), 200)
                expect(world.http.put(f"/api/v1/admin/usage-profiles/{PROFILE}", json={"allowedTools": [TOOL, new]}, headers=h), 200)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(listen)
            await anyio.to_thread.run_sync(change, beta, "beta_new")
            await anyio.sleep(1.5)  # six rounds of the watch
            assert (default_inbox.count, main_inbox.count, listener_inbox.count) == (0, 0, 0), "beta's change told alpha's sessions"
            # alpha's own change is news to each of them
            await anyio.to_thread.run_sync(change, alpha, None)
            with anyio.fail_after(5):
                for inbox in (default_inbox, main_inbox, listener_inbox):
                    await inbox.arrived.wait()
            tasks.cancel_scope.cancel()
        for client in (default, main):
            assert "beta_new" not in {tool.name for tool in (await client.list_tools()).tools}

