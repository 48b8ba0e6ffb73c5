"""Opening a store while another process opens it: a table creation that lost a race with another
process's is tried again; any other failure is not (infrastructure.postgres_store.created_despite_others)."""

from __future__ import annotations

from collections.abc import Callable

import psycopg.errors
import pytest
from eventsourcing.persistence import IntegrityError, InternalError, OperationalError, ProgrammingError

import infrastructure.postgres_store as store
from infrastructure.postgres_store import CREATE_ATTEMPTS, created_despite_others


def as_eventsourcing_raises(error: psycopg.Error, wrapper: type[Exception]) -> Exception:
    """The error as eventsourcing's PostgreSQL datastore raises it: its own class, psycopg's as the cause."""
    try:
        try:
            raise error
        except psycopg.Error as e:
            raise wrapper(str(e)) from e
    except wrapper as wrapped:
        return wrapped


def failing(times: int, error: Callable[[], Exception]) -> tuple[Callable[[], str], list[int]]:
    calls: list[int] = []

    def make() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise error()
        return "made"

    return make, calls


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    pauses: list[float] = []
    monkeypatch.setattr(store.time, "sleep", pauses.append)
    return pauses


@pytest.mark.parametrize(
    ("error", "wrapper"),
    [
        (psycopg.errors.DuplicateTable('relation "toolsmith_events" already exists'), ProgrammingError),
        (psycopg.errors.DuplicateObject('type "toolsmith_events" already exists'), ProgrammingError),
        (psycopg.errors.DuplicateFunction("function already exists"), ProgrammingError),
        (psycopg.errors.UniqueViolation('duplicate key value violates unique constraint "pg_type_typname_nsp_index"'), IntegrityError),
        (psycopg.errors.InternalError_("tuple concurrently updated"), InternalError),
        (psycopg.errors.DeadlockDetected("deadlock detected"), OperationalError),
    ],
)
def test_a_creation_that_lost_a_race_is_tried_again_after_a_pause(
    error: psycopg.Error, wrapper: type[Exception], no_pause: list[float]
) -> None:
    make, calls = failing(2, lambda: as_eventsourcing_raises(error, wrapper))
    assert created_despite_others(make) == "made"
    assert len(calls) == 3
    assert len(no_pause) == 2 and all(pause > 0 for pause in no_pause)


@pytest.mark.parametrize(
    "error",
    [
        psycopg.errors.InsufficientPrivilege("permission denied for schema public"),
        psycopg.errors.SyntaxError('syntax error at or near "TABLE"'),
    ],
)
def test_any_other_programming_error_is_raised_at_once(error: psycopg.Error, no_pause: list[float]) -> None:
    make, calls = failing(1, lambda: as_eventsourcing_raises(error, ProgrammingError))
    with pytest.raises(ProgrammingError, match=str(error)):
        created_despite_others(make)
    assert len(calls) == 1 and no_pause == []


def test_a_connection_refused_is_raised_at_once(no_pause: list[float]) -> None:
    refused = psycopg.OperationalError('connection to server at "127.0.0.1", port 5433 failed: Connection refused')
    make, calls = failing(1, lambda: as_eventsourcing_raises(refused, OperationalError))
    with pytest.raises(OperationalError, match="Connection refused"):
        created_despite_others(make)
    assert len(calls) == 1 and no_pause == []


def test_a_race_lost_every_time_fails_after_the_last_attempt(no_pause: list[float]) -> None:
    duplicate = psycopg.errors.DuplicateTable('relation "toolsmith_events" already exists')
    make, calls = failing(CREATE_ATTEMPTS, lambda: as_eventsourcing_raises(duplicate, ProgrammingError))
    with pytest.raises(ProgrammingError, match="already exists"):
        created_despite_others(make)
    assert len(calls) == CREATE_ATTEMPTS and len(no_pause) == CREATE_ATTEMPTS - 1
