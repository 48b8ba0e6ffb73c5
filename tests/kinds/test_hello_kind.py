"""A new configured kind, written as a throwaway here (issue 29, acceptance): a "hello" tool has one
setting, `greeting`, and answers it when called. Its package (model, kind, REST routes, console
pages and templates, plugin) is written by the test into a folder of its own and imported from
there; the app is built with the registry's kinds plus its one line (`DEFAULT_KINDS + (HELLO,)`),
so that no file of the product names it. What a configured kind shares comes from the bases: the
aggregate (`domain/configured.py`), the kind (`application/kinds/configured.py`), the REST routes
(`api/configured.py`), and the console pages and templates (`console/configured.py`,
`console/templates/configured/`).

It is created, read (with its ETag and `asOf`), replaced (with `If-Match`, 412 on a stale one),
disabled, listed in the catalog, called over MCP (`tools/call` answers the greeting), shown in the
console (its list and its page with the greeting), refused deletion while a plan names it, deleted,
and its history lists every change."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.compose import bootstrap
from entrypoints.kinds import DEFAULT_KINDS
from entrypoints.web import create_app
from infrastructure.settings import Settings
from sandbox.embedded import EmbeddedSandbox
from tests.helpers import ADMIN_TOKEN, expect, page_csrf
from tests.kinds.mcp import McpSession

PACKAGE = "hello_kind_throwaway"
HELLOS = "/api/v1/admin/hello-tools"
PAGES = "/console/hello-tools"
ORIGIN = "http://testserver"

# The kind's package, file by file: all a configured kind writes of its own.
FILES = {
    "__init__.py": '"""A throwaway configured kind: a tool that answers its greeting."""\n',
    "model.py": '''
        """A hello tool: one tenant's tool with one setting, `greeting`, through all its lives (the
        lifecycle is every configured tool's)."""

        from __future__ import annotations

        from uuid import NAMESPACE_URL, UUID, uuid5

        from domain.configured import Configured

        HELLO = "HELLO"
        LABEL = "hello tool"
        _NAMESPACE = uuid5(NAMESPACE_URL, "https://toolsmith.invalid/tests/hello-tools")


        def hello_id(tenant: str, name: str) -> UUID:
            return uuid5(_NAMESPACE, f"hello/{tenant}/{name}")


        class Hello(Configured):
            @staticmethod
            def create_id(tenant: str, tool_id: str) -> UUID:  # type: ignore[override]
                return hello_id(tenant, tool_id)
    ''',
    "kind.py": '''
        """Hello tools as a kind of tool: what every configured kind does, with its one setting; a call
        answers the greeting."""

        from __future__ import annotations

        from typing import Any

        from application.context import CallContext
        from application.kinds.base import Tools, tagged, validated
        from application.kinds.configured import ConfiguredKind
        from domain.catalog import ToolEntry
        from domain.errors import ToolNotCallable, Violation
        from domain.ports import ExecutionResult
        from domain.rules import description_violations
        from hello_kind_throwaway.model import HELLO, LABEL, Hello

        SCHEMA = {"type": "object", "properties": {}}


        class HelloKind(ConfiguredKind[Hello]):
            call_type = HELLO
            label = LABEL
            index_name = "hello_tools"

            def normalise(self, given: dict[str, Any]) -> dict[str, Any]:
                return {"description": given.get("description") or "", "tags": list(dict.fromkeys(given.get("tags") or [])),
                        "exposeInChat": bool(given.get("exposeInChat", True)), "enabled": given.get("enabled", True) is not False,
                        "greeting": given.get("greeting") or ""}

            def violations(self, name: str, given: dict[str, Any], config: dict[str, Any]) -> list[Violation]:
                found = description_violations(config["description"])
                if not config["greeting"].strip():
                    found.append(Violation("greeting", "HELLO", "must say something"))
                return found

            def entries_of(self, tool: Hello) -> list[ToolEntry]:
                return [ToolEntry(name=tool.tool_id, description=tool.config["description"], call_type=HELLO, input_schema=SCHEMA,
                                  tags=tagged(tool.config["tags"], "hello"), expose_in_chat=tool.config["exposeInChat"],
                                  enabled=tool.config["enabled"])]

            def call(self, tenant: str, entry: ToolEntry, arguments: Any, context: CallContext, tools: Tools,
                     depth: int) -> ExecutionResult:
                validated(entry.input_schema, arguments)
                tool = self.find(tenant, entry.name)
                if tool is None:
                    raise ToolNotCallable(entry.name, "no such tool")
                return ExecutionResult(output=tool.config["greeting"])
    ''',
    "schemas.py": '''
        """A hello tool's REST bodies and how the API shows one."""

        from __future__ import annotations

        from typing import Any

        from pydantic import Field

        from api.configured import CREATING, ConfiguredBody


        class HelloBody(ConfiguredBody):
            greeting: str = Field(max_length=200)


        class HelloCreate(HelloBody):
            model_config = CREATING


        def public(tool: Any) -> dict[str, Any]:
            return {"id": tool.tool_id, "callType": "HELLO", **tool.config, "version": tool.version, "createdBy": tool.created_by,
                    "createdAt": tool.created_on, "updatedBy": tool.updated_by, "updatedAt": tool.modified_on}
    ''',
    "routes.py": '''
        """Hello tools' REST routes: every configured kind's, nothing of its own."""

        from fastapi import APIRouter

        from api.configured import ConfiguredApi, configured_routes
        from api.paths import ADMIN_API
        from hello_kind_throwaway.kind import HelloKind
        from hello_kind_throwaway.schemas import HelloBody, HelloCreate, public

        router = configured_routes(APIRouter(prefix=f"{ADMIN_API}/hello-tools", tags=["hello tools"]),
                                   ConfiguredApi(HelloKind, noun="hello tool", one="hello_tool", body=HelloBody, create=HelloCreate,
                                                 public=public))
    ''',
    "pages.py": '''
        """Hello tools in the console: every configured kind's pages, with its form of one setting."""

        from __future__ import annotations

        from typing import Any

        from console.configured import ConfiguredPages, expected_version
        from domain.errors import Violation
        from hello_kind_throwaway.kind import HelloKind
        from hello_kind_throwaway.schemas import HelloBody, public

        LABELS = {"id": "Id", "description": "Description", "tags": "Tags", "greeting": "Greeting"}


        class HelloForm:
            def values_of(self, tool: Any) -> dict[str, Any]:
                config = tool.config if tool is not None else {}
                return {"id": tool.tool_id if tool is not None else "", "version": str(tool.version) if tool is not None else "",
                        "description": config.get("description", ""), "tags": ", ".join(config.get("tags", [])),
                        "greeting": config.get("greeting", ""), "exposeInChat": config.get("exposeInChat", True),
                        "enabled": config.get("enabled", True)}

            def form_values(self, form: Any, tool_id: str | None) -> dict[str, Any]:
                text = {k: str(form.get(k, "")).strip() for k in ("id", "version", "description", "tags", "greeting")}
                return {**text, "id": tool_id if tool_id is not None else text["id"],
                        "exposeInChat": form.get("exposeInChat") == "on", "enabled": form.get("enabled") == "on"}

            def body_of(self, values: dict[str, Any]) -> tuple[dict[str, Any], list[Violation]]:
                tags = [t.strip() for t in values["tags"].split(",") if t.strip()]
                return {"description": values["description"], "tags": tags, "greeting": values["greeting"],
                        "exposeInChat": values["exposeInChat"], "enabled": values["enabled"]}, []

            def messages_of(self, found: list[Violation], values: dict[str, Any]) -> dict[str, list[str]]:
                fields: dict[str, list[str]] = {}
                for v in found:
                    anchor = v.field if v.field in LABELS else "form"
                    fields.setdefault(anchor, []).append(f"{LABELS.get(v.field, v.field)}: {v.message}")
                return fields

            def expected(self, kind: Any, tenant: str, name: str, values: dict[str, Any], config: dict[str, Any]) -> int | None:
                return expected_version(values)


        PAGES = ConfiguredPages(HelloKind, base="/console/hello-tools", one="hello_tool", noun="hello tool", title="hello tool",
                                folder="hello", body=HelloBody, public=public, form=HelloForm())
        router = PAGES.router
    ''',
    "templates/hello/list.html": '''
        {% extends "configured/list.html" %}
        {% block tail_heads %}<th scope="col">Greeting</th>{% endblock %}
        {% block tail_cells %}<td>{{ t.greeting }}</td>{% endblock %}
    ''',
    "templates/hello/form.html": '''
        {% extends "configured/form.html" %}
        {% from "plans/_macros.html" import invalid, errors_for %}
        {% block facts %}<dt>Greeting</dt><dd id="greeting-now">{{ tool.greeting }}</dd>{% endblock %}
        {% block fields %}
          <div class="field">
            <label for="greeting">Greeting</label>
            <input id="greeting" name="greeting" value="{{ values.greeting }}"{{ invalid('greeting', fields) }}>
            {{ errors_for('greeting', fields) }}
          </div>
        {% endblock %}
    ''',
    "plugin.py": '''
        """The hello kind as the service mounts it."""

        from pathlib import Path

        from api.kinds import KindPlugin
        from hello_kind_throwaway import pages, routes
        from hello_kind_throwaway.kind import HelloKind

        PLUGIN = KindPlugin(HelloKind, routers=(routes.router,), console=(pages.router,), page="/console/hello-tools/{}",
                            templates=Path(__file__).parent / "templates")
    ''',
}


@pytest.fixture(scope="module")
def hello_plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The kind's package, written to a folder of its own and imported from there (and forgotten after)."""
    root = tmp_path_factory.mktemp("kinds")
    for name, text in FILES.items():
        path = root / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    sys.path.insert(0, str(root))
    try:
        plugin: ModuleType = importlib.import_module(f"{PACKAGE}.plugin")
        yield plugin.PLUGIN
    finally:
        sys.path.remove(str(root))
        for module in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[module]


@pytest.fixture
def client(settings: Settings, shared_sandbox: EmbeddedSandbox, hello_plugin: object) -> Iterator[TestClient]:
    HELLO = hello_plugin
    # The one registry line: the product's kinds, and this one.
    app = create_app(bootstrap(settings, sandbox=shared_sandbox, kinds=DEFAULT_KINDS + (HELLO,)))  # type: ignore[operator]
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as test_client:
        yield test_client


def console(client: TestClient) -> TestClient:
    """A browser-like client of the same app, signed in to the console as the admin."""
    visitor = TestClient(client.app)
    signed = visitor.post("/console/sign-in", data={"token": ADMIN_TOKEN, "next": PAGES}, headers={"Origin": ORIGIN},
                          follow_redirects=False)
    assert signed.status_code == 303, signed.text
    return visitor


def post(visitor: TestClient, url: str, fields: list[tuple[str, str]], *, page: str) -> Any:
    """A form posted from `page` (its CSRF token with it), as a browser sends it."""
    data: dict[str, list[str]] = {}
    for key, value in [*fields, ("csrf_token", page_csrf(visitor.get(page).text))]:
        data.setdefault(key, []).append(value)
    return visitor.post(url, data=data, headers={"Origin": ORIGIN}, follow_redirects=False)


def test_a_hello_tool_is_made_read_replaced_and_kept_to_its_version_over_rest(client: TestClient) -> None:
    made = expect(client.post(HELLOS, json={"id": "greeter", "description": "Greets", "greeting": "Hello, world"}), 201)
    assert made.headers["ETag"] == '"1"'
    assert made.json()["greeting"] == "Hello, world" and made.json()["callType"] == "HELLO"
    assert [t["id"] for t in client.get(HELLOS).json()] == ["greeter"]
    read = expect(client.get(f"{HELLOS}/greeter"), 200)
    assert read.headers["ETag"] == '"1"' and read.json()["createdBy"] == "admin"
    # its rules are the kind's, named by field; a missing id and a taken one as every kind's
    refused = client.post(HELLOS, json={"id": "blank", "description": "Greets", "greeting": " "})
    assert refused.status_code == 400 and "greeting" in refused.text
    assert client.post(HELLOS, json={"id": "greeter", "description": "Again", "greeting": "Hi"}).status_code == 409
    assert client.post(HELLOS, json={"description": "No id", "greeting": "Hi"}).status_code in (400, 422)
    # replaced with the version read; a stale If-Match is 412 and changes nothing
    replaced = expect(client.put(f"{HELLOS}/greeter", json={"description": "Greets", "greeting": "Bonjour"},
                                 headers={"If-Match": '"1"'}), 200)
    assert replaced.headers["ETag"] == '"2"' and replaced.json()["greeting"] == "Bonjour"
    stale = client.put(f"{HELLOS}/greeter", json={"description": "Greets", "greeting": "Hola"}, headers={"If-Match": '"1"'})
    assert stale.status_code == 412
    assert client.get(f"{HELLOS}/greeter").json()["greeting"] == "Bonjour"
    # asOf: as it stood before the change; an instant without its time zone is refused, naming asOf
    created_at = made.json()["createdAt"]
    assert client.get(f"{HELLOS}/greeter", params={"asOf": created_at}).json()["greeting"] == "Hello, world"
    naive = client.get(f"{HELLOS}/greeter", params={"asOf": "2024-05-06T10:00:00"})
    assert naive.status_code == 400 and "asOf" in naive.text
    assert client.get(f"{HELLOS}/nobody").status_code == 404
    # the OpenAPI document has its routes, as every configured kind's
    paths = client.get("/openapi.json").json()["paths"]
    assert set(paths[HELLOS]) == {"get", "post"} and set(paths[f"{HELLOS}/{{id}}"]) == {"get", "put", "delete"}
    assert set(paths[f"{HELLOS}/{{id}}/history"]) == {"get"}


def test_a_hello_tool_answers_its_greeting_over_mcp_and_rest_until_disabled(client: TestClient) -> None:
    expect(client.post(HELLOS, json={"id": "greeter", "description": "Greets", "greeting": "Hello, world"}), 201)
    listed = [t for t in client.get("/api/v1/admin/tools").json() if t["name"] == "greeter"]
    assert [(t["callType"], t["tags"]) for t in listed] == [("HELLO", ["hello"])]
    mcp = McpSession(client)
    assert "greeter" in mcp.tool_names()
    answer = mcp.call("greeter", {})
    assert not answer.get("isError") and answer["content"][0]["text"] == "Hello, world"
    assert client.post("/api/v1/tools/greeter/call", json={}).json()["output"] == "Hello, world"
    # a change is live at once: the next call answers the new greeting
    expect(client.put(f"{HELLOS}/greeter", json={"description": "Greets", "greeting": "Bonjour"}), 200)
    assert McpSession(client).call("greeter", {})["content"][0]["text"] == "Bonjour"
    # disabled: no longer offered
    expect(client.put(f"{HELLOS}/greeter", json={"description": "Greets", "greeting": "Bonjour", "enabled": False}), 200)
    assert "greeter" not in McpSession(client).tool_names()


def test_a_hello_tool_is_refused_deletion_while_a_plan_names_it_then_deleted_with_its_history_kept(client: TestClient) -> None:
    expect(client.post(HELLOS, json={"id": "greeter", "description": "Greets", "greeting": "Hello"}), 201)
    expect(client.put(f"{HELLOS}/greeter", json={"description": "Greets", "greeting": "Hi"}), 200)
    expect(client.post("/api/v1/admin/plans", json={"id": "greet", "description": "Greets", "nodes": [{"toolName": "greeter"}]}), 201)
    refused = client.delete(f"{HELLOS}/greeter")
    assert refused.status_code == 409 and "greet" in refused.text
    expect(client.delete("/api/v1/admin/plans/greet"), 204)
    expect(client.delete(f"{HELLOS}/greeter"), 204)
    assert client.get(f"{HELLOS}/greeter").status_code == 404
    history = expect(client.get(f"{HELLOS}/greeter/history"), 200).json()
    assert [(e["type"], e["by"]) for e in history["events"]] == [("Created", "admin"), ("Changed", "admin"), ("Deleted", "admin")]


def test_the_console_lists_shows_edits_and_disables_a_hello_tool(client: TestClient) -> None:
    expect(client.post(HELLOS, json={"id": "greeter", "description": "Greets", "greeting": "Hello, world"}), 201)
    admin = console(client)
    listed = admin.get(PAGES)
    assert listed.status_code == 200
    assert "<h1>hello tools</h1>" in listed.text and f'href="{PAGES}/greeter"' in listed.text and "<td>Hello, world</td>" in listed.text
    page = admin.get(f"{PAGES}/greeter")
    assert page.status_code == 200
    assert "<h1>hello tool greeter</h1>" in page.text and '<dd id="greeting-now">Hello, world</dd>' in page.text
    assert 'id="greeting" name="greeting" value="Hello, world"' in page.text
    assert admin.get(f"{PAGES}/new").status_code == 200
    # a save from the form is the kind's: live at once, over REST too
    saved = post(admin, f"{PAGES}/greeter", [("description", "Greets"), ("greeting", "Bonjour"), ("version", "1"),
                                             ("exposeInChat", "on"), ("enabled", "on")], page=f"{PAGES}/greeter")
    assert saved.status_code == 303 and saved.headers["location"] == f"{PAGES}/greeter"
    assert client.get(f"{HELLOS}/greeter").json()["greeting"] == "Bonjour"
    # a blank greeting is refused next to its field, with what was typed kept
    blank = post(admin, f"{PAGES}/greeter", [("description", "Greets"), ("greeting", ""), ("version", "2")], page=f"{PAGES}/greeter")
    assert blank.status_code == 200 and "Greeting: must say something" in blank.text
    # disabled from its page; its history page lists both changes
    disabled = post(admin, f"{PAGES}/greeter/enabled", [("enabled", "false")], page=f"{PAGES}/greeter")
    assert disabled.status_code == 303 and client.get(f"{HELLOS}/greeter").json()["enabled"] is False
    history = admin.get(f"{PAGES}/greeter/history")
    assert history.status_code == 200 and history.text.count("<th scope=\"row\">Changed</th>") == 2
