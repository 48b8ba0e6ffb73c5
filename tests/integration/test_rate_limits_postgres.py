"""Rate limits across replicas (issue 28, finding 7): on a PostgreSQL store the buckets are a table
every replica leases requests from, so two replicas grant a token its rate once (within 10 %), not
twice, and an address's failed authentications count wherever they land.

Needs PostgreSQL: `scripts/postgres.sh start` (see tests/engines.py)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from infrastructure.ratelimit import SharedRateLimiter, lease_size


class Clock:
    """The buckets' time, shared by both "replicas" and moved by the test."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def datastores(postgres_store: dict[str, str]) -> Iterator[list[Any]]:
    """Two pools on one store, as two replicas have."""
    from eventsourcing.postgres import PostgresFactory

    made = [PostgresFactory(postgres_store).datastore for _ in range(2)]
    yield made
    for datastore in made:
        datastore.close()


def test_two_replicas_leasing_from_one_bucket_hold_the_rate_within_10_percent(datastores: list[Any]) -> None:
    rate, burst, seconds, step = 50.0, 40, 4.0, 0.005
    clock = Clock()
    replicas = [SharedRateLimiter(d, "token", rate, burst, clock=clock, shared_clock=clock) for d in datastores]
    assert replicas[0].lease == lease_size(burst) > 1  # a round trip for several requests, not each
    granted = [0, 0]
    start = clock.now
    turns = random.Random(28)  # noqa: S311 - who asks first at each moment, as a load balancer's would be
    while clock.now - start < seconds:
        for i in turns.sample(range(2), 2):  # each asks four times as often as the rate allows both
            granted[i] += sum(replicas[i].take("tok_1") is None for _ in range(2))
        clock.now += step
    allowed = rate * seconds + burst
    total = sum(granted)
    assert total <= 1.10 * allowed, (granted, allowed)
    assert total >= 0.90 * allowed, (granted, allowed)  # the rate, not a fraction of it, is granted
    assert min(granted) > 0.2 * total, granted  # both replicas were served from the one bucket
    # Another key has its own bucket, full.
    assert all(replicas[1].take("tok_2") is None for _ in range(burst))


def test_a_bucket_found_empty_is_refused_locally_with_the_seconds_until_it_refills(datastores: list[Any]) -> None:
    clock = Clock()
    one, two = (SharedRateLimiter(d, "failed-authentication", 5 / 60, 5, clock=clock, shared_clock=clock) for d in datastores)
    assert [one.take("203.0.113.7") for _ in range(3)] == [None] * 3
    assert [two.take("203.0.113.7") for _ in range(2)] == [None] * 2
    assert two.waiting("203.0.113.7") == pytest.approx(12.0)  # it took the last one: it knows
    assert one.waiting("203.0.113.7") is None  # the other learns at its next take
    assert one.take("203.0.113.7") == pytest.approx(12.0)
    assert one.waiting("203.0.113.7") == pytest.approx(12.0)
    assert one.waiting("198.51.100.2") is None and one.take("198.51.100.2") is None
    clock.now += 12.0
    assert two.waiting("203.0.113.7") is None and two.take("203.0.113.7") is None


