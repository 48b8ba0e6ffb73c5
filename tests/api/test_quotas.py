"""The tenants' quotas (docs/tenants.md, issue 19): the operator sets them per tenant; a create that
would take a tenant past one is refused (409, or 413 for stored bytes) naming the quota, its limit
and what is in use, and records nothing; raising or lifting the quota lets it through; lowering
it below what the tenant holds deletes nothing; another tenant is never affected. The race of two
replicas on one PostgreSQL store is `tests/integration/test_quotas_postgres.py`'s."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from toolkinds.search_tools.kind import SearchToolKind, Upload
from application.store import Store
from domain.ports import GraphLock
from entrypoints.compose import ApplicationServices, build_application
from tests.console.test_console_api_tools import weather_form
from tests.console.test_console_others import console, post
from tests.console.test_console_search_tools import tool_form
from tests.helpers import ADMIN_TOKEN, OPERATOR_TOKEN, page_csrf

OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
TENANTS = "/api/v1/operator/tenants"
MODULES = "/api/v1/admin/code-modules"
API_TOOLS = "/api/v1/admin/api-tools"
SEARCH_TOOLS = "/api/v1/admin/search-tools"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def set_quotas(client: TestClient, tenant: str = "default", **quotas: int | None) -> None:
    answer = client.put(f"{TENANTS}/{tenant}", headers=OPERATOR, json={"quotas": quotas})
    assert answer.status_code == 200, answer.text


def new_tenant(client: TestClient, tenant: str, **quotas: int | None) -> dict[str, str]:
    answer = client.post(TENANTS, headers=OPERATOR, json={"id": tenant, "name": tenant.title(), "quotas": quotas})
    assert answer.status_code == 201, answer.text
    return bearer(answer.json()["adminToken"])


def create_module(client: TestClient, module_id: str, headers: dict[str, str] | None = None, **extra: Any) -> Any:
    return client.post(MODULES, headers=headers, json={"id": module_id, "description": "d", "draftContent": "exports.x = 1;", **extra})


def api_tool(client: TestClient, name: str, headers: dict[str, str] | None = None) -> Any:
    return client.post(API_TOOLS, headers=headers, json={
        "id": name, "description": "Current weather", "urlTemplate": "https://api.example.com/v1/weather/{city}",
        "parameters": [{"name": "city", "type": "string", "required": True, "location": "path"}]})


def search_tool(client: TestClient, name: str, headers: dict[str, str] | None = None) -> Any:
    return client.post(SEARCH_TOOLS, headers=headers, json={"id": name, "description": "Care guides"})


def upload(client: TestClient, name: str, *files: tuple[str, bytes], headers: dict[str, str] | None = None) -> Any:
    return client.post(f"{SEARCH_TOOLS}/{name}/documents", headers=headers,
                       files=[("files", (file_name, data)) for file_name, data in files])


def refused(answer: Any, quota: str, limit: int, used: int, status: int = 409) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    problem = answer.json()
    assert (problem["code"], problem["quota"], problem["limit"], problem["used"]) == ("quota-exceeded", quota, limit, used)
    assert quota in problem["detail"]


def position(client: TestClient) -> int:
    return client.app.state.services.store.position()  # type: ignore[attr-defined]


def ids(client: TestClient, path: str, headers: dict[str, str] | None = None) -> list[str]:
    listed = client.get(path, headers=headers).json()
    rows = listed["collection"] if isinstance(listed, dict) and "collection" in listed else listed
    return sorted(row["id"] for row in rows)


def documents(client: TestClient, name: str) -> list[str]:
    return sorted(d["id"] for d in client.get(f"{SEARCH_TOOLS}/{name}/documents").json()["documents"])


def usage(client: TestClient, tenant: str = "default") -> dict[str, int]:
    return client.get(f"{TENANTS}/{tenant}", headers=OPERATOR).json()["usage"]


# -- modules ---------------------------------------------------------------------------------------


def test_a_module_past_the_quota_is_refused_naming_it_and_nothing_is_recorded(client: TestClient) -> None:
    set_quotas(client, modules=2)
    assert create_module(client, "dates").status_code == 201
    assert client.post(f"{MODULES}/dates/publish").status_code == 200
    assert create_module(client, "report", draftImports=["dates"]).status_code == 201
    before, listed = position(client), ids(client, MODULES)
    # at the limit: a create, one with imports, a duplicate are each refused
    refused(create_module(client, "third"), "modules", limit=2, used=2)
    refused(create_module(client, "fourth", draftImports=["dates"]), "modules", limit=2, used=2)
    refused(client.post(f"{MODULES}/dates/duplicate", json={"id": "copy"}), "modules", limit=2, used=2)
    assert position(client) == before
    assert ids(client, MODULES) == listed == ["dates", "report"]
    # a refused id is still free; raising the quota lets it through
    set_quotas(client, modules=3)
    assert create_module(client, "third").status_code == 201
    refused(create_module(client, "fourth"), "modules", limit=3, used=3)
    # lifted: no limit at all
    set_quotas(client, modules=None)
    assert create_module(client, "fourth").status_code == 201


def test_a_deleted_module_frees_its_unit_and_creating_it_again_takes_one(client: TestClient) -> None:
    set_quotas(client, modules=1)
    assert create_module(client, "dates").status_code == 201
    assert client.delete(f"{MODULES}/dates").status_code == 204
    assert create_module(client, "report").status_code == 201
    refused(create_module(client, "dates"), "modules", limit=1, used=1)  # a new life of a deleted id counts


def test_a_quota_lowered_below_what_the_tenant_holds_deletes_nothing_and_refuses_growth(client: TestClient) -> None:
    for module_id in ("a", "b", "c"):
        assert create_module(client, module_id).status_code == 201
    set_quotas(client, modules=1)
    assert ids(client, MODULES) == ["a", "b", "c"] and usage(client)["modules"] == 3
    refused(create_module(client, "d"), "modules", limit=1, used=3)
    # what does not add a module still works
    assert client.put(f"{MODULES}/a", json={"draftContent": "exports.x = 2;"}).status_code == 200
    for module_id in ("a", "b"):
        assert client.delete(f"{MODULES}/{module_id}").status_code == 204
    refused(create_module(client, "d"), "modules", limit=1, used=1)
    assert client.delete(f"{MODULES}/c").status_code == 204
    assert create_module(client, "d").status_code == 201


# -- tools -----------------------------------------------------------------------------------------


def test_the_tools_quota_counts_api_url_and_file_search_tools_together(client: TestClient) -> None:
    set_quotas(client, tools=2)
    assert api_tool(client, "weather").status_code == 201, api_tool(client, "weather").text
    assert search_tool(client, "guides").status_code == 201
    before = position(client)
    refused(api_tool(client, "forecast"), "tools", limit=2, used=2)
    refused(search_tool(client, "manuals"), "tools", limit=2, used=2)
    assert position(client) == before
    assert ids(client, API_TOOLS) == ["weather"] and ids(client, SEARCH_TOOLS) == ["guides"]
    # modules are not tools of this quota
    assert create_module(client, "dates").status_code == 201
    # a deleted tool frees its unit
    assert client.delete(f"{API_TOOLS}/weather").status_code == 204
    assert search_tool(client, "manuals").status_code == 201
    refused(api_tool(client, "weather"), "tools", limit=2, used=2)
    set_quotas(client, tools=None)
    assert api_tool(client, "weather").status_code == 201


# -- documents and their bytes -----------------------------------------------------------------------


def _blobs(client: TestClient) -> Any:
    return client.app.state.services.toolbox.kind(SearchToolKind).files.blobs  # type: ignore[attr-defined]


def test_the_documents_quota_counts_new_distinct_documents_and_refuses_an_upload_whole(client: TestClient) -> None:
    assert search_tool(client, "guides").status_code == 201
    set_quotas(client, documents=2)
    assert upload(client, "guides", ("a.md", b"# A\n\nalpha\n")).status_code == 202
    before, held = position(client), documents(client, "guides")
    # two new documents where one is left: the whole upload is refused
    refused(upload(client, "guides", ("b.md", b"# B\n\nbeta\n"), ("c.md", b"# C\n\ngamma\n")), "documents", limit=2, used=1)
    assert position(client) == before and documents(client, "guides") == held
    # the same bytes twice in one upload are one document; bytes the tool has add nothing
    assert upload(client, "guides", ("b.md", b"# B\n\nbeta\n"), ("b-again.md", b"# B\n\nbeta\n"),
                  ("a-again.md", b"# A\n\nalpha\n")).status_code == 202
    assert len(documents(client, "guides")) == 2
    refused(upload(client, "guides", ("c.md", b"# C\n\ngamma\n")), "documents", limit=2, used=2)
    assert upload(client, "guides", ("a.md", b"# A\n\nalpha\n")).status_code == 202  # at the limit, adding nothing
    set_quotas(client, documents=3)
    assert upload(client, "guides", ("c.md", b"# C\n\ngamma\n")).status_code == 202


def test_an_upload_past_the_stored_bytes_is_413_before_its_bytes_are_kept(client: TestClient) -> None:
    assert search_tool(client, "guides").status_code == 201
    first = b"# A\n\n" + b"a" * 55  # 60 bytes
    assert upload(client, "guides", ("a.md", first)).status_code == 202
    set_quotas(client, storedBytes=100)
    assert usage(client)["storedBytes"] == 60
    before, held = position(client), documents(client, "guides")
    second, third = b"# B\n\n" + b"b" * 25, b"# C\n\n" + b"c" * 25  # 30 bytes each: 120 in all
    refused(upload(client, "guides", ("b.md", second), ("c.md", third)), "storedBytes", limit=100, used=60, status=413)
    assert position(client) == before and documents(client, "guides") == held
    blobs = _blobs(client)
    assert not any(blobs.exists("default", hashlib.sha256(data).hexdigest()) for data in (second, third))
    # the same bytes again add nothing, even past a lowered quota
    set_quotas(client, storedBytes=10)
    assert upload(client, "guides", ("a.md", first)).status_code == 202
    refused(upload(client, "guides", ("b.md", second)), "storedBytes", limit=10, used=60, status=413)
    # the same bytes in another tool are another document of their own size
    set_quotas(client, storedBytes=100)
    assert search_tool(client, "manuals").status_code == 201
    refused(upload(client, "manuals", ("a.md", first)), "storedBytes", limit=100, used=60, status=413)
    set_quotas(client, storedBytes=None)
    assert upload(client, "guides", ("b.md", second), ("c.md", third)).status_code == 202
    assert usage(client)["storedBytes"] == 120


def test_an_upload_refused_under_the_lock_drops_the_bytes_it_kept(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its early check passed, then another upload took the last unit while its bytes were being
    kept: refused under the lock, and the bytes that no document holds are gone again."""
    assert search_tool(client, "guides").status_code == 201
    set_quotas(client, documents=1)
    kind = client.app.state.services.toolbox.kind(SearchToolKind)  # type: ignore[attr-defined]
    blobs, put = kind.files.blobs, kind.files.blobs.put
    raced: list[Any] = []

    def put_then_another_upload(tenant: str, source: Any) -> Any:
        kept = put(tenant, source)
        if not raced:
            raced.append("other")
            spooled = kind.files.workdir / "other.md"
            spooled.write_bytes(b"# A\n\nalpha\n")
            kind.upload(tenant, "guides", [Upload("other.md", spooled)], by="other")
        return kept

    monkeypatch.setattr(blobs, "put", put_then_another_upload)
    refused(upload(client, "guides", ("b.md", b"# B\n\nbeta\n")), "documents", limit=1, used=1)
    assert raced and [d["name"] for d in kind.documents("default", "guides")[0]] == ["other.md"]
    assert not blobs.exists("default", hashlib.sha256(b"# B\n\nbeta\n").hexdigest())
    assert blobs.exists("default", hashlib.sha256(b"# A\n\nalpha\n").hexdigest())


