"""The tenant-filter benchmark's stores and table: what it says it builds, and the goal read as 1.2×."""

from collections import Counter

from bench.tenant_filter import GOAL, documents, run, tenant_name


def test_every_tenant_holds_the_same_ids_and_the_same_mix():
    many = list(documents([tenant_name(k) for k in range(10)], 100))
    assert len(many) == 1_000 and len({(d["tenant"], d["id"]) for d in many}) == 1_000
    assert Counter(d["tenant"] for d in many) == {tenant_name(k): 100 for k in range(10)}
    first, last = ([(d["id"], d["state"], d["role"], d["tags"]) for d in many if d["tenant"] == tenant_name(k)] for k in (0, 9))
    assert first == last
    states = Counter(d["state"] for d in many[:100])
    assert states == {"UNPUBLISHED": 50, "PUBLISHED": 40, "DRAFT": 10}
    assert Counter(d["role"] for d in many[:100]) == {"tool": 75, "library": 25}


def test_the_in_memory_run_reports_each_ratio_against_the_goal():
    rows, info = run(["--skip-opensearch", "--modules", "400", "--tenants", "4", "--repeats", "2"], quiet=True)
    judged = [row for row in rows if row.meets is not None]
    assert [row.figure.split(",")[0] for row in judged] == ["in memory: list p50", "in memory: list p95"]
    assert all(row.goal == f"≤ {GOAL}×" and row.meets == (row.ratio <= GOAL) for row in judged)
    assert "among 4 (400 modules) vs one tenant of 400" in judged[0].figure
    assert info["args"]["tenants"] == 4
