"""Quotas across replicas (docs/tenants.md, issue 19): two API processes on one PostgreSQL store race
module creates in a tenant whose modules quota is N, round after round; exactly N modules exist
after every round, and every other create was answered 409 `quota-exceeded` (the tenant's advisory
lock serializes the check with the write, and the count is read from the store under it).

Needs PostgreSQL: `scripts/postgres.sh start` (see tests/engines.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from application.store import Store
from entrypoints.compose import ApplicationServices, build_application, build_graph_lock
from infrastructure.settings import Settings

ROUNDS = 20
QUOTA = 3
TRIES = 4  # creates each process sends a round: 2 × 4 = 8 for 3 units


def _no_code() -> None:
    raise AssertionError("these tests run no code")


@pytest.fixture
def operator(postgres_store: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApplicationServices]:
    """The store as the operator's replica wires it; the API processes inherit its POSTGRES_*."""
    for name, value in postgres_store.items():
        monkeypatch.setenv(name, value)
    settings = Settings(data_dir=tmp_path / "operator", persistence_module="eventsourcing.postgres")
    env = settings.event_store_env()
    made = build_application(Store(env), sandbox=_no_code, graph_lock=build_graph_lock(settings, env))  # type: ignore[arg-type]
    yield made
    made.store.close()
    made.commands.graph_lock.close()  # type: ignore[attr-defined]


# One replica of the API, as `toolsmith serve` wires it on the PostgreSQL store (no sandbox: no code
# runs here), driven over HTTP: each line names a tenant's admin token and the ids to create; it
# answers each create's status and problem, its creates sent at once, as both replicas are told to go at once.
_REPLICA = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
from fastapi.testclient import TestClient
from entrypoints.compose import bootstrap
from entrypoints.web import create_app
from infrastructure.settings import Settings

settings = Settings(data_dir=sys.argv[1], persistence_module="eventsourcing.postgres",
                    admin_token="replica-admin-token-0123456789", operator_token="replica-operator-token-0123456789")
with TestClient(create_app(bootstrap(settings, sandbox=None))) as client, ThreadPoolExecutor(8) as pool:
    print("ready", flush=True)
    for line in sys.stdin:
        given = json.loads(line)

        def create(module_id):
            answer = client.post("/api/v1/admin/code-modules", headers={"Authorization": "Bearer " + given["token"]},
                                 json={"id": module_id, "description": "d", "draftContent": "exports.x = 1;"})
            return {"id": module_id, "status": answer.status_code, "problem": answer.json() if answer.status_code >= 400 else None}

        print(json.dumps(list(pool.map(create, given["ids"]))), flush=True)
"""


@pytest.mark.timeout(600)
def test_two_api_processes_racing_creates_never_pass_the_modules_quota(operator: ApplicationServices, tmp_path: Path) -> None:
    # The tenants are there before the replicas start: each sees them (and their tokens) at once.
    tokens = []
    for r in range(ROUNDS):
        _, _, secret = operator.tenants.create(f"round-{r}", f"Round {r}", {"modules": QUOTA}, by="operator")
        tokens.append(secret)
    # Every replica of a PostgreSQL store shares one secret key; they start one after the other
    # (two first starts at once race on creating the store's tables).
    env = {**os.environ, "TOOLSMITH_SECRET_KEY": Fernet.generate_key().decode()}
    replicas: list[subprocess.Popen[str]] = []
    try:
        for name in ("one", "two"):
            replica = subprocess.Popen([sys.executable, "-c", _REPLICA, str(tmp_path / name)], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2], env=env)
            replicas.append(replica)
            assert replica.stdout is not None
            while (said := replica.stdout.readline()) and said.strip() != "ready":
                pass
            assert said, f"replica {name} stopped before it was ready"
        shared = 0  # rounds that both replicas won creates in
        for r, token in enumerate(tokens):
            tenant = f"round-{r}"
            for name, replica in zip(("one", "two"), replicas):
                round_of = {"token": token, "ids": [f"{name}_{i}" for i in range(TRIES)]}
                replica.stdin.write(json.dumps(round_of) + "\n")  # type: ignore[union-attr]
            for replica in replicas:
                replica.stdin.flush()  # type: ignore[union-attr]
            answers = [a for replica in replicas for a in json.loads(replica.stdout.readline())]  # type: ignore[union-attr]
            created = sorted(a["id"] for a in answers if a["status"] == 201)
            losers = [a for a in answers if a["status"] != 201]
            assert len(created) == QUOTA, (r, answers)
            for lost in losers:
                assert lost["status"] == 409, (r, lost)
                problem = lost["problem"]
                assert (problem["code"], problem["quota"], problem["limit"], problem["used"]) == (
                    "quota-exceeded", "modules", QUOTA, QUOTA), (r, lost)
            # The store holds exactly the winners, whichever replica asks.
            assert operator.usage.count(tenant, ["modules"]) == {"modules": QUOTA}
            assert sorted(a["id"] for a in answers if operator.store.is_module(tenant, a["id"])) == created
            shared += len({module_id.split("_")[0] for module_id in created}) == 2
        assert shared, "no round had winners in both replicas: the race did not happen"
    finally:
        for replica in replicas:
            if replica.stdin:
                replica.stdin.close()
            replica.wait(60)
