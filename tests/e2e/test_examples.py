"""`toolsmith examples list` and `toolsmith examples load` against a running `toolsmith serve`
(issue 33): every set loads through the REST API, its tools answer as their examples say, and a
second load is no error."""

from __future__ import annotations

import os
import subprocess

import pytest

from entrypoints import examples
from tests.e2e.conftest import TOOLSMITH, Server


def toolsmith(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("TOOLSMITH_URL", "TOOLSMITH_ADMIN_TOKEN")} | (env or {})
    return subprocess.run([str(TOOLSMITH), "examples", *args], capture_output=True, text=True, timeout=120, env=environment)


def test_list_names_every_set_with_what_it_holds() -> None:
    listed = toolsmith("list")
    assert listed.returncode == 0, listed.stderr
    for name in ("conformance", "first-modules", "format-currency"):
        line = next(line for line in listed.stdout.splitlines() if line.startswith(name + " "))
        assert f"{len(examples.load_set(name).items)} items" in line


def test_every_set_loads_twice_and_its_tools_answer(server: Server) -> None:
    for name in examples.names():
        first = toolsmith("load", name, "--url", server.url, "--token", server.token)
        assert first.returncode == 0, first.stderr
        chosen = examples.load_set(name)
        assert f"{name}: {len(chosen.items)} created, 0 already there" in first.stdout
        # The second time through the environment's URL and token: everything is there already.
        again = toolsmith("load", name, env={"TOOLSMITH_URL": server.url, "TOOLSMITH_ADMIN_TOKEN": server.token})
        assert again.returncode == 0, again.stderr
        assert f"{name}: 0 created, {len(chosen.items)} already there" in again.stdout
        assert all(f"exists     {item.id}" in again.stdout for item in chosen.items)
    with server.client() as http:
        for item in (i for n in examples.names() for i in examples.load_set(n).items):
            module = http.get(f"{item.collection}/{item.id}").json()
            assert module["state"] == "PUBLISHED", module
        assert http.post("/api/v1/tools/format_currency/call", json={"amount": 1234.5, "currency_code": "EUR"}).json()["output"] == "€1,234.50"
        assert http.post("/api/v1/tools/report/call", json={"day": "2026-03-14"}).json()["output"] == "Report 2026"
        counted = http.post("/api/v1/tools/countLines/call", json={"text": "a\nb"}).json()
        assert counted["output"] == "2 lines" and any("counting the lines of 3 characters" in line for line in counted["logs"]), counted
        assert http.post("/api/v1/tools/test_simple_text/call", json={}).json()["output"] == "This is a simple text response for testing."


def test_an_unknown_set_a_missing_token_and_a_refusal_are_said(server: Server) -> None:
    unknown = toolsmith("load", "nope", "--url", server.url, "--token", server.token)
    assert unknown.returncode == 2 and "no example set 'nope'; the sets are: conformance" in unknown.stderr
    no_token = toolsmith("load", "conformance", "--url", server.url)
    assert no_token.returncode == 2 and "--token" in no_token.stderr
    refused = toolsmith("load", "conformance", "--url", server.url, "--token", "tsa_not-a-token")
    assert refused.returncode == 1 and "test_simple_text: GET /api/v1/admin/code-modules/test_simple_text answered 401" in refused.stderr
    unreachable = toolsmith("load", "conformance", "--url", "http://127.0.0.1:9", "--token", server.token)
    assert unreachable.returncode == 1 and "ConnectError" in unreachable.stderr


@pytest.mark.parametrize("name", examples.names())
def test_each_item_names_its_id_and_a_known_collection(name: str) -> None:
    for item in examples.load_set(name).items:
        assert item.collection.startswith("/api/v1/admin/") and item.id
