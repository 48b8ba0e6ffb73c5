"""Upgrade (issue 19's acceptance): a store written by the single-tenant release starts under this
version with every module, token and history intact.

The store is the data dir that release (commit 5ccd007) left behind, made with its own code by
tests/fixtures/make_single_tenant_store.py: the SQLite event store with the snapshots that release
took and its table of encrypted secrets, the secret key, the console's session key, and a File
Search tool's blob and chunk index (`single-tenant-store.tar.gz`); beside it, that release's audit
export of the store and what a person knows about it (`single-tenant-store.json`: the tokens it
issued, the secret's value, its `audit verify` report, and its answers to a list of GET requests).

Each test unpacks the data dir afresh and starts today's app on it with the release's settings:
`TOOLSMITH_ADMIN_TOKEN` and nothing about tenants. The PostgreSQL leg restores the release's export
into a fresh schema (`toolsmith audit import`, as an operator moving the store would), with the
secret's row as the release encrypted it and the release's key as `TOOLSMITH_SECRET_KEY`, and asks
the same questions; the document's blob and chunks and the release's snapshots, which no export
carries, are the SQLite leg's alone.

Needs PostgreSQL for its PostgreSQL leg (see tests/engines.py) and the embedded QuickJS sandbox.
"""

from __future__ import annotations

import io
import json
import sqlite3
import tarfile
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from application.store import Store
from domain.callers import TOKENS_ID
from entrypoints.web import create_app
from infrastructure import audit
from infrastructure.secret_vault import rows_of
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import expect, sign_in_console
from tests.upstream import Upstream, running

FIXTURES = Path(__file__).parents[1] / "fixtures"
DATA_DIR = FIXTURES / "single-tenant-store.tar.gz"
EXPORT = FIXTURES / "single-tenant-store.events.jsonl"
KNOWN: dict[str, Any] = json.loads((FIXTURES / "single-tenant-store.json").read_text())

ADMIN_TOKEN = KNOWN["adminToken"]
TOKENS = KNOWN["tokens"]
OLD_EVENTS = KNOWN["audit"]["events"]
TOKEN_REGISTRY = str(TOKENS_ID).encode()
MODULES = "/api/v1/admin/code-modules"
ADMIN = "/api/v1/admin"
# MCP accepts a local client's Host (TOOLSMITH_MCP_ALLOWED_HOSTS); the test client's "testserver" is not one.
BASE_URL = "http://127.0.0.1:8000"


# -- the store, as the release left it ------------------------------------------------------------

def unpacked(data_dir: Path) -> Path:
    """The release's data dir, file for file, at `data_dir` (0700, as the release made it)."""
    data_dir.mkdir(mode=0o700, parents=True)
    with tarfile.open(DATA_DIR) as tar:
        tar.extractall(data_dir, filter="data")
    for path in data_dir.rglob("*"):
        path.chmod(0o700 if path.is_dir() else 0o600)
    return data_dir


def export_events(lines: bytes) -> list[bytes]:
    return [line for line in lines.splitlines() if line.startswith(b'{"position":')]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return unpacked(tmp_path / "data")


