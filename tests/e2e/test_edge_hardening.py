"""Issue 12 against a real `toolsmith serve`: no query string in any log line, the data dir's
modes, HEAD through uvicorn, and a refused deep body that keeps the connection."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import httpx

from tests.e2e.conftest import TOOLSMITH, Server
from tests.helpers import environment_without_settings

BASE = "/api/v1/admin/code-modules"
LEAKED = "tsa_query-string-secret-0123456789"


def test_no_log_line_holds_a_query_string(server: Server) -> None:
    # refused (no header, the token only in the query), accepted, bad input and HEAD: each is logged
    assert httpx.get(f"{server.url}{BASE}?access_token={LEAKED}").status_code == 401
    with server.client() as http:
        assert http.get(BASE, params={"search": LEAKED}).status_code == 200
        assert http.get(f"{BASE}?access_token={LEAKED}%00").status_code == 400
        assert http.head(f"{BASE}/nothing?token={LEAKED}").status_code == 404
        assert http.post(f"/api/v1/tools/none/call?key={LEAKED}", json={}).status_code == 404
    server.stop()
    output = server.output
    access = [json.loads(line)["message"] for line in output.splitlines() if '"uvicorn.access"' in line]
    assert any(f'"GET {BASE} HTTP/1.1" 401' in line for line in access), access
    assert any(f'"HEAD {BASE}/nothing HTTP/1.1" 404' in line for line in access), access
    assert LEAKED not in output and "access_token" not in output and "query-string-secret" not in output


def test_the_data_dir_is_0700_and_every_file_in_it_0600(server: Server) -> None:
    with server.client() as http:
        body = {"id": "perm", "description": "d", "draftContent": "exports.run = () => 1;", "tool": {}}
        assert http.post(BASE, json=body).status_code == 201
        assert http.post(f"{BASE}/perm/publish").status_code == 200
        files = sorted(p.name for p in server.data_dir.iterdir())
        # while it runs: the store, its WAL files and the admin token's hash
        assert {"events.sqlite", "admin-token.sha256"} <= set(files) and any(f.endswith("-wal") for f in files), files
        assert stat.S_IMODE(server.data_dir.stat().st_mode) == 0o700
        for path in server.data_dir.rglob("*"):
            assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path


def test_audit_import_creates_a_data_dir_of_the_same_modes(server: Server, tmp_path: Path) -> None:
    with server.client() as http:
        assert http.post(BASE, json={"id": "moved", "description": "d", "draftContent": ""}).status_code == 201
    server.stop()
    env = environment_without_settings()
    exported = subprocess.run([str(TOOLSMITH), "audit", "export", "--data-dir", str(server.data_dir)],
                              capture_output=True, env=env, check=True).stdout
    restored = tmp_path / "restored"
    subprocess.run([str(TOOLSMITH), "audit", "import", "--data-dir", str(restored), "-"], input=exported,
                   capture_output=True, env=env, check=True)
    assert stat.S_IMODE(restored.stat().st_mode) == 0o700
    assert [stat.S_IMODE(p.stat().st_mode) for p in restored.iterdir()] == [0o600] * len(list(restored.iterdir()))


def test_head_and_a_refused_deep_body_over_a_real_connection(server: Server) -> None:
    with server.client() as http:
        got, head = http.get(BASE), http.head(BASE)
        assert head.status_code == got.status_code == 200 and head.content == b""
        assert head.headers["content-length"] == got.headers["content-length"]
        deep = '{"id": "d", "description": "d", "draftContent": "", "tool": {"inputParameters": [{"name": "p", "default": ' \
            + "[" * 500 + "]" * 500 + "}]}}"
        for _ in range(3):
            refused = http.post(BASE, content=deep, headers={"Content-Type": "application/json"})
            assert refused.status_code == 400 and refused.json()["code"] == "body-too-deep"
            # a 400 keeps the connection (a 500 closed it)
            assert refused.headers.get("connection") != "close"
        assert http.get(BASE).status_code == 200
    assert json.loads(httpx.get(f"{server.url}/healthz").text)["status"] in ("ok", "degraded")
