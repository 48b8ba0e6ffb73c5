"""`toolsmith audit` covers the call log (docs/calls.md, docs/cli.md): verify checks every tenant's chain of
call records and names a changed one; the export carries the records and an import restores them, so the
restored data dir verifies with the same calls digest. Real processes on a real `toolsmith serve`'s data dir."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson

from tests.e2e.conftest import Server
from tests.e2e.test_audit_cli import toolsmith
from tests.helpers import expect

BASE = "/api/v1/admin/code-modules"


def digest_of(out: str, label: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(label)).split(": ", 1)[1]


def test_verify_export_and_import_carry_the_call_log(server: Server, tmp_path: Path) -> None:
    with server.client() as http:
        body = {"id": "echo", "description": "echoes", "draftContent": "exports.run = function (i) { return i; };",
                "tool": {"inputParameters": [{"name": "text", "type": "string"}], "exposeInChat": True}}
        expect(http.post(BASE, json=body), 201)
        expect(http.post(f"{BASE}/echo/publish"), 200)
        for text in ("a", "b", "c"):
            expect(http.post("/api/v1/tools/echo/call", json={"text": text}), 200)
        expect(http.post("/api/v1/tools/nothing/call", json={}), 404)
        calls = expect(http.get("/api/v1/admin/calls"), 200).json()
        assert len(calls) == 4
    server.stop()  # the writer writes what is queued as the service stops

    done = toolsmith("verify", "--data-dir", str(server.data_dir))
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "calls intact: 4 call records of 1 tenant(s) checked" in out
    digest = digest_of(out, "calls digest")

    exported = toolsmith("export", "--data-dir", str(server.data_dir))
    assert exported.returncode == 0, exported.stderr
    lines = [orjson.loads(line) for line in exported.stdout.splitlines()]
    call_lines = [line["call"] for line in lines if "call" in line]
    assert [c["n"] for c in call_lines] == [1, 2, 3, 4] and lines[-1]["calls"] == 4
    assert all("text" not in str(c) or c["tool"] for c in call_lines)
    export_file = tmp_path / "export.ndjson"
    export_file.write_bytes(exported.stdout)
    restored = tmp_path / "restored"
    imported = toolsmith("import", str(export_file), "--data-dir", str(restored))
    assert imported.returncode == 0, imported.stderr
    again = toolsmith("verify", "--data-dir", str(restored))
    assert again.returncode == 0, again.stdout
    assert digest_of(again.stdout.decode(), "calls digest") == digest

    # one changed byte of one record: verify exits 1 and names that record
    changed = call_lines[1]["id"]
    with sqlite3.connect(server.data_dir / "calls.sqlite") as db:
        db.execute("UPDATE call_records SET record = replace(record, '\"via\":\"rest\"', '\"via\":\"resT\"') WHERE id = ?", (changed,))
    broken = toolsmith("verify", "--data-dir", str(server.data_dir))
    assert broken.returncode == 1
    first = next(line for line in broken.stdout.decode().splitlines() if line.startswith("calls broken: "))
    assert f"call record {changed} (tenant 'default', #2): its content does not match its hash" in first