@pytest.fixture(params=["sqlite", "postgres"])
def engine_settings(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The release's store on each engine, with the release's settings."""
    release = unpacked(tmp_path / "data")
    if request.param == "sqlite":
        return Settings(data_dir=release, admin_token=ADMIN_TOKEN)
    store: dict[str, str] = request.getfixturevalue("postgres_store")
    for name, value in store.items():
        monkeypatch.setenv(name, value)
    # Replicas of a PostgreSQL store share TOOLSMITH_SECRET_KEY: the key the release generated.
    settings = Settings(data_dir=tmp_path / "replica", admin_token=ADMIN_TOKEN, persistence_module="eventsourcing.postgres",
                        secret_key=(release / "secret.key").read_text().strip())
    app = Store(settings.event_store_env())
    try:
        assert audit.import_events(app, io.BytesIO(EXPORT.read_bytes())) == OLD_EVENTS
        # the secret's ciphertext, as the release encrypted it, moves with the table beside the events
        rows = rows_of(app)
        with closing(sqlite3.connect(release / "events.sqlite")) as db:
            for tenant, secret_id, fingerprint, ciphertext in db.execute(
                    "SELECT tenant, id, fingerprint, ciphertext FROM toolsmith_secrets"):
                rows.put(tenant, secret_id, (fingerprint, ciphertext), None)
    finally:
        app.close()
    return settings


@contextmanager
def started(settings: Settings, shared_sandbox: Any, token: str = ADMIN_TOKEN) -> Iterator[TestClient]:
    """Today's whole app (lifespan included) on the store, as `toolsmith serve` starts it."""
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=BASE_URL,
                    headers={"Authorization": f"Bearer {token}"}) as client:
        yield client


def as_(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def call(client: TestClient, tool: str, arguments: dict[str, Any], token: str = ADMIN_TOKEN, status: int = 200) -> Any:
    return expect(client.post(f"/api/v1/tools/{tool}/call", json=arguments, headers=as_(token)), status).json()


MCP_VERSION = "2025-11-25"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def mcp(client: TestClient, path: str, token: str, method: str, params: dict[str, Any]) -> Any:
    """One request of a fresh MCP session (initialize, initialized, the request)."""
    auth = {**MCP_HEADERS, **as_(token)}
    opened = client.post(path, headers=auth, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": MCP_VERSION, "capabilities": {}, "clientInfo": {"name": "upgrade-test", "version": "1"}}})
    assert opened.status_code == 200, opened.text
    session = {**auth, "Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": MCP_VERSION}
    expect(client.post(path, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}), 202)
    answer = expect(client.post(path, headers=session, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}), 200)
    return _json_rpc_result(answer)


def _json_rpc_result(answer: Any) -> Any:
    if answer.headers["content-type"].startswith("text/event-stream"):
        data = [line[len("data:"):] for line in answer.text.splitlines() if line.startswith("data:")]
        message = json.loads(data[-1])
    else:
        message = answer.json()
    assert "error" not in message, message
    return message["result"]


# Fields the release documented but always answered null for (a module's published card never
# carried its changeset and message, though /versions did): today's answer fills them in.
FILLED_IN = (".published.changeset", ".published.message")


def still_holds(new: Any, old: Any, where: str = "") -> list[str]:
    """How `new` fails to say everything `old` said: every key `old` had, with the same value
    (today's answers may add fields, never drop or change one); lists item by item."""
    if old is None and where.endswith(FILLED_IN):
        return []
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [f"{where or '.'}: {new!r} is not an object"]
        return [d for key, value in old.items()
                for d in (still_holds(new[key], value, f"{where}.{key}") if key in new else [f"{where}.{key}: missing"])]
    if isinstance(old, list):
        if not isinstance(new, list) or len(new) != len(old):
            return [f"{where}: {json.dumps(new)[:300]} instead of {json.dumps(old)[:300]}"]
        return [d for i, (n, o) in enumerate(zip(new, old)) for d in still_holds(n, o, f"{where}[{i}]")]
    return [] if new == old else [f"{where}: {new!r} instead of {old!r}"]


# -- on both engines ------------------------------------------------------------------------------

