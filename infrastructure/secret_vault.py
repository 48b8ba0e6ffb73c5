"""Secret values at rest (docs/kinds/index.md): encrypted with Fernet, in a table beside the events.

**The key.** `TOOLSMITH_SECRET_KEY` holds one Fernet key, or several separated by commas: the first
encrypts, every one decrypts (to change keys, put the new one first and keep the old one until
every secret was rotated). Unset, a key is generated into the data dir on the first start (mode
0600, `secret.key`) and read from there after. Replicas of one PostgreSQL store must share the
key, so a PostgreSQL store without the setting warns once at start. The fingerprints events record
are HMAC-SHA256 under a key derived from the encrypting key (never a plain hash, which a short
value could be found again from).

**The table.** `toolsmith_secrets` in the event store's own database (the SQLite file, or the
PostgreSQL schema), so that every replica reads what any one wrote: one row per (tenant, id), with
the newest value and, while a change is under way, the value before it, each by its fingerprint
(`SecretVault`). It is made on first use. eventsourcing's in-memory store keeps the rows in memory.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from domain.errors import SecretUnreadable
from domain.ports import SecretVault
from infrastructure.data_dir import FILE_MODE
from infrastructure.postgres_store import created_despite_others
from infrastructure.settings import POSTGRES, Settings

log = logging.getLogger("toolsmith.secrets")

KEY_FILE = "secret.key"
TABLE = "toolsmith_secrets"
_FINGERPRINT_LABEL = b"toolsmith secret fingerprint v1"

# One stored value: (fingerprint, ciphertext).
Stored = tuple[str, str]


class SecretKeyError(ValueError):
    """TOOLSMITH_SECRET_KEY (or the data dir's key file) holds no usable key; the key is not quoted."""


def secret_keys(settings: Settings) -> list[bytes]:
    """The service's Fernet keys, the encrypting one first: TOOLSMITH_SECRET_KEY's, else the data
    dir's key file's (made now, 0600, when there is none)."""
    if settings.secret_key is not None and settings.secret_key.get_secret_value().strip():
        return _parsed(Settings.listed(settings.secret_key.get_secret_value()), "TOOLSMITH_SECRET_KEY")
    if settings.persistence_module == POSTGRES:
        log.warning("TOOLSMITH_SECRET_KEY is not set: secrets are encrypted with a key generated into this "
                    "replica's data dir; every replica of a PostgreSQL store needs the same key",
                    extra={"keyFile": str(settings.data_dir / KEY_FILE)})
    path = settings.data_dir / KEY_FILE
    return _parsed(Settings.listed(_key_file(path)), str(path))


def _key_file(path: Path) -> str:
    if path.exists():
        return path.read_text()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = Fernet.generate_key().decode()
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:  # another process made it first
        return path.read_text()
    with os.fdopen(descriptor, "w") as file:
        file.write(key + "\n")
    return key


def _parsed(keys: list[str], source: str) -> list[bytes]:
    if not keys:
        raise SecretKeyError(f"{source} holds no key")
    for position, key in enumerate(keys, start=1):
        try:
            Fernet(key.encode())
        except (ValueError, TypeError):
            raise SecretKeyError(f"key {position} of {source} is not a Fernet key (32 url-safe base64-encoded bytes; "
                                 "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')") from None
    return [key.encode() for key in keys]


class FernetVault(SecretVault):
    """Encrypts with the first key, decrypts with any; stores through a `Rows` of the event store."""

    def __init__(self, keys: list[bytes], rows: Rows) -> None:
        self._fernet = MultiFernet([Fernet(key) for key in keys])
        self._fingerprint_key = hmac.new(keys[0], _FINGERPRINT_LABEL, hashlib.sha256).digest()
        self._rows = rows

    def fingerprint(self, value: str) -> str:
        return hmac.new(self._fingerprint_key, value.encode("utf-8"), hashlib.sha256).hexdigest()[:16]

    def put(self, tenant: str, secret_id: str, value: str, fingerprint: str, *, keeping: str | None) -> None:
        ciphertext = self._fernet.encrypt(value.encode("utf-8")).decode("ascii")
        self._rows.put(tenant, secret_id, (fingerprint, ciphertext), keeping)

    def read(self, tenant: str, secret_id: str, fingerprint: str) -> str | None:
        ciphertext = next((c for f, c in self._rows.get(tenant, secret_id) if f == fingerprint), None)
        if ciphertext is None:
            return None
        try:
            return self._fernet.decrypt(ciphertext.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError):
            raise SecretUnreadable(secret_id, "cannot be decrypted with this service's TOOLSMITH_SECRET_KEY "
                                   "(it was stored under another key: set that key, or set the secret's value again)") from None

    def delete(self, tenant: str, secret_id: str) -> None:
        self._rows.delete(tenant, secret_id)

    def ids(self, tenant: str) -> list[str]:
        return self._rows.ids(tenant)


def open_vault(settings: Settings, store: Any) -> FernetVault:
    """The service's vault over `store`'s database, with the settings' key."""
    return FernetVault(secret_keys(settings), rows_of(store))


def ephemeral_vault(store: Any) -> FernetVault:
    """A vault with a key of its own that no one keeps: for an application built without settings
    (a test, a benchmark), whose secrets need not outlive it."""
    return FernetVault([Fernet.generate_key()], rows_of(store))


# -- the rows ------------------------------------------------------------------------------------


class Rows(ABC):
    """The table: per (tenant, id), the newest stored value and the one kept before it."""

    @abstractmethod
    def get(self, tenant: str, secret_id: str) -> list[Stored]:
        """The newest first; empty when there is no row."""

    @abstractmethod
    def put(self, tenant: str, secret_id: str, newest: Stored, keeping: str | None) -> None:
        """Makes `newest` the newest, keeping the stored value whose fingerprint is `keeping`."""

    @abstractmethod
    def delete(self, tenant: str, secret_id: str) -> None: ...

    @abstractmethod
    def ids(self, tenant: str) -> list[str]: ...


def rows_of(store: Any) -> Rows:
    datastore = getattr(store.recorder, "datastore", None)
    if datastore is None:
        return MemoryRows()  # eventsourcing's in-memory store: the rows live as long as it does
    if type(datastore).__module__.startswith("eventsourcing.postgres"):
        return PostgresRows(datastore)
    return SqliteRows(datastore)


def _kept(row: list[Stored], keeping: str | None) -> Stored | None:
    return next((stored for stored in row if stored[0] == keeping), None)


class MemoryRows(Rows):
    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], list[Stored]] = {}
        self._lock = threading.Lock()

    def get(self, tenant: str, secret_id: str) -> list[Stored]:
        return list(self._rows.get((tenant, secret_id), []))

    def put(self, tenant: str, secret_id: str, newest: Stored, keeping: str | None) -> None:
        with self._lock:
            kept = _kept(self._rows.get((tenant, secret_id), []), keeping)
            self._rows[(tenant, secret_id)] = [newest, kept] if kept is not None else [newest]

    def delete(self, tenant: str, secret_id: str) -> None:
        with self._lock:
            self._rows.pop((tenant, secret_id), None)

    def ids(self, tenant: str) -> list[str]:
        return sorted(i for t, i in list(self._rows) if t == tenant)


