"""Concurrent publishes over HTTP can never close an import cycle (R5, R10)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from threading import Barrier

import pytest

from tests.e2e.conftest import Server, printed_tokens
from tests.helpers import expect

BASE = "/api/v1/admin/code-modules"
RACES = 50


def test_two_drafts_importing_each_other_never_both_publish(server: Server) -> None:
    with server.client() as http, ThreadPoolExecutor(max_workers=2) as pool:
        for race in range(RACES):
            a, b = f"a{race}", f"b{race}"
            # two published modules, each with a draft that imports the other
            for name in (a, b):
                assert http.post(BASE, json={"id": name, "description": name, "draftContent": f"exports.{name} = 1;"}).status_code == 201
                assert http.post(f"{BASE}/{name}/publish").status_code == 200
            assert http.put(f"{BASE}/{a}", json={"draftImports": [b]}).status_code == 200
            assert http.put(f"{BASE}/{b}", json={"draftImports": [a]}).status_code == 200

            # publish both at the same moment
            barrier = Barrier(2)

            def publish(name: str) -> int:
                with server.client() as own:
                    barrier.wait()
                    return own.post(f"{BASE}/{name}/publish").status_code

            statuses = sorted(pool.map(publish, (a, b)))
            assert statuses == [200, 422], f"race {race}: {statuses}"
            published_imports = {name: http.get(f"{BASE}/{name}").json()["published"]["imports"] for name in (a, b)}
            assert [] in published_imports.values(), f"race {race}: both published their import: {published_imports}"


CLIENTS_AT_ONCE = 48


@pytest.fixture
def wide_server(tmp_path: Path) -> Iterator[Server]:
    """A server whose sandbox takes every one of the clients' calls at once: a tenant's calls
    beyond its share of sessions are refused at once with 429, by design (docs/tenants.md), and
    this test is about creating and publishing at once, not about that share."""
    env = {"CODESANDBOX_MAX_ACTIVE_SESSIONS": str(2 * CLIENTS_AT_ONCE), "TOOLSMITH_TENANT_MAX_SESSIONS": str(CLIENTS_AT_ONCE)}
    running = Server(data_dir=tmp_path / "data", env=env).start()
    running.token = printed_tokens(running.output)[0]
    yield running
    running.stop()


def test_many_clients_creating_and_publishing_at_once_all_succeed(wide_server: Server) -> None:
    server = wide_server
    # one shared library; 96 clients at once each create a module (half of them importing it), publish and call it
    with server.client() as http:
        expect(http.post(BASE, json={"id": "shared", "description": "shared", "draftContent": "exports.one = 1;"}), 201)
        assert http.post(f"{BASE}/shared/publish").status_code == 200

    def client_session(i: int) -> list[int]:
        imports = ["shared"] if i % 2 else []
        source = "exports.run = (i) => " + ("shared.one + i.n;" if imports else "i.n;")
        with server.client() as own:
            return [
                own.post(BASE, json={"id": f"c{i}", "description": f"client {i}", "draftContent": source, "draftImports": imports,
                                     "tool": {"inputParameters": [{"name": "n", "description": "a number", "type": "integer"}]}}).status_code,
                own.post(f"{BASE}/c{i}/publish").status_code,
                own.post(f"/api/v1/tools/c{i}/call", json={"n": i}).status_code,
            ]

    with ThreadPoolExecutor(max_workers=CLIENTS_AT_ONCE) as pool:
        statuses = list(pool.map(client_session, range(2 * CLIENTS_AT_ONCE)))
    assert statuses == [[201, 200, 200]] * 96
    with server.client() as http:
        assert http.get(BASE, params={"limit": 1}).json()["total"] == 97
        assert len(http.get(f"{BASE}/shared/usage").json()["modules"]) == 48


def test_two_edits_from_one_read_with_if_match_exactly_one_wins(server: Server) -> None:
    # B7: two clients read the same version and both write with If-Match; one 200, one 412, every round
    with server.client() as http, ThreadPoolExecutor(max_workers=2) as pool:
        expect(http.post(BASE, json={"id": "contested", "description": "start", "draftContent": "exports.v = 0;"}), 201)
        for race in range(30):
            tag = http.get(f"{BASE}/contested").headers["ETag"]
            barrier = Barrier(2)

            def edit(who: str) -> int:
                with server.client() as own:
                    barrier.wait()
                    body = {"description": f"{who} {race}"}
                    return own.put(f"{BASE}/contested", json=body, headers={"If-Match": tag}).status_code

            statuses = sorted(pool.map(edit, ("ann", "bob")))
            assert statuses == [200, 412], f"race {race}: {statuses}"
            after = http.get(f"{BASE}/contested")
            assert after.headers["ETag"] == f'"{int(tag.strip(chr(34))) + 1}"', f"race {race}: one change only"