def test_the_store_starts_with_every_module_version_and_draft(engine_settings: Settings, shared_sandbox: Any) -> None:
    with started(engine_settings, shared_sandbox) as client:
        # starting wrote nothing: the tenant `default` exists without an event
        assert expect(client.get("/healthz"), 200).json()["eventStore"]["position"] == OLD_EVENTS
        listed = expect(client.get(f"{MODULES}?limit=100"), 200).json()["collection"]
        assert {m["id"]: (m["state"], m["publishedVersion"]) for m in listed} == {
            module: (known["state"], known["published"]) for module, known in KNOWN["modules"].items()}
        for module, known in KNOWN["modules"].items():
            versions = expect(client.get(f"{MODULES}/{module}/versions"), 200).json()
            assert [v["version"] for v in versions] == known["versions"], module
            assert (expect(client.get(f"{MODULES}/{module}"), 200).json()["draft"] is not None) == known["draft"], module
        # the deleted module stays deleted; its history stays
        expect(client.get(f"{MODULES}/scratch"), 404)
        assert [e["type"] for e in expect(client.get(f"{MODULES}/scratch/history"), 200).json()["events"]][-1] == "Deleted"


def test_every_answer_of_the_release_is_still_given(engine_settings: Settings, shared_sandbox: Any) -> None:
    """The release's answers to every GET of the list (modules, history, versions, `asOf`, changesets,
    callers, tokens, secrets, API URL and File Search tools, the catalog): today's say the same,
    and may say more."""
    with started(engine_settings, shared_sandbox) as client:
        differences = []
        for asked in KNOWN["answers"]:
            answer = client.get(asked["path"])
            if answer.status_code != asked["status"]:
                differences.append(f"{asked['path']}: {answer.status_code} instead of {asked['status']}: {answer.text[:300]}")
                continue
            body = answer.json() if answer.content else None
            differences += [f"{asked['path']} {d}" for d in still_holds(body, asked["body"])]
        assert differences == []
        # The filled-in fields say what /versions says of the published version.
        for module in KNOWN["modules"]:
            got = expect(client.get(f"{MODULES}/{module}"), 200).json()
            if got["published"] is not None:
                version = expect(client.get(f"{MODULES}/{module}/versions/{got['published']['version']}"), 200).json()
                assert (got["published"]["changeset"], got["published"]["message"]) == (version["changeset"], version["message"]), module


def test_history_changesets_and_messages_read_as_they_were_written(engine_settings: Settings, shared_sandbox: Any) -> None:
    changeset = KNOWN["changeset"]
    with started(engine_settings, shared_sandbox) as client:
        # the changeset, with its message and each module's version
        [listed] = expect(client.get(f"{ADMIN}/changesets"), 200).json()
        assert (listed["id"], listed["message"]) == (changeset["id"], "frame the greeting")
        assert {m["id"]: m["version"] for m in listed["modules"]} == changeset["modules"] == {"textkit": 3, "greet": 2}
        greet = expect(client.get(f"{MODULES}/greet/versions"), 200).json()
        assert [(v["version"], v["changeset"], v["message"]) for v in greet] == [
            (1, None, "first greeting"), (2, changeset["id"], "frame the greeting")]
        # a single publish's message, and a revert published with one
        textkit = expect(client.get(f"{MODULES}/textkit/versions"), 200).json()
        assert [v["message"] for v in textkit] == [None, "shout with an exclamation mark; whisper", "frame the greeting"]
        counter = expect(client.get(f"{MODULES}/counter/history"), 200).json()["events"]
        assert [e["type"] for e in counter] == ["Created", "Published", "DraftChanged", "Published", "Reverted", "Published"]
        assert counter[-1]["data"]["message"] == "back to one"
        one, three = (expect(client.get(f"{MODULES}/counter/versions/{n}"), 200).json() for n in (1, 3))
        assert one["content"] == three["content"] == "exports.run = function () { return 1; };"
        # one module through two lives
        phoenix = [e["type"] for e in expect(client.get(f"{MODULES}/phoenix/history"), 200).json()["events"]]
        assert phoenix == ["Created", "Deleted", "Recreated", "Published"]


