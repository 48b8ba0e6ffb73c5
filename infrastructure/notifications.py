"""PostgreSQL's LISTEN/NOTIFY between the processes of one store (issue 15, 7).

The event store already says when it wrote: eventsourcing's PostgreSQL recorder NOTIFYs a channel
named after its events table inside every write's transaction, delivered at commit. Every writer
rings it (an API process, `toolsmith audit import`, a script on the store), so no trigger is
needed. The projections runner listens to it and catches up at once instead of at its next poll.
The runner, in turn, announces each position it has applied on `READ_MODEL_CHANNEL`; the API
processes listen to that to wake the requests waiting for their write to be listed.

A notification is database-wide while a store is a schema, so an announcement names its store, and
a write's ring may come from another schema's store (a spurious catch-up, which finds nothing).

`Listener` holds one autocommit connection per process, in a thread of its own. A lost connection
is logged and opened again; `on_connect` runs after each (re)connection, so that the caller can catch
up with what it missed: a notification sent while nobody listens is gone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

import psycopg
from psycopg import sql

log = logging.getLogger("toolsmith.notifications")

READ_MODEL_CHANNEL = "toolsmith_read_model"
# A connection whose server vanished without a word (no RST) is found dead within about 25 s.
_KEEPALIVE = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3, "connect_timeout": 5}


def connection_settings(env: Mapping[str, str]) -> dict[str, str]:
    """psycopg's connection arguments for the store that eventsourcing's POSTGRES_* variables describe."""
    missing = [name for name in ("POSTGRES_DBNAME", "POSTGRES_HOST", "POSTGRES_USER") if not env.get(name)]
    if missing:
        raise ValueError(f"PERSISTENCE_MODULE=eventsourcing.postgres needs {', '.join(missing)}")
    return {
        "dbname": env["POSTGRES_DBNAME"],
        "host": env["POSTGRES_HOST"],
        "port": env.get("POSTGRES_PORT") or "5432",
        "user": env["POSTGRES_USER"],
        "password": env.get("POSTGRES_PASSWORD", ""),
    }


class Listener:
    """LISTENs to `channels` on a connection of its own and calls each channel's function with the
    payload of every notification, from its thread; reconnects when the connection is lost."""

    def __init__(self, connection: Mapping[str, str], channels: Mapping[str, Callable[[str], None]], *,
                 on_connect: Callable[[], None], name: str, retry_seconds: float = 1.0) -> None:
        # Named, so that an operator sees who listens (pg_stat_activity.application_name).
        self._connection = {**connection, **_KEEPALIVE, "autocommit": True, "application_name": f"toolsmith {name}"}
        self._channels = dict(channels)
        self._on_connect = on_connect
        self._retry_seconds = retry_seconds
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.connected = False

    def start(self) -> Listener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        lost = False
        while not self._stopping.is_set():
            try:
                with psycopg.connect(**self._connection) as connection:  # type: ignore[arg-type]
                    for channel in self._channels:
                        connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    self.connected = True
                    if lost:
                        log.info("listening to the store's notifications again", extra={"channels": list(self._channels)})
                    self._on_connect()
                    while not self._stopping.is_set():
                        # A bounded wait, so that `stop` is seen within half a second.
                        for notification in connection.notifies(timeout=0.5):
                            self._channels[notification.channel](notification.payload)
            except psycopg.Error as error:
                log.warning("the connection listening to the store's notifications is lost; reconnecting "
                            "(meanwhile the followers poll)",
                            extra={"channels": list(self._channels), "error": str(error).strip()})
                lost = True
            finally:
                self.connected = False
            self._stopping.wait(self._retry_seconds)


class Notifier:
    """NOTIFYs one channel from a connection of its own, opened on first use and again after a
    failure. A notification lost to a failure is logged; the listeners' polling covers it."""

    def __init__(self, connection: Mapping[str, str], channel: str) -> None:
        self._connection = {**connection, **_KEEPALIVE, "autocommit": True, "application_name": f"toolsmith {channel}"}
        self._channel = channel
        self._open: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()

    def __call__(self, payload: str) -> None:
        with self._lock:
            try:
                if self._open is None or self._open.closed:
                    self._open = psycopg.connect(**self._connection)  # type: ignore[arg-type]
                self._open.execute("SELECT pg_notify(%s, %s)", (self._channel, payload))
            except psycopg.Error as error:
                log.warning("could not notify the store's listeners", extra={"channel": self._channel, "error": str(error).strip()})
                self._drop()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._open is not None:
            self._open.close()
            self._open = None


class StoreChannels:
    """The two channels of one PostgreSQL store: its writes (eventsourcing's) and the read model's
    applied position (ours, tagged with the store's identity)."""

    def __init__(self, env: Mapping[str, str], *, writes_channel: str, store: str) -> None:
        self._connection = connection_settings(env)
        self._writes_channel = writes_channel
        self._store = store
        self._notifier: Notifier | None = None

    def listen_to_writes(self, wake: Callable[[], None]) -> Listener:
        """Calls `wake` after every write to the store, and after each (re)connection."""
        return Listener(self._connection, {self._writes_channel: lambda _payload: wake()}, on_connect=wake,
                        name="store-writes").start()

    def announce(self, position: int) -> None:
        """Tells the API processes that the read model has applied the store up to `position`."""
        if self._notifier is None:
            self._notifier = Notifier(self._connection, READ_MODEL_CHANNEL)
        self._notifier(f"{self._store} {position}")

    def listen_to_positions(self, heard: Callable[[int], None], on_connect: Callable[[], None]) -> Listener:
        """Calls `heard` with each position the runner announces for this store."""
        def this_store(payload: str) -> None:
            store, _, position = payload.partition(" ")
            if store == self._store and position.isdigit():
                heard(int(position))
        return Listener(self._connection, {READ_MODEL_CHANNEL: this_store}, on_connect=on_connect,
                        name="read-model-positions").start()

    def close(self) -> None:
        if self._notifier is not None:
            self._notifier.close()
