"""Search filters fuzzed on both chunk indexes (issue 36 item 4's acceptance: "filters never return a
chunk outside the filter, with and without text, on both engines, fuzzed").

Documents with random typed metadata (some keys missing) go into one tool on SQLite (FTS5 and
sqlite-vec, hybrid) and on the OpenSearch node; hypothesis draws filters of every operator, nested
`and`/`or`, dates as ISO strings and as Unix seconds. Each search, with the word every document
holds and with no query at all, must answer only documents that this file's own reading of
OpenAI's filter semantics passes, and as many as the filter leaves (up to `maxResults`): a filter
applied after the index's top k would answer fewer.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opensearchpy import OpenSearch
from pydantic import SecretStr

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.file_search import TOOLS, create, settled
from tests.helpers import ADMIN_TOKEN, expect, unique_id

SCHEMA = {"dept": "string", "year": "number", "draft": "boolean", "published": "date"}
DEPTS = ["legal", "hr", "ops", "Legal", "finance"]
YEARS = [2019, 2020, 2021.5, 2022, 2024]
DATES = ["2021-01-01", "2021-06-30T12:00:00Z", "2022-02-28", "2023-12-31T23:59:59+01:00", "2024-07-04"]
DOCUMENTS = 24
WORD = "harbour"


def metadata_of(rng: random.Random) -> dict[str, Any]:
    values = {"dept": rng.choice(DEPTS), "year": rng.choice(YEARS), "draft": rng.random() < 0.5,
              "published": rng.choice(DATES)}
    return {k: v for k, v in values.items() if rng.random() < 0.75}  # a key in four is missing


def seconds(value: Any) -> float:
    """This test's own reading of a date: ISO 8601 (no offset: UTC), or Unix seconds."""
    if isinstance(value, (int, float)):
        return float(value)
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def passes(node: dict[str, Any], metadata: dict[str, Any]) -> bool:
    kind = node["type"]
    if kind in ("and", "or"):
        found = [passes(child, metadata) for child in node["filters"]]
        return all(found) if kind == "and" else any(found)
    key, value = node["key"], node["value"]
    if key not in metadata:
        return False
    held = metadata[key]
    if SCHEMA[key] == "date":
        held = seconds(held)
        value = [seconds(v) for v in value] if isinstance(value, list) else seconds(value)
    return {"eq": lambda: held == value, "ne": lambda: held != value, "gt": lambda: held > value,
            "gte": lambda: held >= value, "lt": lambda: held < value, "lte": lambda: held <= value,
            "in": lambda: held in value, "nin": lambda: held not in value}[kind]()


def comparisons() -> st.SearchStrategy[dict[str, Any]]:
    dates = st.one_of(st.sampled_from(DATES), st.sampled_from(DATES).map(seconds))

    def of(key: str, values: st.SearchStrategy[Any], ordered: bool) -> st.SearchStrategy[dict[str, Any]]:
        ops = ["eq", "ne"] + (["gt", "gte", "lt", "lte"] if ordered else [])
        single = st.builds(lambda op, v: {"type": op, "key": key, "value": v}, st.sampled_from(ops), values)
        listed = st.builds(lambda op, vs: {"type": op, "key": key, "value": vs}, st.sampled_from(["in", "nin"]),
                           st.lists(values, min_size=1, max_size=3))
        return st.one_of(single, listed)

    return st.one_of(of("dept", st.sampled_from(DEPTS + ["nobody"]), False),
                     of("year", st.sampled_from(YEARS + [2018, 2030]), True),
                     of("draft", st.booleans(), False), of("published", dates, True))


def depth(node: dict[str, Any]) -> int:
    return 1 + max((depth(c) for c in node.get("filters", [])), default=0)


FILTERS = st.recursive(comparisons(), lambda inner: st.builds(
    lambda op, fs: {"type": op, "filters": fs}, st.sampled_from(["and", "or"]), st.lists(inner, min_size=1, max_size=3)),
    max_leaves=8).filter(lambda f: depth(f) <= 5)


@pytest.fixture(scope="module", params=["sqlite", "opensearch"])
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           shared_sandbox: Any) -> Iterator[tuple[Any, dict[str, dict[str, Any]]]]:
    """A tool of `DOCUMENTS` one-chunk documents with random metadata, on one engine; the kind and
    each document's metadata by id."""
    data = tmp_path_factory.mktemp(request.param) / "data"
    alias = None
    if request.param == "sqlite":
        config = Settings(data_dir=data, admin_token=ADMIN_TOKEN, extract_timeout_seconds=30)
    else:
        url = request.getfixturevalue("opensearch_url")
        alias = unique_id("ts-filters").lower().replace("_", "-")
        config = Settings(data_dir=data, admin_token=ADMIN_TOKEN, opensearch_url=SecretStr(url), opensearch_index=alias,
                          opensearch_chunks_index=f"{alias}-chunks", opensearch_replicas=0, extract_timeout_seconds=30)
    rng = random.Random(36)
    with TestClient(create_app(wire(config, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as api:
        create(api, metadata=SCHEMA)
        held: dict[str, dict[str, Any]] = {}
        for i in range(DOCUMENTS):
            metadata = metadata_of(rng)
            text = f"The {WORD} notice number {i}: {rng.choice(['tides', 'cranes', 'ferries', 'moorings'])} {i * 7919}."
            response = api.post(f"{TOOLS}/docs/documents", files=[("files", (f"n{i:02}.txt", text.encode()))],
                                data={"metadata": orjson.dumps(metadata).decode()})
            [document] = expect(response, 202).json()["documents"]
            assert settled(api, "docs", document["id"])["state"] == "READY"
            held[document["id"]] = expect(api.get(f"{TOOLS}/docs/documents/{document['id']}"), 200).json()["metadata"]
        from toolkinds.search_tools.kind import SearchToolKind

        yield api.app.state.services.toolbox.kind(SearchToolKind), held  # type: ignore[attr-defined]
    if alias is not None:
        opensearch: OpenSearch = request.getfixturevalue("opensearch")
        opensearch.indices.delete(index=f"{alias}*", ignore_unavailable=True, allow_no_indices=True, expand_wildcards="all")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(filters=FILTERS, limit=st.integers(min_value=1, max_value=10), with_query=st.booleans())
def test_no_result_falls_outside_the_filter_and_none_is_missing(engine: tuple[Any, dict[str, dict[str, Any]]],
                                                                 filters: dict[str, Any], limit: int, with_query: bool) -> None:
    kind, held = engine
    arguments = {"filters": filters, "maxResults": limit, **({"query": WORD} if with_query else {})}
    result = kind.run_capability("default", "docs", "search", arguments)
    assert result.error is None, result.error
    found = [hit["documentId"] for hit in result.output["results"]]
    passing = {doc_id for doc_id, metadata in held.items() if passes(filters, metadata)}
    outside = [doc_id for doc_id in found if doc_id not in passing]
    assert not outside, (filters, [held[d] for d in outside])
    assert len(found) == len(set(found)) == min(limit, len(passing)), (filters, len(found), len(passing))
    assert all(hit["metadata"] == held[hit["documentId"]] for hit in result.output["results"] if held[hit["documentId"]])
