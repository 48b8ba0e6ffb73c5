"""The cross-process graph lock on PostgreSQL: one holder per tenant and store, across processes.

Two `AdvisoryGraphLock`s have a pool each, so they hold the lock from different sessions, as two
API processes would; the last test uses a real second process, and kills it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from entrypoints.compose import bootstrap
from infrastructure.locks import AdvisoryGraphLock, lock_key
from infrastructure.settings import Settings

TENANT = "default"
# A child process that holds the tenant's lock until it is killed.
_HOLDER = """
import json, sys, time
from infrastructure.locks import AdvisoryGraphLock
with AdvisoryGraphLock.from_env(json.loads(sys.argv[1])).hold(sys.argv[2]):
    print("holding", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def locks(postgres_store: dict[str, str]) -> Iterator[Callable[[], AdvisoryGraphLock]]:
    """Makes locks on the test's store, each with its own connections (as another process has)."""
    made: list[AdvisoryGraphLock] = []

    def make() -> AdvisoryGraphLock:
        made.append(AdvisoryGraphLock.from_env(postgres_store))
        return made[-1]

    yield make
    for lock in made:
        lock.close()


def _holds_within(lock: AdvisoryGraphLock, tenant: str, seconds: float) -> bool:
    """Whether `lock` gets the tenant's lock within `seconds` (a thread keeps waiting otherwise,
    and takes and releases it once it can)."""
    held = threading.Event()

    def take() -> None:
        with lock.hold(tenant):
            held.set()

    threading.Thread(target=take, daemon=True).start()
    return held.wait(seconds)


def test_the_key_is_the_same_in_every_process_and_release() -> None:
    assert lock_key("toolsmith.public", "default") == -6134631595825318209
    assert lock_key("toolsmith.public", "other") != lock_key("toolsmith.public", "default")


def test_a_holder_blocks_another_session_until_it_releases(locks: Callable[[], AdvisoryGraphLock]) -> None:
    one, two = locks(), locks()
    released = threading.Event()
    with one.hold(TENANT):
        waiter = threading.Thread(target=lambda: _holds_within(two, TENANT, 10) and released.set())
        waiter.start()
        # the other session waits while this one holds the lock
        assert not released.wait(0.5)
    waiter.join(10)
    assert released.is_set()


def test_other_tenants_and_other_stores_are_not_blocked(
    locks: Callable[[], AdvisoryGraphLock], postgres: dict[str, str]
) -> None:
    one, two = locks(), locks()
    elsewhere = AdvisoryGraphLock.from_env({**postgres, "POSTGRES_SCHEMA": "another_store"})
    try:
        with one.hold(TENANT):
            assert _holds_within(two, "another tenant", 5)
            assert _holds_within(elsewhere, TENANT, 5)
    finally:
        elsewhere.close()


def test_threads_of_one_process_take_turns(locks: Callable[[], AdvisoryGraphLock]) -> None:
    lock = locks()
    inside, most = 0, 0
    count = threading.Lock()

    def hold() -> None:
        nonlocal inside, most
        with lock.hold(TENANT):
            with count:
                inside += 1
                most = max(most, inside)
            threading.Event().wait(0.01)
            with count:
                inside -= 1

    threads = [threading.Thread(target=hold) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert most == 1


def test_a_process_that_dies_holding_the_lock_releases_it(
    locks: Callable[[], AdvisoryGraphLock], postgres_store: dict[str, str]
) -> None:
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, json.dumps(postgres_store), TENANT], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        lock = locks()
        assert not _holds_within(lock, TENANT, 0.5)
        holder.kill()
        holder.wait(10)
        # its connection closed with it, and PostgreSQL released the lock
        assert _holds_within(lock, TENANT, 10)
    finally:
        holder.kill()
        holder.wait(10)


def test_an_api_on_a_postgresql_store_takes_the_advisory_lock(
    postgres_store: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in postgres_store.items():
        monkeypatch.setenv(name, value)
    services = bootstrap(Settings(data_dir=tmp_path, admin_token="t"), sandbox=None)
    try:
        assert isinstance(services.graph_lock, AdvisoryGraphLock)
    finally:
        services.close()
