"""Every route of the OpenAPI document with every role (issue 12, family 3; docs/security.md).

The routes are listed here, each with the role it needs, and a test holds the list to the running
server's /openapi.json, so a new route fails the suite until it has its row. Each (principal,
route) pair is one case: no token, a garbage token, a revoked admin token, an auditor, a caller
with a usage profile, a caller without one, and the admin. The answer must be what docs/security.md says (401
without a valid token, 403 for a role that may not, 404 for a tool a caller's profile does not
allow), never a 5xx, and a principal that may not write leaves the event store where it was.
The ids in the paths and bodies are real, so a missing guard would really write.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

import pytest

from tests.adversarial.conftest import CODE_MODULES, OPERATOR_TOKEN, TOOL_SECRET, Probe

PUBLIC, READ, ADMIN, TOOL, OPERATOR = "public", "read", "admin", "tool", "operator"


def _need(method: str, path: str) -> str:
    if path == "/healthz":
        return PUBLIC
    if path == "/api/v1/tools/{name}/call":
        return TOOL
    if path.startswith("/api/v1/operator/"):
        return OPERATOR
    if path.startswith("/api/v1/admin/tokens") or method != "GET":
        return ADMIN
    return READ


# (method, path template) as the OpenAPI document lists them.
ROUTES: list[tuple[str, str]] = [
    ("GET", "/api/v1/admin/code-modules"),
    ("POST", "/api/v1/admin/code-modules"),
    ("GET", "/api/v1/admin/code-modules/availability"),
    ("POST", "/api/v1/admin/code-modules/test"),
    ("POST", "/api/v1/admin/code-modules/publish"),
    ("GET", "/api/v1/admin/changesets"),
    ("GET", "/api/v1/admin/changesets/{id}"),
    ("GET", "/api/v1/admin/code-modules/{id}"),
    ("PUT", "/api/v1/admin/code-modules/{id}"),
    ("DELETE", "/api/v1/admin/code-modules/{id}"),
    ("POST", "/api/v1/admin/code-modules/{id}/publish"),
    ("POST", "/api/v1/admin/code-modules/{id}/revert"),
    ("DELETE", "/api/v1/admin/code-modules/{id}/draft"),
    ("GET", "/api/v1/admin/code-modules/{id}/usage"),
    ("POST", "/api/v1/admin/code-modules/{id}/duplicate"),
    ("GET", "/api/v1/admin/code-modules/{id}/history"),
    ("GET", "/api/v1/admin/code-modules/{id}/versions"),
    ("GET", "/api/v1/admin/code-modules/{id}/versions/{version}"),
    ("GET", "/api/v1/admin/prompts"),
    ("POST", "/api/v1/admin/prompts"),
    ("POST", "/api/v1/admin/prompts/publish"),
    ("GET", "/api/v1/admin/prompts/{id}"),
    ("PUT", "/api/v1/admin/prompts/{id}"),
    ("DELETE", "/api/v1/admin/prompts/{id}"),
    ("DELETE", "/api/v1/admin/prompts/{id}/draft"),
    ("POST", "/api/v1/admin/prompts/{id}/publish"),
    ("POST", "/api/v1/admin/prompts/{id}/revert"),
    ("POST", "/api/v1/admin/prompts/{id}/test"),
    ("GET", "/api/v1/admin/prompts/{id}/history"),
    ("GET", "/api/v1/admin/prompts/{id}/versions"),
    ("GET", "/api/v1/admin/prompts/{id}/usage"),
    ("GET", "/api/v1/admin/resources"),
    ("POST", "/api/v1/admin/resources"),
    ("POST", "/api/v1/admin/resources/publish"),
    ("GET", "/api/v1/admin/resources/{id}"),
    ("PUT", "/api/v1/admin/resources/{id}"),
    ("DELETE", "/api/v1/admin/resources/{id}"),
    ("DELETE", "/api/v1/admin/resources/{id}/draft"),
    ("POST", "/api/v1/admin/resources/{id}/publish"),
    ("POST", "/api/v1/admin/resources/{id}/revert"),
    ("POST", "/api/v1/admin/resources/{id}/test"),
    ("GET", "/api/v1/admin/resources/{id}/history"),
    ("GET", "/api/v1/admin/resources/{id}/versions"),
    ("GET", "/api/v1/admin/resources/{id}/usage"),
    ("POST", "/api/v1/tools/{name}/call"),
    ("GET", "/api/v1/admin/tools"),
    ("GET", "/api/v1/admin/plans"),
    ("POST", "/api/v1/admin/plans"),
    ("GET", "/api/v1/admin/plans/{id}"),
    ("PUT", "/api/v1/admin/plans/{id}"),
    ("DELETE", "/api/v1/admin/plans/{id}"),
    ("POST", "/api/v1/admin/plans/{id}/run"),
    ("GET", "/api/v1/admin/agents"),
    ("POST", "/api/v1/admin/agents"),
    ("GET", "/api/v1/admin/agents/{id}"),
    ("PUT", "/api/v1/admin/agents/{id}"),
    ("DELETE", "/api/v1/admin/agents/{id}"),
    ("GET", "/api/v1/admin/mcp-servers"),
    ("POST", "/api/v1/admin/mcp-servers"),
    ("GET", "/api/v1/admin/mcp-servers/{id}"),
    ("PUT", "/api/v1/admin/mcp-servers/{id}"),
    ("DELETE", "/api/v1/admin/mcp-servers/{id}"),
    ("PUT", "/api/v1/admin/mcp-servers/{id}/tools/{name}"),
    ("DELETE", "/api/v1/admin/mcp-servers/{id}/tools/{name}"),
    ("GET", "/api/v1/admin/usage-profiles"),
    ("POST", "/api/v1/admin/usage-profiles"),
    ("GET", "/api/v1/admin/usage-profiles/{id}"),
    ("PUT", "/api/v1/admin/usage-profiles/{id}"),
    ("DELETE", "/api/v1/admin/usage-profiles/{id}"),
    ("GET", "/api/v1/admin/tokens"),
    ("POST", "/api/v1/admin/tokens"),
    ("DELETE", "/api/v1/admin/tokens/{id}"),
    ("GET", "/api/v1/admin/secrets"),
    ("POST", "/api/v1/admin/secrets"),
    ("GET", "/api/v1/admin/secrets/{id}"),
    ("PUT", "/api/v1/admin/secrets/{id}"),
    ("DELETE", "/api/v1/admin/secrets/{id}"),
    ("GET", "/api/v1/admin/secrets/{id}/history"),
    ("GET", "/api/v1/admin/api-tools"),
    ("POST", "/api/v1/admin/api-tools"),
    ("GET", "/api/v1/admin/api-tools/{id}"),
    ("PUT", "/api/v1/admin/api-tools/{id}"),
    ("DELETE", "/api/v1/admin/api-tools/{id}"),
    ("POST", "/api/v1/admin/api-tools/{id}/test"),
    ("GET", "/api/v1/admin/api-tools/{id}/history"),
    ("GET", "/api/v1/admin/search-tools"),
    ("POST", "/api/v1/admin/search-tools"),
    ("GET", "/api/v1/admin/search-tools/{id}"),
    ("PUT", "/api/v1/admin/search-tools/{id}"),
    ("DELETE", "/api/v1/admin/search-tools/{id}"),
    ("GET", "/api/v1/admin/search-tools/{id}/history"),
    ("GET", "/api/v1/admin/search-tools/{id}/embedding"),
    ("POST", "/api/v1/admin/search-tools/{id}/embedding"),
    ("POST", "/api/v1/admin/search-tools/{id}/test"),
    ("POST", "/api/v1/admin/search-tools/{id}/documents"),
    ("GET", "/api/v1/admin/search-tools/{id}/documents"),
    ("GET", "/api/v1/admin/search-tools/{id}/documents/{docId}"),
    ("DELETE", "/api/v1/admin/search-tools/{id}/documents/{docId}"),
    ("PUT", "/api/v1/admin/search-tools/{id}/documents/{docId}/metadata"),
    ("PATCH", "/api/v1/admin/search-tools/{id}/documents/{docId}/metadata"),
    ("GET", "/api/v1/admin/audit/export"),
    ("GET", "/api/v1/admin/calls"),
    ("GET", "/api/v1/admin/calls/capture"),
    ("PUT", "/api/v1/admin/calls/capture/{name}"),
    ("DELETE", "/api/v1/admin/calls/capture/{name}"),
    ("GET", "/api/v1/admin/calls/{id}"),
    ("GET", "/api/v1/admin/users"),
    ("POST", "/api/v1/admin/users"),
    ("GET", "/api/v1/admin/users/{id}"),
    ("PATCH", "/api/v1/admin/users/{id}"),
    ("POST", "/api/v1/admin/users/{id}/disable"),
    ("POST", "/api/v1/admin/users/{id}/enable"),
    ("POST", "/api/v1/admin/users/{id}/invitation"),
    ("DELETE", "/api/v1/admin/users/{id}"),
    ("GET", "/api/v1/operator/tenants"),
    ("POST", "/api/v1/operator/tenants"),
    ("GET", "/api/v1/operator/tenants/{id}"),
    ("PUT", "/api/v1/operator/tenants/{id}"),
    ("DELETE", "/api/v1/operator/tenants/{id}"),
    ("GET", "/healthz"),
]

TARGET = "target"  # a published tool module every record below names
UPLOAD = [("files", ("intruder.txt", b"an intruder's document"))]  # a document upload's multipart body
RECORD_IDS = {"plans": "plan1", "agents": "agent1", "mcp-servers": "srv1", "usage-profiles": "profile1", "secrets": "secret1", "api-tools": "api1",
              "search-tools": "search1", "prompts": "prompt1", "resources": "resource1"}


@dataclass
class World:
    tokens: dict[str, str | None]
    victim_token_id: str
    document_id: str = ""
    changeset_id: str = ""
    user_id: str = ""
    call_id: str = ""


@pytest.fixture(scope="module")
def world(probe: Probe) -> World:
    tool = {"exposeInChat": True, "tags": ["adv"]}
    assert probe.send("POST", CODE_MODULES, json={"id": TARGET, "description": "target", "draftContent": "exports.run = function () { return 'ran'; };", "tool": tool}).status_code == 201
    assert probe.send("POST", f"{CODE_MODULES}/{TARGET}/publish").status_code == 200
    assert probe.send("PUT", f"{CODE_MODULES}/{TARGET}", json={"description": "a draft"}).status_code == 200
    records = {
        "plans": {"id": "plan1", "description": "p", "nodes": [{"toolName": TARGET}]},
        "agents": {"id": "agent1", "description": "a", "allowedTools": [TARGET]},
        "mcp-servers": {"id": "srv1", "description": "s", "tools": [TARGET]},
        "usage-profiles": {"id": "profile1", "description": "u", "allowedTools": [TARGET]},
        "secrets": {"id": "secret1", "value": "s3cret", "description": "a secret"},
        # a host that never resolves (.invalid): the Playground's call is an error result, not a hang
        "api-tools": {"id": "api1", "description": "an API URL tool", "urlTemplate": "https://api.example.invalid/v1"},
        "search-tools": {"id": "search1", "description": "a File Search tool"},
        "prompts": {"id": "prompt1", "description": "a prompt", "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]},
        "resources": {"id": "resource1", "description": "a resource", "uri": "test://resource1", "mimeType": "text/plain", "text": "hi"},
    }
    for kind, body in records.items():
        assert probe.send("POST", f"/api/v1/admin/{kind}", json=body).status_code == 201
    assert probe.send("POST", "/api/v1/admin/prompts/prompt1/publish").status_code == 200
    assert probe.send("POST", "/api/v1/admin/resources/resource1/publish").status_code == 200
    uploaded = probe.send("POST", "/api/v1/admin/search-tools/search1/documents", files=[("files", ("a.txt", b"a document"))])
    assert uploaded.status_code == 202, uploaded.text
    # Its extraction records an event when it ends: wait for it, so that no write of the world's
    # lands while a principal's request is watched for writes.
    document = f"/api/v1/admin/search-tools/search1/documents/{uploaded.json()['documents'][0]['id']}"
    deadline = time.monotonic() + 60
    while probe.send("GET", document).json()["state"] == "PROCESSING":
        assert time.monotonic() < deadline, "the world's document is still PROCESSING"
        time.sleep(0.05)
    assert probe.send("POST", CODE_MODULES, json={"id": "in_changeset", "description": "c", "draftContent": "exports.x = 1;"}).status_code == 201
    changeset = probe.send("POST", f"{CODE_MODULES}/publish", json={"ids": ["in_changeset"], "message": "one"})
    assert changeset.status_code == 200, changeset.text
    user = probe.send("POST", "/api/v1/admin/users", json={"email": "ada@example.com", "name": "Ada", "role": "auditor", "password": "ada-password-1"})
    assert user.status_code == 201, user.text
    assert probe.send("POST", f"/api/v1/tools/{TARGET}/call", json={}).status_code == 200
    # The call log is written behind the answer: wait for the call's record.
    deadline = time.monotonic() + 30
    while not (calls := probe.send("GET", "/api/v1/admin/calls").json()):
        assert time.monotonic() < deadline, "the world's call is not in the call log"
        time.sleep(0.05)
    revoked = probe.issue_token("admin")
    revoked_id = next(t["id"] for t in probe.send("GET", "/api/v1/admin/tokens").json() if t["name"].startswith("admin-"))
    assert probe.send("DELETE", f"/api/v1/admin/tokens/{revoked_id}").status_code == 204
    probe.issue_token("caller")  # the victim: every principal tries to revoke it
    victim = next(t["id"] for t in probe.send("GET", "/api/v1/admin/tokens").json() if t["name"].startswith("caller-"))
    tokens: dict[str, str | None] = {
        "none": None,
        "garbage": "tsa_" + secrets.token_urlsafe(24),
        "revoked-admin": revoked,
        "auditor": probe.issue_token("auditor"),
        "caller": probe.issue_token("caller", "profile1"),
        "caller-no-profile": probe.issue_token("caller"),
        "admin": probe.server.token,
        "operator": OPERATOR_TOKEN,
    }
    return World(tokens=tokens, victim_token_id=victim, document_id=uploaded.json()["documents"][0]["id"],
                 changeset_id=changeset.json()["id"], user_id=user.json()["id"], call_id=calls[0]["id"])


def concrete(path: str, world: World) -> str:
    kind = path.split("/")[4] if path.startswith("/api/v1/admin/") else ""
    record = {"changesets": world.changeset_id, "users": world.user_id, "calls": world.call_id}.get(kind) or RECORD_IDS.get(kind, TARGET)
    return (
        path.replace("{id}", world.victim_token_id if kind == "tokens" else record)
        .replace("{version}", "1")
        .replace("{name}", TARGET)
        .replace("{docId}", world.document_id)
    )


def body_for(method: str, path: str, principal: str) -> Any:
    """A valid body, so that a missing guard would write."""
    own = f"x_{principal.replace('-', '_')}_{secrets.token_hex(3)}"
    if method == "GET" or method == "DELETE":
        return None
    if path == "/api/v1/admin/calls/capture/{name}":
        return {"maxBytes": 1024}
    if path == "/api/v1/admin/code-modules":
        return {"id": own, "description": "intruder", "draftContent": "exports.x = 1;"}
    if path == "/api/v1/admin/code-modules/publish":
        return {"ids": [TARGET], "message": "intruder"}
    if path == "/api/v1/admin/prompts":
        return {"id": own, "description": "intruder", "messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]}
    if path == "/api/v1/admin/prompts/publish":
        return {"ids": ["prompt1"], "message": "intruder"}
    if path == "/api/v1/admin/prompts/{id}/test":
        return {"arguments": {}}
    if path == "/api/v1/admin/resources":
        return {"id": own, "description": "intruder", "uri": f"test://{own}", "mimeType": "text/plain", "text": "x"}
    if path == "/api/v1/admin/resources/publish":
        return {"ids": ["resource1"], "message": "intruder"}
    if path == "/api/v1/admin/resources/{id}/test":
        return {}
    if path == "/api/v1/admin/api-tools/{id}/test":
        return {"arguments": {}}
    if path == "/api/v1/admin/search-tools/{id}/test":
        return {"capability": "search", "arguments": {"query": "document"}}
    if path.endswith("/documents"):
        return UPLOAD
    if path.endswith("/metadata"):
        return {}  # a document's metadata, whole (PUT) or merged (PATCH)
    if path.endswith("/test"):
        return {"draftContent": "exports.run = function () { return 1; };", "tool": {}}
    if path.endswith("/revert"):
        return {"version": 1}
    if path.endswith("/duplicate"):
        return {"id": own}
    if path.endswith("/call") or path.endswith("/run"):
        return {} if path.endswith("/call") else {"input": {}}
    if path.endswith("/publish") or path.endswith("/embedding") or "/tools/" in path:
        return None  # actions without a body
    if path == "/api/v1/admin/code-modules/{id}":
        return {"description": "overwritten"}
    if path == "/api/v1/admin/tokens":
        return {"name": own, "role": "admin"}
    if path == "/api/v1/admin/users":
        return {"email": f"{own}@example.com", "name": "intruder", "role": "admin", "password": "intruder-password-1"}
    if path == "/api/v1/admin/users/{id}":
        return {"role": "admin"}
    if path.startswith("/api/v1/admin/users/"):
        return None
    if path == "/api/v1/operator/tenants":
        return {"id": own.replace("_", "-"), "name": "intruder"}
    if path == "/api/v1/operator/tenants/{id}":
        return {"suspended": True}
    kind = path.split("/")[4]
    fields = {
        "plans": {"description": "p2", "nodes": [{"toolName": TARGET}]},
        "agents": {"description": "a2", "allowedTools": [TARGET]},
        "mcp-servers": {"description": "s2", "tools": [TARGET]},
        "usage-profiles": {"description": "u2", "allowedTools": [TARGET]},
        "secrets": {"value": "rotated", "description": "s2"},
        "api-tools": {"description": "a2", "urlTemplate": "https://api.example.invalid/v2"},
        "search-tools": {"description": "f2"},
        "prompts": {"description": "p2"},
        "resources": {"description": "r2"},
    }[kind]
    return fields if path.endswith("{id}") else {"id": own, **fields}


def position(probe: Probe) -> int:
    return probe.http.get("/healthz").json()["eventStore"]["position"]


# The admin comes last, in a test of its own: its writes (deletes included) must not change what
# the others find.
PRINCIPALS = ["none", "garbage", "revoked-admin", "auditor", "caller", "caller-no-profile", "operator"]


def expected(principal: str, need: str) -> set[int] | None:
    """The statuses docs/security.md allows; None: anything but 401 and 403 (the admin may do everything)."""
    if need == PUBLIC:
        return {200}
    if principal in ("none", "garbage", "revoked-admin"):
        return {401}
    if principal == "operator":
        # docs/tenants.md: the operator manages tenants and nothing inside them.
        return None if need == OPERATOR else {403}
    if need == OPERATOR:
        return {403}  # no tenant's token, the admin's neither, manages tenants
    if principal == "admin":
        return None
    if principal == "auditor":
        return {200} if need == READ else {403}
    if principal == "caller":
        return {200} if need == TOOL else {403}
    assert principal == "caller-no-profile"
    return {404} if need == TOOL else {403}


@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_every_route_answers_each_principal_as_design_section_8_says(probe: Probe, world: World, principal: str, method: str, path: str) -> None:
    need = _need(method, path)
    body = body_for(method, path, principal)
    before = position(probe)
    kwargs: dict[str, Any] = {} if body is None else {"files": body} if body is UPLOAD else {"json": body}
    answer = probe.send(method, concrete(path, world), token=world.tokens[principal], **kwargs)
    allowed = expected(principal, need)
    if allowed is None:
        assert answer.status_code not in (401, 403), answer.text[:300]
    else:
        assert answer.status_code in allowed, f"{principal}: {answer.status_code} {answer.text[:300]}"
    if principal != "admin" and not (principal == "operator" and need == OPERATOR):
        assert position(probe) == before, f"{principal} wrote to the event store through {method} {path}"
    if answer.status_code == 401:
        assert answer.headers.get("www-authenticate", "").lower().startswith("bearer")


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_the_admin_may_use_every_route(probe: Probe, world: World, method: str, path: str) -> None:
    test_every_route_answers_each_principal_as_design_section_8_says(probe, world, "admin", method, path)


def test_the_matrix_covers_every_route_of_the_openapi_document(probe: Probe) -> None:
    document = probe.send("GET", "/openapi.json", token=None).json()
    listed = {(method.upper(), path) for path, operations in document["paths"].items() for method in operations}
    assert listed == set(ROUTES), f"new: {sorted(listed - set(ROUTES))}; gone: {sorted(set(ROUTES) - listed)}"


GETS = [path for method, path in ROUTES if method == "GET"]


@pytest.mark.parametrize("path", GETS)
def test_head_works_on_every_get_route(probe: Probe, world: World, path: str) -> None:
    # finding 12: HEAD answers as GET does, without a body
    url = concrete(path, world)
    got = probe.send("GET", url)
    head = probe.send("HEAD", url)
    assert head.status_code == got.status_code, f"HEAD {url}: {head.status_code}, GET: {got.status_code}"
    assert head.content == b""


@pytest.mark.parametrize(("method", "path"), [("GET", CODE_MODULES), ("POST", CODE_MODULES), ("GET", "/api/v1/admin/tokens"), ("POST", "/api/v1/tools/target/call")])
def test_two_authorization_headers_are_a_400(probe: Probe, world: World, method: str, path: str) -> None:
    # finding 12: an auditor's and an admin's token in one request is ambiguous, not "the first wins"
    before = position(probe)
    headers = [("Authorization", f"Bearer {world.tokens['auditor']}"), ("Authorization", f"Bearer {probe.server.token}")]
    content = json.dumps({"id": "two_headers", "description": "d", "draftContent": "exports.x = 1;"}) if method == "POST" else None
    answer = probe.http.request(method, path, headers=[*headers, ("Content-Type", "application/json")], content=content)
    assert answer.status_code == 400, f"{answer.status_code} {answer.text[:300]}"
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert position(probe) == before
    probe.assert_no_secret_in(answer.text, "the answer")


@pytest.mark.parametrize("name", ["access_token", "token", "api_key"])
def test_a_token_in_the_query_string_is_never_logged(probe: Probe, name: str) -> None:
    # finding 6: the access log shows the path, never a query string's secret
    token = probe.issue_token("auditor")
    answer = probe.send("GET", f"{CODE_MODULES}?{name}={token}", token=None)
    assert answer.status_code == 401
    probe.assert_no_secret_in(probe.server.output, "the server's log")


def test_calling_a_tool_whose_header_holds_a_secret_never_shows_it(probe: Probe) -> None:
    # the external MCP tool's server does not exist: the call fails, and says so without the header
    answer = probe.send("POST", "/api/v1/tools/weather/call", json={}, deadline=70)
    assert answer.status_code in (200, 400, 404, 429, 503), answer.text[:300]
    catalog = probe.send("GET", "/api/v1/admin/tools")
    assert "weather" in {tool["name"] for tool in catalog.json()}
    assert TOOL_SECRET not in probe.server.output, "the tool's secret header is in the server's log"


def test_a_revoked_token_stays_revoked_and_the_service_lives(probe: Probe, world: World) -> None:
    assert probe.send("GET", CODE_MODULES, token=world.tokens["revoked-admin"]).status_code == 401
    probe.assert_alive()


# -- MCP's Host and Origin gate (finding 8) --------------------------------------------------------

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
BAD_HOSTS = ["127.0.0.1:{port}.evil", "127.0.0.1:{port}evil.example", "localhost:{port}.attacker.example", "127.0.0.1:", "127.0.0.1:x{port}", "evil.example:{port}"]
GOOD_HOSTS = ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}", "LocalHost:{port}"]
BAD_ORIGINS = ["http://127.0.0.1:{port}.evil", "http://127.0.0.1:1.evil.example", "http://localhost:{port}@evil.example", "http://evil.example"]


def _mcp(probe: Probe, **headers: str) -> int:
    answer = probe.send("POST", "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers})
    return answer.status_code


@pytest.mark.parametrize("host", BAD_HOSTS)
def test_mcp_refuses_a_host_whose_port_is_not_digits(probe: Probe, host: str) -> None:
    assert _mcp(probe, Host=host.format(port=probe.server.port)) == 421


@pytest.mark.parametrize("host", GOOD_HOSTS)
def test_mcp_accepts_an_allowed_host_in_any_case(probe: Probe, host: str) -> None:
    assert _mcp(probe, Host=host.format(port=probe.server.port)) == 200


@pytest.mark.parametrize("origin", BAD_ORIGINS)
def test_mcp_refuses_an_origin_whose_port_is_not_digits(probe: Probe, origin: str) -> None:
    assert _mcp(probe, Origin=origin.format(port=probe.server.port)) == 403


# -- the data dir (finding 12) -----------------------------------------------------------------------


def test_the_data_dir_is_0700_and_its_files_0600(probe: Probe) -> None:
    data_dir = probe.server.data_dir
    assert data_dir.stat().st_mode & 0o777 == 0o700, oct(data_dir.stat().st_mode & 0o777)
    loose = [f"{path.relative_to(data_dir)} {oct(path.stat().st_mode & 0o777)}" for path in data_dir.rglob("*") if path.stat().st_mode & 0o077]
    assert not loose, f"readable by others: {loose}"


def test_no_secret_in_any_log_line_event_export_or_answer(probe: Probe) -> None:
    probe.assert_no_secret_anywhere()