def test_time_travel_shows_each_module_as_it_stood(engine_settings: Settings, shared_sandbox: Any) -> None:
    at = KNOWN["asOf"]
    with started(engine_settings, shared_sandbox) as client:
        def as_of(module: str, instant: str) -> dict[str, Any]:
            return expect(client.get(f"{MODULES}/{module}", params={"asOf": instant}), 200).json()

        assert as_of("textkit", at["textkit-v1"])["published"]["content"] == "exports.shout = function (s) { return s.toUpperCase(); };"
        assert as_of("textkit", at["textkit-v2"])["published"]["version"] == 2
        assert as_of("greet", at["before-changeset"])["published"]["tool"]["examples"][0]["output"] == "HELLO ADA!"
        assert as_of("greet", at["after-changeset"])["published"]["tool"]["examples"][0]["output"] == "** HELLO ADA! **"
        # the deleted module, while it lived; and before anything existed
        assert as_of("scratch", at["scratch-alive"])["state"] == "PUBLISHED"
        expect(client.get(f"{MODULES}/textkit", params={"asOf": "2000-01-01T00:00:00Z"}), 404)


def test_each_issued_token_still_works_with_its_role(engine_settings: Settings, shared_sandbox: Any) -> None:
    ops, books, kiosk, old_kiosk = (TOKENS[name]["secret"] for name in ("ops", "books", "kiosk", "old-kiosk"))
    with started(engine_settings, shared_sandbox) as client:
        # the issued tokens are listed as they were; the revoked one is not
        assert [(t["name"], t["role"], t["usageProfile"]) for t in expect(client.get(f"{ADMIN}/tokens"), 200).json()] == [
            ("ops", "admin", None), ("books", "auditor", None), ("kiosk", "caller", "visitors")]
        # the admin it issued reads and writes
        expect(client.get(f"{ADMIN}/tokens", headers=as_(ops)), 200)
        assert call(client, "greet", {"name": "ops"}, ops)["output"] == "** HELLO OPS! **"
        # the auditor reads, exports and writes nothing
        expect(client.get(f"{MODULES}/greet/history", headers=as_(books)), 200)
        exported = expect(client.get(f"{ADMIN}/audit/export", headers=as_(books)), 200).content
        # the tenant's events, as the release stored them; the store-wide token registry is no tenant's
        assert export_events(exported) == [line for line in export_events(EXPORT.read_bytes()) if TOKEN_REGISTRY not in line]
        expect(client.post(MODULES, json={"id": "auditors_module", "draftContent": "exports.x = 1;"}, headers=as_(books)), 403)
        # the caller calls what its profile allows, a plan through its nodes included, and nothing else
        assert call(client, "greet", {"name": "kiosk"}, kiosk)["output"] == "** HELLO KIOSK! **"
        assert call(client, "welcome", {"name": "  kiosk "}, kiosk)["output"] == "** HELLO KIOSK! **"
        assert call(client, "murmur", {"name": "Kiosk"}, kiosk)["output"] == "hello kiosk"  # by its tag
        call(client, "weather", {"city": "Oslo"}, kiosk, status=404)
        call(client, "counter", {}, kiosk, status=404)
        # the switched-off tool stays off, for everyone
        call(client, "farewell", {"name": "ops"}, ops, status=404)
        # the revoked token stays revoked
        expect(client.get(MODULES, headers=as_(old_kiosk)), 401)
        expect(client.post("/api/v1/tools/greet/call", json={"name": "x"}, headers=as_(old_kiosk)), 401)


def test_the_code_runs_in_the_tenant_default(engine_settings: Settings, shared_sandbox: Any) -> None:
    with started(engine_settings, shared_sandbox) as client:
        admin = call(client, "whoami", {})["output"]
        assert (admin["tenant"], admin["user"]["id"]) == ("default", "admin")
        kiosk = call(client, "whoami", {}, TOKENS["kiosk"]["secret"])["output"]
        assert (kiosk["tenant"], kiosk["user"]["id"]) == ("default", "kiosk")


