"""File Search retrieval over REST (issue 36, docs/kinds/file-search-tools.md "Retrieval"): a new tool
searches hybrid, its documents embedded by the extraction workers with the offline model; a tool
recorded before retrieval existed reads as lexical and stays so until an admin sets a mode; each
result names the retrievers that found it; `minScore`, `maxChunksPerDocument` and every rule of
`retrieval` answered as problem+json naming the field."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.file_search import TOOLS, call, create, settled, upload
from tests.helpers import ADMIN_TOKEN, expect

LEAVE = "Staff who become mothers or fathers receive sixteen weeks of paid absence following a birth or adoption."
OTHERS = [
    "The building's fire alarm is tested each Tuesday morning at ten; there is no need to evacuate during that test.",
    "Laptops are replaced every three years; older machines are wiped and donated to local schools.",
    "The canteen serves vegetarian and vegan dishes daily, and allergens are labelled on every tray.",
    "Error ERR-4471 means the invoice batch was rejected by the payment gateway; resubmit it after checking the IBAN.",
    "Bicycles can be parked in the secure basement rack; showers and lockers are available nearby.",
]
QUESTION = "How much time off do new parents get?"  # no word of LEAVE


@pytest.fixture
def api(tmp_path: Path, shared_sandbox: Any) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, extract_timeout_seconds=30)
    with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        yield client


def _fill(api: TestClient, name: str = "docs") -> dict[str, str]:
    files = [("leave.txt", LEAVE.encode())] + [(f"other{i}.txt", text.encode()) for i, text in enumerate(OTHERS)]
    made = upload(api, name, *files)
    ids = {}
    for document in made:
        ready = settled(api, name, document["id"])
        assert ready["state"] == "READY", ready
        ids[ready["name"]] = ready["id"]
    return ids


def _kind(client: TestClient) -> Any:
    from toolkinds.search_tools.kind import SearchToolKind

    return client.app.state.services.toolbox.kind(SearchToolKind)  # type: ignore[attr-defined]


def test_a_new_tool_is_hybrid_and_finds_a_question_in_other_words(api: TestClient) -> None:
    made = create(api)
    assert made["retrieval"] == {"mode": "hybrid", "rrfK": 60, "minScore": None, "maxChunksPerDocument": None}
    ids = _fill(api)
    leave = expect(api.get(f"{TOOLS}/docs/documents/{ids['leave.txt']}"), 200).json()
    assert leave["embeddingModel"].startswith("wordllama/l2_supercat_256@")  # embedded by the extraction worker

    results = call(api, "docs_search", {"query": QUESTION})["output"]["results"]
    top = [hit["documentId"] for hit in results[:3]]
    assert ids["leave.txt"] in top
    [found] = [hit for hit in results if hit["documentId"] == ids["leave.txt"]]
    assert found["retrievers"] == ["semantic"] and 0 < found["score"] <= 1
    # A code is still found by its words, first, by both retrievers or by the words alone.
    [first, *_] = call(api, "docs_search", {"query": "ERR-4471"})["output"]["results"]
    assert first["documentId"] == ids["other3.txt"] and "lexical" in first["retrievers"]
    assert "<mark>" in first["snippet"]

    # Lexical only: the question finds nothing of the leave document, the code its document.
    expect(api.put(f"{TOOLS}/docs", json={"description": "d", "retrieval": {"mode": "lexical"}}), 200)
    lexical = call(api, "docs_search", {"query": QUESTION})["output"]["results"]
    assert all(hit["documentId"] != ids["leave.txt"] and hit["retrievers"] == ["lexical"] for hit in lexical)
    # Semantic only: found by meaning, every result saying so.
    expect(api.put(f"{TOOLS}/docs", json={"description": "d", "retrieval": {"mode": "semantic"}}), 200)
    semantic = call(api, "docs_search", {"query": QUESTION})["output"]["results"]
    assert semantic[0]["documentId"] == ids["leave.txt"] and {r for hit in semantic for r in hit["retrievers"]} == {"semantic"}


def test_a_rebuild_gives_the_same_hybrid_answers(api: TestClient) -> None:
    create(api)
    _fill(api)
    queries = (QUESTION, "ERR-4471", "where do I leave my bike")
    before = {q: call(api, "docs_search", {"query": q})["output"]["results"] for q in queries}
    _kind(api).rebuild()
    assert {q: call(api, "docs_search", {"query": q})["output"]["results"] for q in queries} == before


def test_a_tool_recorded_before_retrieval_reads_lexical_until_an_admin_sets_a_mode(api: TestClient) -> None:
    """A configuration recorded with no `retrieval` (every tool made before it existed) loads as it
    was and reads as lexical; a change that names none keeps it lexical."""
    from application.commands import Change
    from toolkinds.search_tools.model import SearchTool, normalise

    kind = _kind(api)
    old = {k: v for k, v in normalise({"description": "made before retrieval"}).items() if k != "retrieval"}

    def attempt() -> Change[None]:
        tool = SearchTool(tenant="default", tool_id="old", config=old, by="admin")
        return Change(None, save=[tool])

    kind.deps.commands.run(attempt, name="old", lock="default")
    assert "retrieval" not in kind.get("default", "old").config
    assert expect(api.get(f"{TOOLS}/old"), 200).json()["retrieval"]["mode"] == "lexical"
    _fill(api, "old")
    assert {r for hit in call(api, "old_search", {"query": QUESTION})["output"]["results"] for r in hit["retrievers"]} \
        <= {"lexical"}

    changed = expect(api.put(f"{TOOLS}/old", json={"description": "still lexical"}), 200).json()
    assert changed["retrieval"]["mode"] == "lexical" and changed["description"] == "still lexical"
    kind.set_enabled("default", "old", False, by="admin")  # a change from the tool's own configuration
    assert expect(api.get(f"{TOOLS}/old"), 200).json()["retrieval"]["mode"] == "lexical"
    assert expect(api.put(f"{TOOLS}/old", json={"description": "now hybrid", "retrieval": {"mode": "hybrid"}}), 200).json()["retrieval"]["mode"] == "hybrid"


def test_max_chunks_per_document_and_min_score(api: TestClient) -> None:
    create(api, retrieval={"mode": "hybrid", "maxChunksPerDocument": 1})
    long = "\n\n".join(f"## Part {i}\n\n" + " ".join(["the plover nests on shingle beaches"] * 40) for i in range(6))
    made = upload(api, "docs", ("plovers.md", long.encode()), ("terns.txt", b"the tern and the plover share the beach"))
    for document in made:
        assert settled(api, "docs", document["id"])["state"] == "READY"
    capped = call(api, "docs_search", {"query": "plover"})["output"]["results"]
    assert len(capped) == 2 and len({hit["documentId"] for hit in capped}) == 2

    expect(api.put(f"{TOOLS}/docs", json={"description": "d", "retrieval": {"mode": "hybrid", "minScore": 0.9}}), 200)
    floor = call(api, "docs_search", {"query": "plover"})["output"]["results"]
    assert floor and all(hit["score"] >= 0.9 for hit in floor)
    assert all(set(hit["retrievers"]) == {"lexical", "semantic"} for hit in floor)  # only both lists' best reach 0.9


@pytest.mark.parametrize(("retrieval", "field"), [
    ({"mode": "fuzzy"}, "retrieval.mode"),
    ({"rrfK": 0}, "retrieval.rrfK"),
    ({"maxChunksPerDocument": 51}, "retrieval.maxChunksPerDocument"),
    ({"minScore": "high"}, "retrieval.minScore"),
    ({"weights": [1, 2]}, "retrieval.weights"),
])
def test_retrieval_rules_name_their_field(api: TestClient, retrieval: dict[str, Any], field: str) -> None:
    refused = api.post(TOOLS, json={"id": "docs", "retrieval": retrieval})
    assert refused.status_code == 400, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert any(e["field"] == field for e in refused.json()["errors"]), refused.json()
    assert api.get(f"{TOOLS}/docs").status_code == 404