# -- tenants -----------------------------------------------------------------------------------------


def test_each_tenant_has_its_own_quotas_and_usage(client: TestClient) -> None:
    acme = new_tenant(client, "acme", modules=1, tools=1)
    assert create_module(client, "dates", headers=acme).status_code == 201
    refused(create_module(client, "report", headers=acme), "modules", limit=1, used=1)
    assert search_tool(client, "guides", headers=acme).status_code == 201
    refused(api_tool(client, "weather", headers=acme), "tools", limit=1, used=1)
    # the deployment's own tenant has none of acme's limits, nor its usage
    for module_id in ("dates", "report", "third"):
        assert create_module(client, module_id).status_code == 201
    assert api_tool(client, "weather").status_code == 201 and search_tool(client, "guides").status_code == 201
    # its own quota counts its own modules only, and leaves acme's as they were
    set_quotas(client, modules=3)
    refused(create_module(client, "fourth"), "modules", limit=3, used=3)
    set_quotas(client, "acme", modules=2)
    assert create_module(client, "report", headers=acme).status_code == 201
    assert ids(client, MODULES, acme) == ["dates", "report"]
    assert usage(client, "acme") == {"modules": 2, "tools": 1, "documents": 0, "storedBytes": 0}
    assert usage(client) == {"modules": 3, "tools": 2, "documents": 0, "storedBytes": 0}


