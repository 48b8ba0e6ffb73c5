"""The key secrets are encrypted with (docs/kinds/index.md): TOOLSMITH_SECRET_KEY, several keys for a change
of key, or one generated into the data dir (0600) and kept; and the fingerprints made with it."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from domain.errors import SecretUnreadable
from infrastructure.secret_vault import KEY_FILE, FernetVault, MemoryRows, SecretKeyError, secret_keys
from infrastructure.settings import POSTGRES, Settings

VALUE = "s3cret value"


def test_a_key_is_generated_once_into_the_data_dir_readable_by_the_owner_only(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    first = secret_keys(settings)
    path = tmp_path / "data" / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # the next start reads the same key: what was encrypted before still decrypts
    rows = MemoryRows()
    FernetVault(first, rows).put("t", "k", VALUE, "f", keeping=None)
    assert secret_keys(settings) == first
    assert FernetVault(secret_keys(settings), rows).read("t", "k", "f") == VALUE


def test_the_configured_key_is_used_and_no_file_is_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = Fernet.generate_key()
    monkeypatch.setenv("TOOLSMITH_SECRET_KEY", key.decode())
    settings = Settings(data_dir=tmp_path / "data")
    rows = MemoryRows()
    FernetVault(secret_keys(settings), rows).put("t", "k", VALUE, "f", keeping=None)
    (_, ciphertext), = rows.get("t", "k")
    assert VALUE not in ciphertext
    assert Fernet(key).decrypt(ciphertext.encode()).decode() == VALUE
    assert not (tmp_path / "data" / KEY_FILE).exists()


def test_with_several_keys_the_first_encrypts_and_every_one_decrypts(tmp_path: Path) -> None:
    old, new = Fernet.generate_key(), Fernet.generate_key()
    rows = MemoryRows()
    FernetVault([old], rows).put("t", "before", VALUE, "f1", keeping=None)
    both = FernetVault(secret_keys(Settings(data_dir=tmp_path, secret_key=f"{new.decode()}, {old.decode()}")), rows)
    assert both.read("t", "before", "f1") == VALUE
    both.put("t", "after", "newer", "f2", keeping=None)
    (_, ciphertext), = rows.get("t", "after")
    assert Fernet(new).decrypt(ciphertext.encode()) == b"newer"
    # without the old key, the old value is a clear error that names the secret and no ciphertext
    with pytest.raises(SecretUnreadable) as refused:
        FernetVault([new], rows).read("t", "before", "f1")
    assert str(refused.value).startswith("the secret 'before' cannot be decrypted with this service's TOOLSMITH_SECRET_KEY")


def test_a_malformed_key_stops_the_start_without_quoting_it(tmp_path: Path) -> None:
    with pytest.raises(SecretKeyError) as refused:
        secret_keys(Settings(data_dir=tmp_path, secret_key=f"{Fernet.generate_key().decode()},not-a-key-hunter2"))
    assert "key 2 of TOOLSMITH_SECRET_KEY is not a Fernet key" in str(refused.value)
    assert "hunter2" not in str(refused.value)


def test_postgres_without_a_configured_key_warns_that_replicas_need_the_same(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolsmith.secrets")
    secret_keys(Settings(data_dir=tmp_path, persistence_module=POSTGRES))
    assert [r.getMessage() for r in caplog.records if "every replica" in r.getMessage()] != []
    caplog.clear()
    secret_keys(Settings(data_dir=tmp_path, persistence_module=POSTGRES, secret_key=Fernet.generate_key().decode()))
    secret_keys(Settings(data_dir=tmp_path / "sqlite"))
    assert caplog.records == []


def test_a_fingerprint_is_keyed_and_tells_values_apart() -> None:
    key = Fernet.generate_key()
    vault = FernetVault([key], MemoryRows())
    assert vault.fingerprint(VALUE) == FernetVault([key], MemoryRows()).fingerprint(VALUE)
    assert len(vault.fingerprint(VALUE)) == 16 and vault.fingerprint(VALUE) != vault.fingerprint(VALUE + "!")
    # another service's key gives another fingerprint: it cannot be computed without the key
    assert FernetVault([Fernet.generate_key()], MemoryRows()).fingerprint(VALUE) != vault.fingerprint(VALUE)


def test_a_change_keeps_the_recorded_value_until_its_event_is_recorded() -> None:
    vault = FernetVault([Fernet.generate_key()], MemoryRows())
    vault.put("t", "k", "one", "f1", keeping=None)
    # the new value is written first; a reader still following the record's f1 gets "one"
    vault.put("t", "k", "two", "f2", keeping="f1")
    assert (vault.read("t", "k", "f1"), vault.read("t", "k", "f2")) == ("one", "two")
    # the next change keeps only the value the record names now
    vault.put("t", "k", "three", "f3", keeping="f2")
    assert (vault.read("t", "k", "f1"), vault.read("t", "k", "f2"), vault.read("t", "k", "f3")) == (None, "two", "three")
