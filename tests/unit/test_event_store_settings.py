"""Which event store the settings choose, and how its aggregate cache behaves (docs/architecture.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from infrastructure.settings import Settings


def test_sqlite_is_the_default_and_its_one_process_trusts_its_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PERSISTENCE_MODULE", "SQLITE_DBNAME", "AGGREGATE_CACHE_FASTFORWARD"):
        monkeypatch.delenv(name, raising=False)
    env = Settings(data_dir=tmp_path).event_store_env()
    assert env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"
    assert env["SQLITE_DBNAME"] == str(tmp_path / "events.sqlite")
    assert env["AGGREGATE_CACHE_FASTFORWARD"] == "n"


def test_postgresql_takes_eventsourcings_variables_and_reads_newer_events_before_each_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERSISTENCE_MODULE", "eventsourcing.postgres")
    monkeypatch.setenv("POSTGRES_HOST", "db.example")
    monkeypatch.setenv("POSTGRES_SCHEMA", "toolsmith")
    monkeypatch.setenv("AGGREGATE_CACHE_FASTFORWARD", "n")  # other processes write: never honoured here
    env = Settings(data_dir=tmp_path).event_store_env()
    assert env["PERSISTENCE_MODULE"] == "eventsourcing.postgres"
    assert (env["POSTGRES_HOST"], env["POSTGRES_SCHEMA"]) == ("db.example", "toolsmith")
    assert env["AGGREGATE_CACHE_FASTFORWARD"] == "y"
    assert "SQLITE_DBNAME" not in env
