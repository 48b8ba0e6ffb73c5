"""`toolsmith audit verify|export|import` as real processes on a real `toolsmith serve`'s data dir,
and the auditors' export over HTTP (docs/rules.md B5, docs/security.md, docs/cli.md)."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import orjson
import pytest

from domain.model import module_aggregate_id
from tests.e2e.conftest import TOOLSMITH, Server, printed_tokens
from tests.helpers import environment_without_settings, expect, free_port

BASE = "/api/v1/admin/code-modules"
EXPORT = "/api/v1/admin/audit/export"


def toolsmith(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """The command as an operator runs it, with only the settings the test gives."""
    return subprocess.run([str(TOOLSMITH), "audit", *args], capture_output=True, timeout=120,
                          env={**environment_without_settings(), **(env or {})})


@pytest.fixture
def history(server: Server) -> Server:
    """A server whose store holds a module with three versions and a published library."""
    with server.client() as http:
        for module_id in ("dates", "lib"):
            body = {"id": module_id, "description": f"The {module_id} module", "draftContent": "exports.run = function (i) { return i; };"}
            expect(http.post(BASE, json=body), 201)
        expect(http.put(f"{BASE}/dates", json={"description": "Dates, changed"}), 200)
        expect(http.post(f"{BASE}/dates/publish"), 200)
        expect(http.post(f"{BASE}/lib/publish"), 200)
    return server


def test_verify_exits_0_on_an_intact_store_with_progress_on_stderr_only(history: Server) -> None:
    done = toolsmith("verify", "--data-dir", str(history.data_dir))
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert out.startswith("intact: ") and "heads digest: " in out
    assert "verifying" in done.stderr.decode() and "verifying" not in out


def test_verify_exits_1_and_names_the_changed_version_in_one_line(history: Server) -> None:
    history.stop()
    with sqlite3.connect(history.data_dir / "events.sqlite") as db:
        key = (module_aggregate_id("default", "dates").hex, 1)
        (state,) = db.execute("SELECT state FROM stored_events WHERE originator_id = ? AND originator_version = ?", key).fetchone()
        db.execute("UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
                   (state.replace(b"The dates module", b"The dateS module"), *key))
    done = toolsmith("verify", "--data-dir", str(history.data_dir))
    assert done.returncode == 1, done.stderr
    first = done.stdout.decode().splitlines()[0]
    assert first.startswith("broken: module default/dates, version 1: ")
    assert "no longer matches its own hash" in first


def test_export_to_stdout_is_json_lines_and_imports_into_an_empty_data_dir(history: Server, tmp_path: Path) -> None:
    exported = toolsmith("export", "--data-dir", str(history.data_dir))
    assert exported.returncode == 0, exported.stderr
    lines = [orjson.loads(line) for line in exported.stdout.splitlines()]
    assert lines[0]["format"] == "toolsmith-audit-export"
    assert lines[-1] == {"end": True, "events": len(lines) - 2}
    assert "exporting" in exported.stderr.decode()
    # into a new data dir: restored, and it verifies as intact
    export_file = tmp_path / "export.ndjson"
    export_file.write_bytes(exported.stdout)
    restored = tmp_path / "restored"
    imported = toolsmith("import", str(export_file), "--data-dir", str(restored))
    assert imported.returncode == 0, imported.stderr
    assert toolsmith("verify", "--data-dir", str(restored)).returncode == 0
    again = toolsmith("export", "--data-dir", str(restored), "--output", str(tmp_path / "again.ndjson"))
    assert again.returncode == 0 and again.stdout == b""
    assert (tmp_path / "again.ndjson").read_bytes().splitlines()[1:] == exported.stdout.splitlines()[1:]
    # a second import into the now full store is refused
    refused = toolsmith("import", str(export_file), "--data-dir", str(restored))
    assert refused.returncode == 1 and b"not empty" in refused.stderr


def test_import_of_a_malformed_file_exits_1_naming_the_line(history: Server, tmp_path: Path) -> None:
    lines = toolsmith("export", "--data-dir", str(history.data_dir)).stdout.splitlines()
    spoiled = tmp_path / "spoiled.ndjson"
    spoiled.write_bytes(b"\n".join([*lines[:3], b'{"position": "x"}', *lines[4:]]) + b"\n")
    refused = toolsmith("import", str(spoiled), "--data-dir", str(tmp_path / "empty"))
    assert refused.returncode == 1
    assert b"line 4: " in refused.stderr


def test_bad_settings_exit_2_in_one_line_without_the_password(tmp_path: Path) -> None:
    missing = toolsmith("verify", "--data-dir", str(tmp_path / "nothing-here"))
    assert missing.returncode == 2 and b"no event store" in missing.stderr
    postgres = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": str(free_port()),
                "POSTGRES_USER": "nobody", "POSTGRES_PASSWORD": "sekrit-do-not-print", "POSTGRES_DBNAME": "nothing",
                "POSTGRES_CONNECT_TIMEOUT": "2"}
    for action in (["verify"], ["export"], ["import", str(tmp_path / "none.ndjson")]):
        done = toolsmith(*action, env=postgres)
        assert done.returncode == 2, (action, done.stderr)
        said = done.stderr.decode()
        assert len(said.strip().splitlines()) == 1 and "cannot open the event store" in said
        assert "sekrit-do-not-print" not in said + done.stdout.decode()


def test_auditors_get_the_same_lines_over_http_and_callers_are_forbidden(history: Server) -> None:
    with history.client() as http:
        auditor = expect(http.post("/api/v1/admin/tokens", json={"name": "auditor", "role": "auditor"}), 201).json()["token"]
        caller = expect(http.post("/api/v1/admin/tokens", json={"name": "a caller", "role": "caller"}), 201).json()["token"]
    with history.client(auditor) as http:
        answer = http.get(EXPORT)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    cli = toolsmith("export", "--tenant", "default", "--data-dir", str(history.data_dir))
    assert cli.returncode == 0
    over_http, by_cli = answer.content.splitlines(), cli.stdout.splitlines()
    assert over_http[1:] == by_cli[1:]
    assert orjson.loads(over_http[0])["scope"] == {"tenant": "default"}
    assert len(over_http) > 2
    with history.client(caller) as http:
        assert http.get(EXPORT).status_code == 403


def test_an_imported_data_dir_answers_every_history_and_version_query_as_the_original(history: Server, tmp_path: Path) -> None:
    with history.client() as http:
        # more history: a second version, a revert to the first, a discard, a delete and a new life
        expect(http.put(f"{BASE}/dates", json={"description": "Dates, second"}), 200)
        expect(http.post(f"{BASE}/dates/publish"), 200)
        expect(http.post(f"{BASE}/dates/revert", json={"version": 1}), 200)
        expect(http.post(f"{BASE}/dates/publish"), 200)
        expect(http.put(f"{BASE}/lib", json={"description": "a draft"}), 200)
        expect(http.delete(f"{BASE}/lib/draft"), 200)
        expect(http.post(BASE, json={"id": "gone", "description": "d", "draftContent": ""}), 201)
        expect(http.delete(f"{BASE}/gone"), 204)
        expect(http.post(BASE, json={"id": "gone", "description": "again", "draftContent": ""}), 201)
    export_file = tmp_path / "export.ndjson"
    assert toolsmith("export", "--data-dir", str(history.data_dir), "--output", str(export_file)).returncode == 0
    restored_dir = tmp_path / "restored"
    assert toolsmith("import", str(export_file), "--data-dir", str(restored_dir)).returncode == 0

    restored = Server(data_dir=restored_dir).start()
    try:
        restored.token = printed_tokens(restored.output)[0]
        with history.client() as before, restored.client() as after:
            queries = [BASE]
            for module_id in ("dates", "lib", "gone"):
                queries += [f"{BASE}/{module_id}", f"{BASE}/{module_id}/history", f"{BASE}/{module_id}/versions"]
                events = before.get(f"{BASE}/{module_id}/history").json()["events"]
                queries += [f"{BASE}/{module_id}?asOf={event['at']}" for event in events]
                queries += [f"{BASE}/{module_id}/versions/{v['version']}" for v in before.get(f"{BASE}/{module_id}/versions").json()]
            for query in queries:
                original, imported = before.get(query), after.get(query)
                assert (imported.status_code, imported.json()) == (original.status_code, original.json()), query
                assert imported.headers.get("ETag") == original.headers.get("ETag"), query
    finally:
        restored.stop()


def test_verify_exits_1_when_a_snapshot_no_longer_matches_its_events(tmp_path: Path) -> None:
    from application.store import Store
    from domain.model import graph_aggregate_id
    from infrastructure.settings import Settings

    # a store as `serve` writes it, its import graph snapshotted at version 3
    env = Settings(data_dir=tmp_path / "data").event_store_env()
    Path(env["SQLITE_DBNAME"]).parent.mkdir(parents=True)
    app = Store(env)
    graph = app.graph("default", for_update=True)
    graph.link("dates", published=["lib"], draft=None)
    graph.link("lib", published=[], draft=None)
    app.save(graph)
    app.take_snapshot(graph_aggregate_id("default"))
    app.close()
    intact = toolsmith("verify", "--data-dir", str(tmp_path / "data"))
    assert intact.returncode == 0, intact.stderr
    assert intact.stdout.decode().startswith("intact: 3 events of 1 aggregates checked through position 3, and 1 snapshot(s) against their events")

    with sqlite3.connect(env["SQLITE_DBNAME"]) as db:
        (state,) = db.execute("SELECT state FROM stored_snapshots").fetchone()
        db.execute("UPDATE stored_snapshots SET state = ?", (state.replace(b'"published":["lib"]', b'"published":["lix"]'),))
    done = toolsmith("verify", "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.decode().splitlines()
    assert lines[0] == "broken: snapshot at version 3 of import graph of tenant default does not match its events"
    assert lines[1].startswith("  1 broken link(s) in all; 3 events")