class _SqlRows(Rows):
    """The table in the event store's database, made on first use."""

    def __init__(self, datastore: Any) -> None:
        self._datastore = datastore
        self._made = False
        self._making = threading.Lock()

    def _ready(self) -> None:
        if self._made:
            return
        with self._making:
            # Two processes opening a new store at once may race on creating the table.
            created_despite_others(self._create_table)
            self._made = True

    def _create_table(self) -> None:
        with self._datastore.transaction(commit=True) as cursor:
            self._create(cursor)

    @abstractmethod
    def _create(self, cursor: Any) -> None: ...

    @staticmethod
    def _stored(row: Any) -> list[Stored]:
        if row is None:
            return []
        fingerprint, ciphertext, previous_fingerprint, previous_ciphertext = row
        found = [(fingerprint, ciphertext)]
        if previous_fingerprint is not None:
            found.append((previous_fingerprint, previous_ciphertext))
        return found


class SqliteRows(_SqlRows):
    _COLUMNS = "fingerprint, ciphertext, previous_fingerprint, previous_ciphertext"

    def _create(self, cursor: Any) -> None:
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (tenant TEXT NOT NULL, id TEXT NOT NULL, "
                       "fingerprint TEXT NOT NULL, ciphertext TEXT NOT NULL, previous_fingerprint TEXT, "
                       "previous_ciphertext TEXT, PRIMARY KEY (tenant, id))")

    def get(self, tenant: str, secret_id: str) -> list[Stored]:
        self._ready()
        with self._datastore.transaction(commit=False) as cursor:
            cursor.execute(f"SELECT {self._COLUMNS} FROM {TABLE} WHERE tenant = ? AND id = ?", (tenant, secret_id))
            return self._stored(cursor.fetchone())

    def put(self, tenant: str, secret_id: str, newest: Stored, keeping: str | None) -> None:
        self._ready()
        with self._datastore.transaction(commit=True) as cursor:
            cursor.execute(f"SELECT {self._COLUMNS} FROM {TABLE} WHERE tenant = ? AND id = ?", (tenant, secret_id))
            kept = _kept(self._stored(cursor.fetchone()), keeping) or (None, None)
            cursor.execute(f"INSERT OR REPLACE INTO {TABLE} (tenant, id, {self._COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                           (tenant, secret_id, *newest, *kept))

    def delete(self, tenant: str, secret_id: str) -> None:
        self._ready()
        with self._datastore.transaction(commit=True) as cursor:
            cursor.execute(f"DELETE FROM {TABLE} WHERE tenant = ? AND id = ?", (tenant, secret_id))

    def ids(self, tenant: str) -> list[str]:
        self._ready()
        with self._datastore.transaction(commit=False) as cursor:
            cursor.execute(f"SELECT id FROM {TABLE} WHERE tenant = ? ORDER BY id", (tenant,))
            return [row[0] for row in cursor.fetchall()]


class PostgresRows(_SqlRows):
    def __init__(self, datastore: Any) -> None:
        super().__init__(datastore)
        from psycopg.sql import SQL, Identifier  # psycopg needs libpq, which a SQLite deployment may lack

        self._sql = SQL
        self._table = SQL("{}.{}").format(Identifier(datastore.schema), Identifier(TABLE))

    def _query(self, text: str) -> Any:
        return self._sql(text).format(table=self._table)

    def _create(self, cursor: Any) -> None:
        cursor.execute(self._query("CREATE TABLE IF NOT EXISTS {table} (tenant text NOT NULL, id text NOT NULL, "
                                   "fingerprint text NOT NULL, ciphertext text NOT NULL, previous_fingerprint text, "
                                   "previous_ciphertext text, PRIMARY KEY (tenant, id))"))

    @staticmethod
    def _values(row: Any) -> Any:
        if row is None:
            return None
        return row["fingerprint"], row["ciphertext"], row["previous_fingerprint"], row["previous_ciphertext"]

    def get(self, tenant: str, secret_id: str) -> list[Stored]:
        self._ready()
        with self._datastore.transaction(commit=False) as cursor:
            cursor.execute(self._query("SELECT * FROM {table} WHERE tenant = %s AND id = %s"), (tenant, secret_id))
            return self._stored(self._values(cursor.fetchone()))

    def put(self, tenant: str, secret_id: str, newest: Stored, keeping: str | None) -> None:
        self._ready()
        with self._datastore.transaction(commit=True) as cursor:
            cursor.execute(self._query("SELECT * FROM {table} WHERE tenant = %s AND id = %s FOR UPDATE"), (tenant, secret_id))
            kept = _kept(self._stored(self._values(cursor.fetchone())), keeping) or (None, None)
            cursor.execute(self._query(
                "INSERT INTO {table} (tenant, id, fingerprint, ciphertext, previous_fingerprint, previous_ciphertext) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (tenant, id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, "
                "ciphertext = EXCLUDED.ciphertext, previous_fingerprint = EXCLUDED.previous_fingerprint, "
                "previous_ciphertext = EXCLUDED.previous_ciphertext"), (tenant, secret_id, *newest, *kept))

    def delete(self, tenant: str, secret_id: str) -> None:
        self._ready()
        with self._datastore.transaction(commit=True) as cursor:
            cursor.execute(self._query("DELETE FROM {table} WHERE tenant = %s AND id = %s"), (tenant, secret_id))

    def ids(self, tenant: str) -> list[str]:
        self._ready()
        with self._datastore.transaction(commit=False) as cursor:
            cursor.execute(self._query("SELECT id FROM {table} WHERE tenant = %s ORDER BY id"), (tenant,))
            return [row["id"] for row in cursor.fetchall()]