def test_on_the_database_clock_two_threads_stay_within_the_rate(datastores: list[Any]) -> None:
    rate, burst = 20.0, 20
    replicas = [SharedRateLimiter(d, "token", rate, burst) for d in datastores]
    granted, refused = [0, 0], [0, 0]
    started = time.monotonic()

    def drive(i: int) -> None:
        # A second at least, and until this replica was refused once (the rate is far below a loop's).
        while time.monotonic() - started < 1.0 or (not refused[i] and time.monotonic() - started < 20):
            if replicas[i].take("tok_db") is None:
                granted[i] += 1
            else:
                refused[i] += 1

    threads = [threading.Thread(target=drive, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    assert all(refused), refused
    assert sum(granted) <= 1.10 * (rate * elapsed + burst), (granted, elapsed)


def test_a_table_of_another_replica_is_the_same_table(datastores: list[Any]) -> None:
    """Replicas starting at once both create the table if need be; neither fails."""
    made = []
    threads = [threading.Thread(target=lambda d=d: made.append(SharedRateLimiter(d, "tenant", 1, 1))) for d in datastores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 2
    assert made[0].take("acme") is None and made[1].take("acme") is not None


# -- two API processes -------------------------------------------------------------------------------

# One replica of the API as `toolsmith serve` wires it on the PostgreSQL store (no sandbox), driven
# over stdin: `drive` sends requests with a token as fast as it can for a few seconds and answers
# how many were granted; `guess` sends wrong tokens and answers their statuses.
_REPLICA = """
import json, sys, time
from fastapi.testclient import TestClient
from entrypoints.compose import bootstrap
from entrypoints.web import create_app
from infrastructure.settings import Settings

settings = Settings(data_dir=sys.argv[1], persistence_module="eventsourcing.postgres",
                    admin_token="replica-admin-token-0123456789", operator_token="replica-operator-token-0123456789",
                    rate_per_second=10, rate_burst=20, auth_failures_per_minute=5)
with TestClient(create_app(bootstrap(settings, sandbox=None))) as client:
    print("ready", flush=True)
    for line in sys.stdin:
        given = json.loads(line)
        if given["do"] == "drive":
            granted = refused = 0
            until = time.monotonic() + given["seconds"]
            while time.monotonic() < until:
                answer = client.get("/api/v1/admin/code-modules", headers={"Authorization": "Bearer " + given["token"]})
                assert answer.status_code in (200, 429), answer.text
                granted += answer.status_code == 200
                refused += answer.status_code == 429
            print(json.dumps({"granted": granted, "refused": refused}), flush=True)
        else:
            statuses = [client.get("/api/v1/admin/code-modules", headers={"Authorization": "Bearer tsk_wrong-%d" % i}).status_code
                        for i in range(given["n"])]
            print(json.dumps(statuses), flush=True)
"""


@pytest.mark.timeout(300)
def test_two_api_processes_grant_a_token_its_rate_once(postgres_store: dict[str, str], tmp_path: Path) -> None:
    # Every replica of a PostgreSQL store shares one secret key; they start one after the other
    # (two first starts at once race on creating the store's tables).
    env = {**os.environ, **postgres_store, "TOOLSMITH_SECRET_KEY": Fernet.generate_key().decode()}
    replicas: list[subprocess.Popen[str]] = []

    def ask(replica: subprocess.Popen[str], order: dict[str, Any]) -> None:
        replica.stdin.write(json.dumps(order) + "\n")  # type: ignore[union-attr]
        replica.stdin.flush()  # type: ignore[union-attr]

    def answer(replica: subprocess.Popen[str]) -> Any:
        return json.loads(replica.stdout.readline())  # type: ignore[union-attr]

    try:
        for name in ("one", "two"):
            replica = subprocess.Popen([sys.executable, "-c", _REPLICA, str(tmp_path / name)], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2], env=env)
            replicas.append(replica)
            assert replica.stdout is not None
            while (said := replica.stdout.readline()) and said.strip() != "ready":
                pass
            assert said, f"replica {name} stopped before it was ready"
        seconds = 3.0
        started = time.monotonic()
        for replica in replicas:
            ask(replica, {"do": "drive", "token": "replica-admin-token-0123456789", "seconds": seconds})
        drives = [answer(replica) for replica in replicas]
        elapsed = time.monotonic() - started
        granted = sum(d["granted"] for d in drives)
        assert all(d["refused"] for d in drives), drives  # both drove past the rate
        assert all(d["granted"] for d in drives), drives  # and both were served
        assert granted <= 1.10 * (10 * elapsed + 20), (drives, elapsed)  # once, not once per replica
        # Five wrong tokens on one replica: the sixth from that address on the other is 429.
        ask(replicas[0], {"do": "guess", "n": 5})
        assert answer(replicas[0]) == [401] * 5
        ask(replicas[1], {"do": "guess", "n": 2})
        assert answer(replicas[1]) == [429, 429]
    finally:
        for replica in replicas:
            if replica.stdin:
                replica.stdin.close()
            replica.wait(60)
