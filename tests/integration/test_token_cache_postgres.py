"""A token revoked on one replica of a PostgreSQL store (issue 30, `application/principals.py`): refused
at once by the replica that revoked it, and by another replica that had just admitted it within the
second it keeps who holds a token, as it keeps a tenant's suspension.

Needs PostgreSQL: `scripts/postgres.sh start` (see tests/engines.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from entrypoints.compose import Services, bootstrap
from infrastructure.settings import Settings

ADMIN = "replica-admin-token-0123456789"


@pytest.fixture
def replicas(postgres_store: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Services]]:
    for name, value in postgres_store.items():
        monkeypatch.setenv(name, value)
    made = [bootstrap(Settings(data_dir=tmp_path / f"replica-{n}", persistence_module="eventsourcing.postgres",
                               admin_token=ADMIN, rate_per_second=0, tenant_rate_per_second=0), sandbox=None)
            for n in range(2)]
    yield made
    for services in made:
        services.close()


def test_a_token_revoked_on_one_replica_is_refused_there_at_once_and_on_the_other_within_a_second(replicas: list[Services]) -> None:
    one, two = replicas
    token, secret = one.tokens.issue_token("default", "reader", "auditor", None, by="admin")
    for replica in (one, two):
        assert replica.admission.admit(secret).token_id == token["id"]  # each keeps it now
    one.tokens.revoke_token("default", token["id"], by="admin")
    revoked_at = time.monotonic()
    with pytest.raises(Exception, match="valid bearer token"):
        one.admission.admit(secret)
    while True:
        try:
            two.admission.admit(secret)
        except Exception as refused:
            assert "valid bearer token" in str(refused)
            break
        time.sleep(0.05)
    assert time.monotonic() - revoked_at < 1.5
