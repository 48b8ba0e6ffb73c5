"""Issue 15, 7, on the real PostgreSQL: the projection runner wakes on the store's own NOTIFY of
each write, whoever the writer (here another process's store, as `toolsmith audit import` would
be), and the API's follower hears the positions the runner announces. The runner's polling is set
to a minute, so only a notification can make these waits end in time; a listener whose connection
is killed reconnects, logs it, and hears the next write."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import psycopg
import pytest

from application.store import Store
from domain.errors import SandboxUnavailable
from domain.ports import Sandbox
from entrypoints.compose import build_application, build_runner, store_channels
from infrastructure.notifications import connection_settings
from infrastructure.settings import Settings
from projections.memory import InMemoryModuleReadModel
from projections.runner import PullingProjectionRunner, TrackingWatcher
from projections.store_identity import store_identity

TENANT = "default"
NO_POLL = 60.0


@pytest.fixture
def writer(postgres_store: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """The store, opened as another process writing to it would."""
    for name, value in postgres_store.items():
        monkeypatch.setenv(name, value)
    store = Store(Settings().event_store_env())
    yield store
    store.close()


@pytest.fixture
def runner(writer: Store) -> Iterator[PullingProjectionRunner]:
    """A runner on its own store object, polling once a minute, announcing its positions."""
    settings = Settings()
    store = Store(settings.event_store_env())
    channels = store_channels(settings, store, store_identity(store))
    assert channels is not None
    running = build_runner(store, InMemoryModuleReadModel(), poll_seconds=NO_POLL, channels=channels, announce=True)
    running.start()
    _wait_until(lambda: running._listening is not None and running._listening.connected)  # noqa: SLF001
    yield running
    running.stop()
    channels.close()
    store.close()


def _write(store: Store, module_id: str) -> int:
    modules = build_application(store, sandbox=_no_sandbox).modules
    written = modules.create(TENANT, module_id, description="d", content="exports.x = 1;", imports=[], tool=None, by="ada")
    assert written.position is not None
    return written.position


def _no_sandbox() -> Sandbox:
    raise SandboxUnavailable()


def _wait_until(condition: object, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not within 10 s"
        time.sleep(0.01)


def test_a_write_of_another_store_object_wakes_the_runner_before_its_poll(writer: Store, runner: PullingProjectionRunner) -> None:
    position = _write(writer, "woken")
    assert runner.wait(position, timeout=10)
    assert runner.position() >= position


def test_a_listener_whose_connection_is_killed_reconnects_and_hears_the_next_write(
    writer: Store, runner: PullingProjectionRunner, postgres_store: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolsmith.notifications")
    # kill the connection that listens to the store's writes, as a restarted server or a proxy would
    with psycopg.connect(**connection_settings(postgres_store), autocommit=True) as admin:
        killed = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               "WHERE application_name = 'toolsmith store-writes' AND pid = ANY(%s)",
                               (_listener_pids(admin),)).fetchall()
    assert killed, "no listener connection found"
    _wait_until(lambda: any("listening to the store's notifications again" in r.message for r in caplog.records))
    assert any("is lost; reconnecting" in r.message for r in caplog.records)
    position = _write(writer, "after_reconnect")
    assert runner.wait(position, timeout=10)


def _listener_pids(admin: psycopg.Connection) -> list[int]:
    """This test's listener: the newest connection of that name (other tests may run their own)."""
    rows = admin.execute("SELECT pid FROM pg_stat_activity WHERE application_name = 'toolsmith store-writes' "
                         "ORDER BY backend_start DESC LIMIT 1").fetchall()
    return [row[0] for row in rows]


def test_the_apis_follower_hears_the_positions_the_runner_announces(writer: Store, runner: PullingProjectionRunner) -> None:
    settings = Settings()
    store = Store(settings.event_store_env())
    identity = store_identity(store)
    channels = store_channels(settings, store, identity)
    assert channels is not None
    # The follower reads the view only once a minute: what it learns in time, it heard.
    watcher = TrackingWatcher(store, runner.view, fallback_seconds=NO_POLL, listen=channels.listen_to_positions)
    watcher.start()
    try:
        _wait_until(lambda: watcher._listening is not None and watcher._listening.connected)  # noqa: SLF001
        positions = [_write(writer, f"heard{n}") for n in range(3)]

        async def wait_all() -> list[bool]:
            return await asyncio.gather(*(watcher._applied.wait_async(p, 10) for p in positions))  # noqa: SLF001

        assert asyncio.run(wait_all()) == [True, True, True]
    finally:
        watcher.stop()
        store.close()
