"""API replicas starting at once on one PostgreSQL store (docs/rules.md): each opens the event store,
whose tables, indexes and functions it makes if missing, and the secret and blob tables beside it.
PostgreSQL refuses concurrent changes to one catalog row ("tuple concurrently updated", "duplicate
key value violates unique constraint pg_type_typname_nsp_index"), so starts that nothing takes out
of step fail at random; every replica must start, on a new store and on one that has its tables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPLICAS = 6
ROUNDS = 5

_REPLICA = """
import sys
from application.store import Store
from infrastructure.blobs import PostgresBlobStore
from infrastructure.postgres_store import created_despite_others
from infrastructure.secret_vault import rows_of
sys.stdin.readline()  # every replica opens the store at once, when the test says go
# As the composition root opens it (entrypoints.compose.open_event_store).
store = Store(opening=created_despite_others)
assert rows_of(store).ids("default") == []
assert not PostgresBlobStore(store.recorder.datastore).exists("default", "0" * 64)
store.close()
print("started", flush=True)
"""


def start_at_once(env: dict[str, str]) -> list[tuple[int, str, str]]:
    replicas = [subprocess.Popen([sys.executable, "-c", _REPLICA], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env, cwd=Path(__file__).parents[2])
                for _ in range(REPLICAS)]
    # Python's start-up is the slow part: it is over before the go.
    for replica in replicas:
        assert replica.stdin is not None
        replica.stdin.write("go\n")
    for replica in replicas:
        replica.stdin.flush()  # type: ignore[union-attr]
    outcomes = []
    for replica in replicas:
        out, err = replica.communicate(timeout=120)
        outcomes.append((replica.returncode, out.strip(), err.strip()[-600:]))
    return outcomes


@pytest.mark.timeout(600)
def test_replicas_starting_at_once_all_start_on_a_new_store_and_on_one_with_its_tables(
        postgres: dict[str, str]) -> None:
    import os

    from tests import engines

    for round_ in range(ROUNDS):
        with engines.postgres_schema(postgres) as store:
            env = {**os.environ, **store}
            for state in ("new store", "tables made"):
                outcomes = start_at_once(env)
                failed = [(code, err) for code, out, err in outcomes if code != 0 or out != "started"]
                assert not failed, f"round {round_}, {state}: {len(failed)} of {REPLICAS} replicas failed: {failed[0]}"
