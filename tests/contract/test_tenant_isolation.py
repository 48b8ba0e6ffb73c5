"""Two tenants with the same module ids and File Search document ids: nothing crosses between them
in the embedded read model (in memory) and the embedded chunk index (SQLite FTS5) (docs/tenants.md).

Every query of a tenant, on a store holding both tenants, answers exactly as on a store holding
that tenant alone, and names nothing of the other (the scenario is tests/tenancy.py). The
OpenSearch implementations run the same scenario in tests/integration/test_opensearch_tenant_filter.py,
where every request they send is inspected for its tenant filter as well.
"""

from __future__ import annotations

from pathlib import Path

from projections.chunks_sqlite import SqliteDocumentIndex
from projections.memory import InMemoryModuleReadModel
from tests import tenancy
from tests.tenancy import ACME, GLOBEX, TENANTS


def test_the_in_memory_read_model_answers_each_tenant_as_if_it_were_alone() -> None:
    events = {tenant: tenancy.module_events(tenant) for tenant in TENANTS}
    shared = InMemoryModuleReadModel()
    # globex first: its events come before acme's in the shared store, after them in no other
    tenancy.apply(shared, [(GLOBEX, events[GLOBEX]), (ACME, events[ACME])])
    alone = {tenant: InMemoryModuleReadModel() for tenant in TENANTS}
    for tenant in TENANTS:
        tenancy.apply(alone[tenant], [(tenant, events[tenant])])

    assert tenancy.check_modules(shared, alone) > 1_000


def test_a_tenant_that_holds_nothing_sees_nothing_of_the_others() -> None:
    shared = InMemoryModuleReadModel()
    tenancy.apply(shared, [(tenant, tenancy.module_events(tenant)) for tenant in TENANTS])

    assert tenancy.check_modules(shared, {"initech": InMemoryModuleReadModel()}) > 500


def test_the_sqlite_chunk_index_answers_each_tenant_as_if_it_were_alone(tmp_path: Path) -> None:
    shared = SqliteDocumentIndex(tmp_path / "shared.sqlite")
    alone = {tenant: SqliteDocumentIndex(tmp_path / f"{tenant}.sqlite") for tenant in TENANTS}
    try:
        tenancy.fill_documents(shared, TENANTS)
        for tenant in TENANTS:
            tenancy.fill_documents(alone[tenant], [tenant])

        assert tenancy.check_documents(shared, alone) > 200
        # a tenant with no documents finds none of theirs
        alone["initech"] = SqliteDocumentIndex(tmp_path / "initech.sqlite")
        assert tenancy.check_documents(shared, {"initech": alone["initech"]}) > 100
    finally:
        for index in (shared, *alone.values()):
            index.close()
