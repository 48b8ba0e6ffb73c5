"""Secrets on a real PostgreSQL store (docs/kinds/index.md): two API replicas, each with its own store
connection, share one table of ciphertexts beside the events, so each reads what the other wrote,
a rotation is seen by the other at once, and the table never holds a value in clear.

Needs PostgreSQL: `scripts/postgres.sh start` (see tests/engines.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from cryptography.fernet import Fernet
from psycopg import sql

from application.store import Store
from domain.errors import UnknownRecord
from entrypoints.compose import ApplicationServices, build_application, build_graph_lock
from infrastructure.secret_vault import TABLE, open_vault
from infrastructure.settings import Settings

VALUE = "postgres shared value 4b7e"
NEW_VALUE = "postgres rotated value 1d9a"


def _refuse_code() -> None:
    raise AssertionError("these tests run no code")


@pytest.fixture
def replicas(postgres_store: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ApplicationServices, ApplicationServices, str]]:
    """Two replicas as `toolsmith serve` wires them on one PostgreSQL store, sharing one key."""
    for name, value in postgres_store.items():
        monkeypatch.setenv(name, value)
    key = Fernet.generate_key().decode()
    made = []
    for replica in ("a", "b"):
        settings = Settings(data_dir=tmp_path / replica, persistence_module="eventsourcing.postgres", secret_key=key)
        env = settings.event_store_env()
        store = Store(env)
        made.append(build_application(store, sandbox=_refuse_code, graph_lock=build_graph_lock(settings, env),  # type: ignore[arg-type]
                                      vault=open_vault(settings, store)))
    yield made[0], made[1], key
    for app in made:
        app.store.close()
        app.commands.graph_lock.close()


def stored_rows(postgres_store: dict[str, str]) -> list[tuple[str, str, str]]:
    connection = psycopg.connect(host=postgres_store["POSTGRES_HOST"], port=postgres_store["POSTGRES_PORT"],
                                 user=postgres_store["POSTGRES_USER"], password=postgres_store["POSTGRES_PASSWORD"],
                                 dbname=postgres_store["POSTGRES_DBNAME"])
    with connection:
        table = sql.SQL("{}.{}").format(sql.Identifier(postgres_store["POSTGRES_SCHEMA"]), sql.Identifier(TABLE))
        return connection.execute(sql.SQL("SELECT tenant, id, ciphertext FROM {}").format(table)).fetchall()


def test_two_replicas_share_secrets_and_the_table_holds_no_value(replicas: tuple[ApplicationServices, ApplicationServices, str],
                                                                postgres_store: dict[str, str]) -> None:
    a, b, key = replicas
    # created on one replica, read on the other
    a.secrets.create("default", "shared", VALUE, "a key both replicas read", by="admin")
    assert b.secrets.value("default", "shared") == VALUE
    assert [s["id"] for s in b.secrets.list("default")] == ["shared"]
    # the table beside the events holds a ciphertext, which the key alone decrypts
    (tenant, secret_id, ciphertext), = stored_rows(postgres_store)
    assert (tenant, secret_id) == ("default", "shared")
    assert VALUE not in ciphertext and Fernet(key.encode()).decrypt(ciphertext.encode()).decode() == VALUE
    # rotated on the other replica: the first reads the new value at once
    b.secrets.rotate("default", "shared", NEW_VALUE, by="admin")
    assert a.secrets.value("default", "shared") == NEW_VALUE
    assert a.secrets.get("default", "shared")["fingerprint"] == b.secrets.get("default", "shared")["fingerprint"]
    # deleted on one, gone from both, the row too
    a.secrets.delete("default", "shared", by="admin")
    assert not b.secrets.exists("default", "shared")
    with pytest.raises(UnknownRecord):
        b.secrets.value("default", "shared")
    assert stored_rows(postgres_store) == []
