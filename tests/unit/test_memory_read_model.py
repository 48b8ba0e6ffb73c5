"""The indexed in-memory read model answers exactly as reading every document would.

The reference below is the read model as it was before its indexes: it scans, filters, counts and
sorts every document of the tenant for each page. Random writes (puts, rewrites, removals, ids
that differ only in case, equal descriptions) and random queries must get the same pages, totals
and facets, used-by lists and counts from both. Ties are broken as OpenSearch breaks them: the
primary key, then the id case-insensitively, then the id (the scan used to fall back on the
order in which documents were first stored).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import pytest
from eventsourcing.persistence import Tracking

from domain.model import STATES
from projections.documents import new_document, part, searchable, summary, touched
from projections.interface import Document, ListQuery, Page
from projections.memory import InMemoryModuleReadModel

TENANTS = ("acme", "other")
IDS = ("a", "A", "ab", "aB", "b", "dates", "Dates", "report", "text_1", "zeta", "Zeta", "m1", "m10", "m2", "q", "r", "s", "t")
DESCRIPTIONS = ("Zeta", "zeta", "alpha", "Alpha beta", "Date helpers", "date HELPERS", "Äpfel zählen", "report of the year", "x")
TAGS = ("time", "text", "report", "Time", "t1", "t2")
WORDS = ("a", "DATE", "help", "zeta", "ä", "of the", "m1", "repo", "nothing", "  ")
AT = datetime(2026, 1, 1, tzinfo=timezone.utc)


class Reference:
    """The read model before its indexes: every query reads every document."""

    def __init__(self) -> None:
        self.documents: dict[tuple[str, str], Document] = {}

    def put(self, document: Document) -> None:
        self.documents[(document["tenant"], document["id"])] = document

    def remove(self, tenant: str, module_id: str) -> None:
        self.documents.pop((tenant, module_id), None)

    def list(self, tenant: str, query: ListQuery) -> Page:
        matches = [d for (t, _), d in self.documents.items() if t == tenant and self._matches(d, query)]
        facets: dict[str, Any] = {"state": {state: 0 for state in STATES}, "role": {"tool": 0, "library": 0}}
        tags: Counter[str] = Counter()
        for document in matches:
            facets["state"][document["state"]] += 1
            facets["role"][document["role"]] += 1
            tags.update(document["tags"])
        facets["tags"] = dict(sorted(tags.items(), key=lambda item: (-item[1], item[0])))
        matches.sort(key=lambda d: (d["id"].lower(), d["id"]))
        if query.order_by == "id":
            matches.sort(key=lambda d: (d["id"].lower(), d["id"]), reverse=not query.ascending)
        else:
            primary = {"description": lambda d: d["description"].lower(), "role": lambda d: d["role"],
                       "state": lambda d: d["state"]}[query.order_by]
            matches.sort(key=primary, reverse=not query.ascending)
        page = matches[query.offset : query.offset + query.limit]
        return Page(collection=[summary(d) for d in page], total=len(matches), facets=facets)

    def _matches(self, document: Document, query: ListQuery) -> bool:
        if query.search and not searchable(document, query.search):
            return False
        if query.state and document["state"] != query.state:
            return False
        if query.tool is not None and (document["role"] == "tool") != query.tool:
            return False
        if query.tags and not set(query.tags) <= set(document["tags"]):
            return False
        if query.used_by is not None:
            user = self.documents.get((document["tenant"], query.used_by))
            if document["id"] not in query.also_used and (user is None or document["id"] not in user["uses"]):
                return False
        return True

    def used_by(self, tenant: str, module_id: str) -> list[str]:
        return sorted(d["id"] for (t, _), d in self.documents.items() if t == tenant and module_id in d["uses"])

    def used_by_counts(self, tenant: str, module_ids: list[str]) -> dict[str, int]:
        return {module_id: len(self.used_by(tenant, module_id)) for module_id in module_ids}


def random_part(rng: random.Random) -> dict[str, Any]:
    tool = {"tags": rng.sample(TAGS, rng.randint(0, 3)), "exposeInChat": rng.random() < 0.5} if rng.random() < 0.7 else None
    return part({"description": rng.choice(DESCRIPTIONS), "imports": rng.sample(IDS, rng.randint(0, 3)), "tool": tool})


def random_document(rng: random.Random) -> Document:
    document = new_document(rng.choice(TENANTS), rng.choice(IDS))
    published = rng.random() < 0.6
    if published:
        document.update(published=random_part(rng), publishedVersion=rng.randint(1, 3))
    if not published or rng.random() < 0.4:
        document["draft"] = random_part(rng)
    return touched(document, "tester", AT)


def random_query(rng: random.Random) -> ListQuery:
    return ListQuery(
        search=rng.choice([None, None, None, *WORDS, "date help", "a zeta"]),
        state=rng.choice([None, None, *STATES]),
        tool=rng.choice([None, None, True, False]),
        used_by=rng.choice([None, None, None, *IDS, "nobody"]),
        also_used=tuple(rng.sample(IDS, rng.choice([0, 0, 1, 2]))),
        tags=tuple(rng.sample([*TAGS, "unknown"], rng.choice([0, 0, 0, 1, 1, 2]))),
        offset=rng.choice([0, 0, 0, 1, 2, 5, 9, 20]),
        limit=rng.choice([1, 2, 3, 5, 20, 100]),
        order_by=rng.choice(["id", "description", "role", "state"]),
        ascending=rng.random() < 0.5,
    )


def assert_same_answers(view: InMemoryModuleReadModel, reference: Reference, rng: random.Random) -> None:
    for _ in range(40):
        tenant, query = rng.choice(TENANTS), random_query(rng)
        got, expected = view.list(tenant, query), reference.list(tenant, query)
        assert (got.total, got.facets) == (expected.total, expected.facets), query
        assert list(got.facets["tags"].items()) == list(expected.facets["tags"].items()), query  # ranked
        assert got.collection == expected.collection, query
    for tenant in TENANTS:
        assert view.used_by_counts(tenant, [*IDS, "nobody"]) == reference.used_by_counts(tenant, [*IDS, "nobody"])
        for module_id in IDS:
            assert view.used_by(tenant, module_id) == reference.used_by(tenant, module_id)
            stored = reference.documents.get((tenant, module_id))
            assert view.summary(tenant, module_id) == (summary(stored) if stored else None)
            assert view.is_taken(tenant, module_id) == (stored is not None)


@pytest.mark.parametrize("seed", range(12))
def test_the_indexed_model_answers_as_a_scan_of_every_document(seed: int) -> None:
    rng = random.Random(seed)
    view, reference = InMemoryModuleReadModel(), Reference()
    position = 0
    for _ in range(6):
        for _ in range(rng.randint(5, 40)):
            position += 1
            if rng.random() < 0.2:
                tenant, module_id = rng.choice(TENANTS), rng.choice(IDS)
                view.remove(tenant, module_id, Tracking("test", position))
                reference.remove(tenant, module_id)
            else:
                document = random_document(rng)
                view.put(document, Tracking("test", position))
                reference.put(document)
        assert_same_answers(view, reference, rng)


def test_a_large_tenant_pages_as_the_scan_does() -> None:
    """Enough modules that the pages are walked from the orders rather than sorted."""
    rng = random.Random(7)
    view, reference = InMemoryModuleReadModel(), Reference()
    for position in range(1, 1500):
        document = random_document(rng)
        document.update(tenant="acme", id=f"{rng.choice(IDS)}{position % 700}")
        view.put(document, Tracking("test", position))
        reference.put(document)
    for _ in range(300):
        query = random_query(rng)
        query = replace(query, offset=rng.choice([0, 0, 3, 40, 300, 650]), used_by=query.used_by if rng.random() < 0.2 else None)
        got, expected = view.list("acme", query), reference.list("acme", query)
        assert (got.total, got.facets, got.collection) == (expected.total, expected.facets, expected.collection), query


def test_a_stored_document_is_a_copy() -> None:
    view = InMemoryModuleReadModel()
    document = touched({**new_document("acme", "dates"), "draft": random_part(random.Random(1))}, "tester", AT)
    view.put(document, Tracking("test", 1))
    document["draft"]["description"] = "changed by the caller"
    read = view.document("acme", "dates")
    read["draft"]["description"] = "changed by the reader"
    assert view.document("acme", "dates")["draft"]["description"] in DESCRIPTIONS


@pytest.mark.parametrize("order_by", ["id", "description", "role", "state"])
@pytest.mark.parametrize("ascending", [True, False])
def test_every_offset_of_every_order_gives_the_scans_page(order_by: str, ascending: bool) -> None:
    """Pages whose first row falls inside a run of equal keys (equal descriptions, one state)."""
    rng = random.Random(f"{order_by}{ascending}")
    view, reference = InMemoryModuleReadModel(), Reference()
    for position, module_id in enumerate(IDS, start=1):
        document = random_document(rng)
        document.update(tenant="acme", id=module_id)
        view.put(document, Tracking("test", position))
        reference.put(document)
    for offset in range(len(IDS) + 1):
        query = ListQuery(offset=offset, limit=rng.randint(1, 4), order_by=order_by, ascending=ascending)
        assert view.list("acme", query).collection == reference.list("acme", query).collection
