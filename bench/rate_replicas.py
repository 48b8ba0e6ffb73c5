"""Benchmark: a token's request rate across replicas (issue 28, finding 7): two `toolsmith serve` on
one PostgreSQL store, their buckets a table of it (each replica leases a few requests at a time).

One token is driven as fast as `--clients` threads can, spread over both APIs, for `--seconds`;
the requests granted (200) are held to what the rate allows in that time, `rate × seconds + burst`.
The excess ratio is granted / allowed; goal ≤ 1.10 (a token passes its rate by at most 10 % with two
replicas). Before the shared bucket each replica granted the token its whole rate: about 2.0.
Also the requests answered a second in all (granted and refused), to show that a refused or
leased request costs no round trip to the database each.

The engine is the caller's (eventsourcing's POSTGRES_* variables), else `scripts/postgres.sh
start`'s. Each run gets a fresh schema, dropped afterwards.

Run: `python -m bench.rate_replicas [--quick]`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bench._common import Progress, Row, format_table, machine_line
from testing.launcher import Server

TITLE = "Rate limits across replicas: one token on two APIs sharing PostgreSQL buckets"
TOKEN = "tsa_bench_rate_replicas_" + "x" * 24
LIST = "/api/v1/admin/code-modules"
PROJECT = Path(__file__).resolve().parents[1]


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    parser = argparse.ArgumentParser(prog="python -m bench.rate_replicas", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=50.0, help="the token's rate, requests a second")
    parser.add_argument("--burst", type=int, default=100, help="the token's burst")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the token is driven")
    parser.add_argument("--clients", type=int, default=8, help="threads sending requests, half to each API")
    parser.add_argument("--quick", action="store_true", help="a 4 s drive")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds = 4.0
    progress = Progress("rate_replicas", quiet=quiet)
    with _two_apis(args, progress) as apis:
        progress(f"driving one token with {args.clients} threads over both APIs for {args.seconds:g} s")
        granted, refused, elapsed = _drive(apis, args)
    allowed = args.rate * elapsed + args.burst
    excess = sum(granted) / allowed
    answered = (sum(granted) + sum(refused)) / elapsed
    rows = [
        Row("requests granted / rate × time + burst", f"{sum(granted)} granted (API one {granted[0]}, two {granted[1]})",
            f"{allowed:.0f} allowed in {elapsed:.1f} s", excess, "≤ 1.10", excess <= 1.10),
        Row("requests answered a second, both APIs", f"{answered:,.0f}/s", f"{sum(refused)} refused (429)"),
    ]
    return rows, {"args": vars(args), "load": os.getloadavg(), "granted": granted, "refused": refused, "elapsed": elapsed}


def _postgres() -> dict[str, str]:
    names = ("POSTGRES_HOST", "POSTGRES_PORT", "POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DBNAME")
    if os.environ.get("POSTGRES_HOST"):
        return {name: os.environ.get(name, "") for name in names}
    started = subprocess.run([str(PROJECT / "scripts" / "postgres.sh"), "start"], capture_output=True, text=True, timeout=180)
    if started.returncode != 0:
        raise SystemExit(f"bench.rate_replicas needs PostgreSQL: POSTGRES_* unset and scripts/postgres.sh failed: "
                         f"{started.stderr.strip()[-500:]}")
    return dict(word.split("=", 1) for word in started.stdout.strip().splitlines()[-1].split())


@contextmanager
def _two_apis(args: argparse.Namespace, progress: Progress) -> Iterator[tuple[Server, Server]]:
    import psycopg

    from infrastructure.notifications import connection_settings

    postgres = _postgres()
    schema = f"bench_rate_{uuid.uuid4().hex[:8]}"
    connection = connection_settings(postgres)
    with psycopg.connect(**connection, autocommit=True) as admin:  # type: ignore[arg-type]
        admin.execute(f'CREATE SCHEMA "{schema}"')
    # Server turns every rate off for a benchmark; this one sets the token's rate it measures.
    env = {**postgres, "PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_SCHEMA": schema,
           "TOOLSMITH_ADMIN_TOKEN": TOKEN, "TOOLSMITH_LOG_LEVEL": "WARNING",
           "TOOLSMITH_RATE_PER_SECOND": str(args.rate), "TOOLSMITH_RATE_BURST": str(args.burst),
           "TOOLSMITH_SECRET_KEY": _fernet_key()}
    servers: list[Server] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-rate-replicas-") as tmp:
            progress(f"starting two APIs on schema {schema} (rate {args.rate:g}/s, burst {args.burst})")
            for name in ("one", "two"):  # one after the other: two first starts race on the store's tables
                servers.append(Server(data_dir=Path(tmp) / name, env=env, token=TOKEN).start(120))
            yield servers[0], servers[1]
    finally:
        for server in servers:
            server.stop()
        with psycopg.connect(**connection, autocommit=True) as admin:  # type: ignore[arg-type]
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _fernet_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


def _drive(apis: tuple[Server, Server], args: argparse.Namespace) -> tuple[list[int], list[int], float]:
    """Requests granted and refused by each API, and the seconds from the first sent to the last answered."""
    granted, refused = [0, 0], [0, 0]
    counting = threading.Lock()
    go = threading.Event()
    started: list[float] = []

    def client(which: int) -> None:
        with apis[which].client() as http:
            http.get("/healthz")  # the connection opened before the clock starts
            go.wait()
            until = started[0] + args.seconds
            while time.monotonic() < until:
                status = http.get(LIST).status_code
                with counting:
                    if status == 200:
                        granted[which] += 1
                    elif status == 429:
                        refused[which] += 1
                    else:
                        raise SystemExit(f"bench.rate_replicas: API {which + 1} answered {status}")

    threads = [threading.Thread(target=client, args=(i % 2,)) for i in range(args.clients)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    started.append(time.monotonic())
    go.set()
    for thread in threads:
        thread.join()
    return granted, refused, time.monotonic() - started[0]


def main(argv: Sequence[str] | None = None) -> int:
    rows, info = run(argv)
    print(format_table(TITLE, rows))
    print(f"(load average {info['load']})")
    print(machine_line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
