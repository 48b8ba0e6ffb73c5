"""Concurrent publishes over HTTP can never close an import cycle (R5, R10)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

from tests.e2e.conftest import Server

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