def test_the_audit_finds_the_releases_events_unchanged_and_a_new_publish_joins_them(engine_settings: Settings,
                                                                                    shared_sandbox: Any) -> None:
    old_lines = export_events(EXPORT.read_bytes())
    on_sqlite = engine_settings.persistence_module == "eventsourcing.sqlite"
    with started(engine_settings, shared_sandbox) as client:
        store: Store = client.app.state.services.store  # type: ignore[attr-defined]
        report = audit.verify(store)
        assert report.intact, report.first_broken
        # the same events, aggregates and heads digest as the release's `toolsmith audit verify`
        assert (report.events, report.heads_digest) == (OLD_EVENTS, KNOWN["audit"]["headsDigest"])
        assert report.snapshots == (KNOWN["tables"]["stored_snapshots"] if on_sqlite else 0)
        before = io.BytesIO()
        audit.export(store, before)
        assert export_events(before.getvalue()) == old_lines

        # publish the library's pending draft (the release left it unpublished): greet's example
        # runs against it, as every publish's does
        published = expect(client.post(f"{MODULES}/textkit/publish", json={"message": "after the upgrade"}), 200).json()
        assert published["published"]["version"] == 4
        # and a changed importer on top of it
        expect(client.put(f"{MODULES}/murmur", json={"description": "Greets quietly, upgraded"}), 200)
        expect(client.post(f"{MODULES}/murmur/publish"), 200)
        assert call(client, "murmur", {"name": "Ada"})["output"] == "hello ada"
        assert [v["version"] for v in expect(client.get(f"{MODULES}/textkit/versions"), 200).json()] == [1, 2, 3, 4]
        assert expect(client.get(f"{MODULES}/textkit/versions/4"), 200).json()["message"] == "after the upgrade"

        after = audit.verify(store)
        assert after.intact, after.first_broken
        assert after.events > OLD_EVENTS and after.heads_digest != KNOWN["audit"]["headsDigest"]
        exported = io.BytesIO()
        audit.export(store, exported)
        # the release's events stay as they were stored, the new ones after them
        assert export_events(exported.getvalue())[:OLD_EVENTS] == old_lines


def test_plans_agents_servers_and_profiles_still_serve(engine_settings: Settings, shared_sandbox: Any) -> None:
    kiosk = TOKENS["kiosk"]["secret"]
    with started(engine_settings, shared_sandbox) as client:
        ran = expect(client.post(f"{ADMIN}/plans/welcome/run", json={"input": {"name": " ada "}}), 200).json()
        assert (ran["error"], ran["output"]) == (None, "** HELLO ADA! **")
        agent = expect(client.get(f"{ADMIN}/agents/concierge"), 200).json()
        assert {"greet", "weather"} <= {t if isinstance(t, str) else t["name"] for t in agent["tools"]}
        server = expect(client.get(f"{ADMIN}/mcp-servers/front-desk"), 200).json()
        assert server["tools"] == ["greet", "whoami", "weather", "handbook"]
        # the caller's MCP session on the server lists what its profile allows there, and calls it
        listed = mcp(client, "/mcp/front-desk", kiosk, "tools/list", {})["tools"]
        assert {"greet", "whoami", "handbook_search"} <= {t["name"] for t in listed}
        assert not {"weather", "farewell"} & {t["name"] for t in listed}
        called = mcp(client, "/mcp/front-desk", kiosk, "tools/call", {"name": "whoami", "arguments": {}})
        assert not called.get("isError") and '"tenant": "default"' in json.dumps(called)


def test_the_secret_still_decrypts_and_reaches_the_api(engine_settings: Settings, shared_sandbox: Any) -> None:
    secret = KNOWN["secret"]
    with contextmanager(running)() as upstream, started(engine_settings.model_copy(update={"egress_allow": upstream.allow}),
                                        shared_sandbox) as client:
        # the release's fingerprint, from the key file it generated
        fingerprint = next(a["body"]["fingerprint"] for a in KNOWN["answers"] if a["path"] == f"{ADMIN}/secrets/weatherKey")
        assert expect(client.get(f"{ADMIN}/secrets/{secret['id']}"), 200).json()["fingerprint"] == fingerprint
        # point the weather tool at a local API (its auth untouched): the rotated value is what it receives
        expect(client.put(f"{ADMIN}/api-tools/weather", json=weather_at(client, upstream)), 200)
        answered = call(client, "weather", {"city": "Oslo"})
        assert answered["error"] is None
        assert upstream.last("/echo").headers["x-api-key"] == secret["value"]
        assert secret["value"] not in json.dumps(answered)  # and it is never answered back


