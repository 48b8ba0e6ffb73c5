"""Tool search's index (application/tool_search.py; docs/mcp.md, "Tool search") over 2,000 generated
tools (bench/tool_catalog.py): quality against each tool's description paraphrased, the caller's
permissions applied before ranking, and the index following the catalog's changes.

The MCP side (find_tool and call_tool in both eras, a usage profile, a live publish) is
tests/e2e/test_mcp_tool_search.py's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from application.tool_search import HYBRID, LEXICAL, SEMANTIC, ToolIndex, meant, query_terms, tool_text, words
from bench.tool_catalog import SHARED, Catalog, GeneratedTool, _plural, catalog, entry_of
from domain.catalog import Permissions, ToolEntry
from infrastructure.embeddings import default_embedder

TENANT = "acme"


def offered(entry: ToolEntry) -> bool:
    return entry.offered_in_chat


@pytest.fixture(scope="module")
def generated() -> list[GeneratedTool]:
    return catalog()


@pytest.fixture(scope="module")
def model() -> Callable[[], tuple[Any, int]]:
    embedder = default_embedder()
    return lambda: (embedder.embed_array, embedder.dimensions)


@pytest.fixture(scope="module")
def index(generated: list[GeneratedTool], model: Callable[[], tuple[Any, int]]) -> ToolIndex:
    built = ToolIndex(Catalog([entry_of(t) for t in generated]), model)  # type: ignore[arg-type]
    built.refresh(TENANT)
    return built


def recall_at_5(index: ToolIndex, tools: list[GeneratedTool], query: Callable[[GeneratedTool], str], mode: str) -> float:
    hits = sum(t.name in [f.entry.name for f in index.find(TENANT, offered, "all", query(t), 5, mode=mode)] for t in tools)
    return hits / len(tools)


def test_the_generated_catalog_is_2000_distinct_tools_whose_queries_share_no_content_word(generated: list[GeneratedTool]) -> None:
    assert len(generated) == 2_000 == len({t.name for t in generated}) == len({t.description for t in generated})
    sharing = [t.name for t in generated if (set(words(t.query)) & set(words(tool_text(entry_of(t))))) - SHARED]
    assert sharing == []
    assert len({t.query for t in generated}) == 2_000


def test_the_asked_set_names_each_action_in_other_words_than_its_description(generated: list[GeneratedTool]) -> None:
    # a person's request: the object by its name, and no other word of the description
    objects = {t.name: t.exact.split(" ", 1)[1] for t in generated}  # "delete credit note": "credit note"
    object_words = {name: set(words(o)) | set(words(_plural(o))) for name, o in objects.items()}
    copied = [t.name for t in generated if (set(words(t.asked)) & set(words(t.description))) - object_words[t.name]]
    assert copied == []
    assert len({t.asked for t in generated}) == 2_000


def test_recall_at_5_over_2000_tools(index: ToolIndex, generated: list[GeneratedTool], capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 36's goal: recall@5 at least 0.9 for the tools' descriptions paraphrased as a person
    asks for them (the asked set); the other sets' floors are what the offline static model
    reaches (docs/mcp.md, "Tool search"): with every noun reworded too, far less."""
    sets: dict[str, Callable[[GeneratedTool], str]] = {
        "asked as a person would": lambda t: t.asked,
        "reworded (no shared content word)": lambda t: t.query,
        "object named, action and domain reworded": lambda t: t.partial,
        "action and object in the tool's words": lambda t: t.exact,
    }
    # Each set's 2,000 queries in the modes asserted (bench.tool_catalog asks every mode of every set):
    # all twelve took five minutes on a loaded CI machine.
    modes = {"asked as a person would": (LEXICAL, SEMANTIC, HYBRID), "reworded (no shared content word)": (LEXICAL, SEMANTIC, HYBRID)}
    figures = {label: {mode: recall_at_5(index, generated, query, mode) for mode in modes.get(label, (HYBRID,))}
               for label, query in sets.items()}
    with capsys.disabled():
        for label, by_mode in figures.items():
            print(f"\n  recall@5 {label}: " + ", ".join(f"{m} {v:.3f}" for m, v in by_mode.items()), file=sys.stderr)
    assert figures["asked as a person would"][HYBRID] >= 0.9
    assert figures["action and object in the tool's words"][HYBRID] >= 0.98
    assert figures["object named, action and domain reworded"][HYBRID] >= 0.9
    assert figures["reworded (no shared content word)"][HYBRID] >= 0.25
    # hybrid beats either retriever alone where a person asks
    assert figures["asked as a person would"][HYBRID] > max(figures["asked as a person would"][LEXICAL],
                                                           figures["asked as a person would"][SEMANTIC])
    # the embedding is what finds a reworded description at all
    assert figures["reworded (no shared content word)"][SEMANTIC] > figures["reworded (no shared content word)"][LEXICAL] + 0.1


def test_the_thesaurus_finds_an_action_by_its_synonyms_and_a_word_by_its_forms() -> None:
    assert words("Deletes deleted deleting searches companies") == ["delet", "delet", "delet", "search", "company"]
    erase = query_terms("erase an invoice")
    assert erase["eras"] == erase["invoic"] == 1.0 and 0 < erase["delet"] < 1
    assert "count" in query_terms("how many invoices are there")
    assert meant("wipe out a refund").endswith("delete")
    assert meant("delete a refund") == "delete a refund"


def test_a_tool_the_caller_may_not_use_is_never_found(index: ToolIndex, generated: list[GeneratedTool]) -> None:
    target = generated[0]
    profile = Permissions(tags=frozenset({"billing", "crm"}))
    shows = lambda e: offered(e) and profile.allow(e)  # noqa: E731
    assert index.find(TENANT, offered, "all", target.description, 1)[0].entry.name == target.name
    hidden = next(t for t in generated if t.tags[0] not in profile.tags)
    # its own description, word for word, finds it not, however many are asked for
    found = index.find(TENANT, shows, ("tags", profile), hidden.description, 20)
    assert found and all(profile.allow(f.entry) for f in found)
    assert hidden.name not in [f.entry.name for f in found]
    # a server's few attached tools are all there is to find
    attached = [t.name for t in generated[:3]]
    among = index.find(TENANT, offered, ("attached", tuple(attached)), hidden.description, 20, among=attached)
    assert sorted(f.entry.name for f in among) == sorted(attached)


def test_the_index_follows_the_catalogs_changes(generated: list[GeneratedTool], model: Callable[[], tuple[Any, int]]) -> None:
    tools = Catalog([entry_of(t) for t in generated[:200]])
    index = ToolIndex(tools, model)  # type: ignore[arg-type]
    query = "translate a sentence into French"
    assert "translate_text" not in [f.entry.name for f in index.find(TENANT, offered, "all", query, 5)]
    tools.publish(ToolEntry("translate_text", "Translates text from one language into another.", "JAVASCRIPT", expose_in_chat=True))
    assert index.find(TENANT, offered, "all", query, 5)[0].entry.name == "translate_text"
    # only what changed is read again
    assert tools.reads == 1
    # disabled: no longer offered, so never found; then gone
    tools.publish(replace(tools.by_name["translate_text"], enabled=False))
    assert "translate_text" not in [f.entry.name for f in index.find(TENANT, offered, "all", query, 5)]
    tools.publish(None, "translate_text")
    index.refresh(TENANT)
    assert index.size(TENANT) == 200
    # a description changed is searched by its new words
    renamed = replace(tools.by_name[generated[0].name], description="Orders pizza for the whole office.")
    tools.publish(renamed)
    assert index.find(TENANT, offered, "all", "order pizza", 1)[0].entry.name == generated[0].name