# -- the console -------------------------------------------------------------------------------------


def _words(page: str) -> str:
    import html
    import re

    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_the_console_shows_a_quota_refusal_with_its_message(client: TestClient) -> None:
    assert create_module(client, "dates").status_code == 201
    assert search_tool(client, "guides").status_code == 201
    set_quotas(client, modules=1, tools=1, documents=0)
    admin = console(client, ADMIN_TOKEN)
    message = "the tenant's quota 'modules' is 1: 1 in use, and this would add 1"
    made = post(admin, "/console/modules", {"id": "report", "description": "d", "content": "exports.x = 1;"},
                page="/console/modules/new")
    # The form again, as typed, with the quota named (as the form answers an id that is taken).
    assert made.status_code == 200 and message in _words(made.text) and 'value="report"' in made.text
    copied = post(admin, "/console/modules/dates/duplicate", {"id": "copy"}, page="/console/modules/dates")
    assert copied.status_code == 409 and message in _words(copied.text)
    tools_message = "the tenant's quota 'tools' is 1: 1 in use, and this would add 1"
    search = post(admin, "/console/search-tools", tool_form("manuals"), page="/console/search-tools/new")
    assert search.status_code == 200 and tools_message in _words(search.text) and 'value="manuals"' in search.text
    somewhere = SimpleNamespace(url="https://api.example.com")
    weather = post(admin, "/console/api-tools", weather_form(somewhere, "weather"), page="/console/api-tools/new")  # type: ignore[arg-type]
    assert weather.status_code == 200 and tools_message in _words(weather.text) and 'value="weather"' in weather.text
    token = page_csrf(admin.get("/console/search-tools/guides").text)
    uploaded = admin.post("/console/search-tools/guides/documents", files=[("files", ("a.md", b"# A\n", "text/markdown"))],
                          data={"csrf_token": token}, headers={"Origin": "http://testserver"}, follow_redirects=False)
    assert uploaded.status_code == 409
    assert "Not uploaded: the tenant's quota 'documents' is 0: 0 in use, and this would add 1" in _words(uploaded.text)