def weather_at(client: TestClient, upstream: Upstream) -> dict[str, Any]:
    tool = expect(client.get(f"{ADMIN}/api-tools/weather"), 200).json()
    kept = {key: tool[key] for key in ("id", "description", "tags", "exposeInChat", "enabled", "method", "parameters",
                                       "fixedQuery", "fixedBody", "headers", "auth", "timeoutMillis", "connectTimeoutMillis", "maxRedirects")}
    return {**kept, "urlTemplate": upstream.url + "/echo/{city}{?units}", "response": {"jmespath": "path"}}


# -- what lives beside the events: the SQLite data dir as the release left it ----------------------

def test_the_handbook_is_still_searched(data_dir: Path, shared_sandbox: Any) -> None:
    document = KNOWN["document"]
    with started(Settings(data_dir=data_dir, admin_token=ADMIN_TOKEN), shared_sandbox) as client:
        found = call(client, "handbook_search", {"query": "parental leave"})["output"]["results"]
        assert [hit["documentId"] for hit in found] == [document["id"]]
        matches = call(client, "handbook_find_text", {"text": "seventeen gulls"})["output"]
        assert document["id"] in json.dumps(matches)
        fetched = call(client, "handbook_fetch", {"id": document["id"]})["output"]
        assert "sixteen weeks of parental leave" in json.dumps(fetched)
        # the caller whose profile names the search capability searches too
        assert call(client, "handbook_search", {"query": "annual leave"}, TOKENS["kiosk"]["secret"])["output"]["results"]


def test_the_console_signs_in_with_the_releases_tokens(data_dir: Path, shared_sandbox: Any) -> None:
    with started(Settings(data_dir=data_dir, admin_token=ADMIN_TOKEN), shared_sandbox) as client:
        for token in (ADMIN_TOKEN, TOKENS["ops"]["secret"]):
            browser = TestClient(client.app, base_url=BASE_URL)  # no second lifespan: the app is running
            sign_in_console(browser, token)
            assert "greet" in expect(browser.get("/console/modules"), 200).text


def test_the_operator_finds_the_single_tenant_as_default(data_dir: Path, shared_sandbox: Any) -> None:
    operator = "upgrade-test-operator-token"
    settings = Settings(data_dir=data_dir, admin_token=ADMIN_TOKEN, operator_token=operator)
    with started(settings, shared_sandbox) as client:
        tenants = expect(client.get("/api/v1/operator/tenants", headers=as_(operator)), 200).json()
        assert [t["id"] for t in tenants] == ["default"]
        default = expect(client.get("/api/v1/operator/tenants/default", headers=as_(operator)), 200).json()
        assert default["suspended"] is False
        # the release's admin token is the tenant's, not the operator's
        expect(client.get("/api/v1/operator/tenants", headers=as_(ADMIN_TOKEN)), 403)


def test_a_start_without_an_operator_token_generates_one_and_serves_as_before(data_dir: Path, shared_sandbox: Any) -> None:
    with started(Settings(data_dir=data_dir, admin_token=ADMIN_TOKEN), shared_sandbox) as client:
        services = client.app.state.services  # type: ignore[attr-defined]
        assert services.new_operator_token  # printed once by `toolsmith serve`
        expect(client.get("/api/v1/operator/tenants", headers=as_(services.new_operator_token)), 200)
        assert call(client, "greet", {"name": "ada"})["output"] == "** HELLO ADA! **"
