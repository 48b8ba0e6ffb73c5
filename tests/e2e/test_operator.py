"""The operator's token as `toolsmith serve` gives it (docs/tenants.md): printed once on the first start,
kept as a hash, and the tenants it makes served by the same process."""

from __future__ import annotations

import re
import stat
from pathlib import Path

from tests.e2e.conftest import Server, printed_tokens


def printed_operator_tokens(output: str) -> list[str]:
    return re.findall(r"tso_[A-Za-z0-9_-]+", output)


def test_the_first_start_prints_the_operator_token_once_and_it_manages_tenants(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = Server(data_dir=data).start()
    try:
        operators, admins = printed_operator_tokens(first.output), printed_tokens(first.output)
        assert len(set(operators)) == 1 and len(set(admins)) == 1, first.output
        operator = operators[0]
        kept = data / "operator-token.sha256"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and operator not in kept.read_text()
        with first.client(operator) as client:
            made = client.post("/api/v1/operator/tenants", json={"id": "acme", "name": "Acme"})
            assert made.status_code == 201, made.text
            tenant_token = made.json()["adminToken"]
            assert [t["id"] for t in client.get("/api/v1/operator/tenants").json()] == ["acme", "default"]
            assert client.get("/api/v1/admin/code-modules").status_code == 403
        with first.client(tenant_token) as tenant:
            assert tenant.get("/api/v1/admin/code-modules").json()["collection"] == []
            assert tenant.get("/api/v1/operator/tenants").status_code == 403
    finally:
        first.stop()

    again = Server(data_dir=data, port=first.port).start()
    try:
        assert printed_operator_tokens(again.output[len(first.output):]) == []
        with again.client(operator) as client:
            assert client.put("/api/v1/operator/tenants/acme", json={"suspended": True}).json()["suspended"] is True
        with again.client(tenant_token) as tenant:
            refused = tenant.get("/api/v1/admin/code-modules")
            assert refused.status_code == 403 and refused.json()["code"] == "tenant-suspended"
    finally:
        again.stop()