# -- what no quota costs ------------------------------------------------------------------------------


class RecordingLock(GraphLock):
    def __init__(self) -> None:
        self.held: list[str] = []

    @contextlib.contextmanager
    def hold(self, tenant: str) -> Iterator[None]:
        self.held.append(tenant)
        yield


@pytest.fixture
def app() -> Iterator[tuple[ApplicationServices, RecordingLock]]:
    lock = RecordingLock()
    store = Store({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    yield build_application(store, sandbox=lambda: None, graph_lock=lock), lock  # type: ignore[arg-type, return-value]
    store.close()


def test_without_a_quota_a_create_takes_no_lock_and_counts_nothing(app: tuple[ApplicationServices, RecordingLock],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    services, lock = app
    counted: list[Any] = []
    monkeypatch.setattr(services.usage, "count", lambda *args: counted.append(args) or {})
    services.modules.create("default", "dates", description="d", content="exports.x = 1;", imports=[], tool=None, by="t")
    assert lock.held == [] and counted == []
    # with a modules quota, the same create holds the tenant's lock and counts the modules only
    monkeypatch.undo()
    services.tenants.update("default", {"quotas": {"modules": 5}}, by="operator")
    lock.held.clear()
    monkeypatch.setattr(services.usage, "count", lambda tenant, quotas: counted.append(sorted(quotas)) or {"modules": 1})
    services.modules.create("default", "report", description="d", content="exports.x = 1;", imports=[], tool=None, by="t")
    assert lock.held == ["default"] and counted == [["modules"]]
