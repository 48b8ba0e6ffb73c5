"""Two organizations served by one process, holding things of the same names (docs/tenants.md), for the
cross-tenant acceptance suite (tests/api/test_cross_tenant.py).

`alpha` and `beta` are made through the operator's API, each with its first admin token, then
given, over REST with that token, one thing of every sort under the SAME names: a library `dates`,
a tool `report` importing it (published in a changeset), a draft `sketch`, a tool `stamp`, an API
URL tool, a File Search tool with a READY document, a secret, a plan, an agent, an MCP server, a
usage profile, and auditor and caller tokens. Everything a tenant writes carries its mark
(descriptions, code, outputs, tags, documents), so that an answer, header, log line or export
holding the other's mark shows a leak. Beta also owns things alpha lacks (`BETA_ONLY`): the ids
alpha's tokens try, beside ids nobody ever had (`GHOSTS`), which must be answered alike.

Also here: the app served by uvicorn in a thread (the MCP SDK's client needs a real stream for
`tools/list_changed`), and a log handler that keeps every record as the service writes it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from infrastructure.logs import JsonFormatter
from tests.helpers import expect

ALPHA, BETA = "alpha", "beta"
# What each tenant writes everywhere; the other's answers must never hold it.
MARKS = {ALPHA: "ALPHA-MARKER-41d2c7", BETA: "BETA-SECRET-MARKER-9f3c0a"}
SECRET_VALUES = {ALPHA: "alpha-secret-value-5e1b77", BETA: "BETA-SECRET-VALUE-c88d21"}

ADMIN_API = "/api/v1/admin"
MODULES = f"{ADMIN_API}/code-modules"

# The names both tenants own.
LIBRARY, TOOL, DRAFT, STAMP = "dates", "report", "sketch", "stamp"
API_TOOL, SEARCH_TOOL, SECRET = "weather", "handbook", "apikey"
PLAN, AGENT, SERVER, PROFILE = "daily", "helper", "main", "callers"
PROMPT = "greeting"
RESOURCE = "notice"  # an admin's resource, at memo://<its id>
# What only beta owns, one of each sort: every one must be unknown to alpha.
BETA_ONLY = {
    "module": "beta_only", "library": "beta_lib", "api-tool": "beta_tool", "search-tool": "beta_docs",
    "secret": "beta_secret", "plan": "beta_plan", "agent": "beta_agent", "server": "beta_server",
    "profile": "beta_profile", "prompt": "beta_prompt", "resource": "beta_resource",
}
# Ids that no tenant ever had, of the same sorts: what an unknown id answers.
GHOSTS = {sort: f"ghost_{sort.replace('-', '_')}" for sort in BETA_ONLY}


@dataclass
class Tenant:
    id: str
    mark: str
    tokens: dict[str, str] = field(default_factory=dict)  # role → bearer token
    token_ids: dict[str, str] = field(default_factory=dict)  # role → token id
    documents: dict[str, str] = field(default_factory=dict)  # File Search tool → its document's id
    changeset: str = ""
    user: str = ""  # the id of one of its people (docs/users.md)
    call: str = ""  # the id of one of its call records (docs/calls.md)

    def headers(self, role: str = "admin") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[role]}"}

    def hidden(self) -> list[str]:
        """What no other tenant may ever read: the marks, the secret value, and the ids nobody
        can guess (documents, changeset, tokens' ids, the tokens themselves)."""
        return [self.mark, self.mark.lower(), SECRET_VALUES[self.id], *self.documents.values(), self.changeset,
                *self.token_ids.values(), *self.tokens.values(), *([self.call] if self.call else [])]


def create_tenant(http: Any, operator_token: str, tenant_id: str) -> Tenant:
    """A new tenant through the operator's API, holding only its first admin token."""
    made = expect(http.post("/api/v1/operator/tenants", json={"id": tenant_id, "name": tenant_id.title()},
                            headers={"Authorization": f"Bearer {operator_token}"}), 201).json()
    return Tenant(tenant_id, MARKS[tenant_id], tokens={"admin": made["adminToken"]}, token_ids={"admin": made["adminTokenId"]})


def tool_code(mark: str, library: str = LIBRARY) -> str:
    """A tool that says its mark, its library's, and whom `ai.context()` names as the caller."""
    return (f"exports.run = function (input) {{ log('{mark} ran'); var c = ai.context();"
            f" return {{mark: '{mark}', lib: {library}.mark, tenant: c.tenant, user: c.user.id}}; }};")


def tool_section(mark: str) -> dict[str, Any]:
    return {"exposeInChat": True, "tags": ["shared", mark.lower()],
            "inputParameters": [{"name": "text", "type": "string", "required": False, "description": f"a text {mark}"}]}


def document_text(mark: str) -> bytes:
    return f"# Handbook of {mark}\n\nThe lighthouse keeper of {mark} counted seventeen gulls.\n".encode()


def populate(http: Any, tenant: Tenant, *, extras: bool) -> None:
    """Every sort of thing under the shared names, marked; `extras`: beta's own things besides."""
    mark, h = tenant.mark, tenant.headers()

    def post(path: str, body: Any, status: int = 201) -> Any:
        return expect(http.post(f"{ADMIN_API}/{path}", json=body, headers=h), status).json()

    def publish(module: str) -> None:
        expect(http.post(f"{MODULES}/{module}/publish", headers=h), 200)

    # the library, published; the tool importing it, published as a changeset; a draft beside them
    post("code-modules", {"id": LIBRARY, "description": f"Date helpers {mark}", "draftContent": f"exports.mark = '{mark}';"})
    publish(LIBRARY)
    post("code-modules", {"id": TOOL, "description": f"The report {mark}", "draftContent": tool_code(mark),
                          "draftImports": [LIBRARY], "tool": tool_section(mark)})
    tenant.changeset = post("code-modules/publish", {"ids": [TOOL], "message": f"first {mark}"}, 200)["id"]
    post("code-modules", {"id": DRAFT, "description": f"A draft {mark}", "draftContent": f"exports.run = function () {{ return '{mark}'; }};",
                          "draftImports": [LIBRARY], "tool": tool_section(mark)})
    post("code-modules", {"id": STAMP, "description": f"A stamp {mark}", "draftContent": f"exports.run = function () {{ return '{mark}'; }};",
                          "tool": tool_section(mark)})
    publish(STAMP)
    post("secrets", {"id": SECRET, "value": SECRET_VALUES[tenant.id], "description": f"The key {mark}"})
    # a host that never resolves (.invalid): a call is an error result at once, never a hang
    post("api-tools", {"id": API_TOOL, "description": f"Weather {mark}", "urlTemplate": "https://api.example.invalid/v1/weather",
                       "auth": {"type": "bearer", "secret": SECRET}, "response": {"module": TOOL}, "tags": [mark.lower()]})
    post("search-tools", {"id": SEARCH_TOOL, "description": f"Handbook {mark}", "tags": [mark.lower()]})
    tenant.documents[SEARCH_TOOL] = upload(http, tenant, SEARCH_TOOL, f"handbook-{tenant.id}.md", document_text(mark))
    post("plans", {"id": PLAN, "description": f"Daily {mark}", "nodes": [{"toolName": TOOL}], "exposeAsTool": True})
    post("agents", {"id": AGENT, "description": f"Helper {mark}", "allowedTools": [TOOL, API_TOOL]})
    post("mcp-servers", {"id": SERVER, "description": f"Main {mark}", "tools": [TOOL, f"{SEARCH_TOOL}_search"]})
    post("usage-profiles", {"id": PROFILE, "description": f"Callers {mark}", "allowedTools": [TOOL, f"{SEARCH_TOOL}_search", API_TOOL]})
    post("prompts", {"id": PROMPT, "description": f"Greets {mark}", "messages": [{"role": "user", "content": {"type": "text", "text": f"Hi from {mark}"}}]})
    expect(http.post(f"{ADMIN_API}/prompts/{PROMPT}/publish", headers=h), 200)
    post("resources", {"id": RESOURCE, "description": f"Notice {mark}", "uri": f"memo://{RESOURCE}", "mimeType": "text/plain",
                       "text": f"A notice from {mark}"})
    expect(http.post(f"{ADMIN_API}/resources/{RESOURCE}/publish", headers=h), 200)
    if extras:
        b = BETA_ONLY
        post("code-modules", {"id": b["library"], "description": f"Beta's library {mark}", "draftContent": f"exports.mark = '{mark}';"})
        publish(b["library"])
        post("code-modules", {"id": b["module"], "description": f"Beta only {mark}", "draftContent": tool_code(mark, b["library"]),
                              "draftImports": [b["library"]], "tool": tool_section(mark)})
        post("code-modules/publish", {"ids": [b["module"]], "message": f"beta's own {mark}"}, 200)
        post("secrets", {"id": b["secret"], "value": SECRET_VALUES[tenant.id] + "-2", "description": f"Beta's secret {mark}"})
        post("api-tools", {"id": b["api-tool"], "description": f"Beta's tool {mark}", "urlTemplate": "https://beta.example.invalid/v1",
                           "auth": {"type": "bearer", "secret": b["secret"]}, "response": {"module": b["module"]}})
        post("search-tools", {"id": b["search-tool"], "description": f"Beta's documents {mark}"})
        tenant.documents[b["search-tool"]] = upload(http, tenant, b["search-tool"], "beta-only.md",
                                                    document_text(mark) + b"Beta alone keeps this page.\n")
        # beta's plan and agent name beta's `stamp`: alpha's `stamp` is no business of theirs (R12)
        post("plans", {"id": b["plan"], "description": f"Beta's plan {mark}", "nodes": [{"toolName": b["module"]}, {"toolName": STAMP}],
                       "exposeAsTool": True, "exposeInChat": True})
        post("agents", {"id": b["agent"], "description": f"Beta's agent {mark}", "allowedTools": [b["module"], b["api-tool"], STAMP]})
        post("mcp-servers", {"id": b["server"], "description": f"Beta's server {mark}",
                             "tools": [b["module"], b["api-tool"], f"{b['search-tool']}_search"]})
        post("usage-profiles", {"id": b["profile"], "description": f"Beta's profile {mark}", "allowedTools": [b["module"]]})
        # beta's prompt, published: a text of beta's own
        post("prompts", {"id": b["prompt"], "description": f"Beta's prompt {mark}", "arguments": [{"name": "who", "required": True}],
                         "messages": [{"role": "user", "content": {"type": "text", "text": f"Hello {{{{who}}}} from {mark}"}}]})
        expect(http.post(f"{ADMIN_API}/prompts/{b['prompt']}/publish", headers=h), 200)
        # beta's resource, published: at memo://beta_resource, a text of beta's own
        post("resources", {"id": b["resource"], "description": f"Beta's resource {mark}", "uri": f"memo://{b['resource']}",
                           "mimeType": "text/plain", "text": f"Beta alone reads this, {mark}"})
        expect(http.post(f"{ADMIN_API}/resources/{b['resource']}/publish", headers=h), 200)
    # tokens of every role (the caller within the shared profile)
    for role, profile in (("auditor", None), ("caller", PROFILE)):
        issued = post("tokens", {"name": f"{role}-{mark}", "role": role, "usageProfile": profile})
        tenant.tokens[role], tenant.token_ids[role] = issued["token"], issued["id"]
    for name, doc_id in tenant.documents.items():
        settle(http, tenant, name, doc_id)


def upload(http: Any, tenant: Tenant, tool: str, name: str, data: bytes) -> str:
    answer = expect(http.post(f"{ADMIN_API}/search-tools/{tool}/documents", files=[("files", (name, data))], headers=tenant.headers()), 202)
    return answer.json()["documents"][0]["id"]


def settle(http: Any, tenant: Tenant, tool: str, doc_id: str, timeout: float = 60.0) -> None:
    """Waits until the document is READY: its extraction's event must land before any watching."""
    deadline = time.monotonic() + timeout
    while True:
        document = expect(http.get(f"{ADMIN_API}/search-tools/{tool}/documents/{doc_id}", headers=tenant.headers()), 200).json()
        if document["state"] != "PROCESSING":
            assert document["state"] == "READY", document
            return
        assert time.monotonic() < deadline, f"{doc_id} still PROCESSING after {timeout} s"
        time.sleep(0.05)


def events_of(http: Any, tenant: Tenant) -> bytes:
    """The tenant's audit export without its header and end lines (which say when and through
    which log position it was taken): equal bytes, nothing of the tenant changed."""
    answer = expect(http.get(f"{ADMIN_API}/audit/export", headers=tenant.headers()), 200)
    lines = answer.content.splitlines()
    assert b'"toolsmith-audit-export"' in lines[0] and b'"end":true' in lines[-1], (lines[0], lines[-1])
    return b"\n".join(lines[1:-1])


# -- serving and listening -------------------------------------------------------------------------


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """`app` served by uvicorn on a free port in a thread of its own (its lifespan included); its URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_config=None, access_log=True))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the app did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


class LogLines(logging.Handler):
    """Every log record of the process, as the service writes it (JSON, with its extra fields)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(JsonFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is still a line to read
            self.lines.append(repr(vars(record)))

    @contextmanager
    def installed(self, level: int = logging.INFO) -> Iterator[LogLines]:
        root = logging.getLogger()
        before = root.level
        root.addHandler(self)
        root.setLevel(level)
        try:
            yield self
        finally:
            root.removeHandler(self)
            root.setLevel(before)

    def since(self, mark: int) -> list[str]:
        return self.lines[mark:]
