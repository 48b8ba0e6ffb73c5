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

from application.tool_search import HYBRID, LEXICAL, SEMANTIC, ToolIndex, tool_text, words
from bench.tool_catalog import SHARED, Catalog, GeneratedTool, catalog, entry_of
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


def test_recall_at_5_over_2000_tools(index: ToolIndex, generated: list[GeneratedTool], capsys: pytest.CaptureFixture[str]) -> None:
    """Figures of each query set and retriever, printed; the floors asserted are what the offline
    static model reaches (docs/mcp.md, "Tool search"): the issue's goal of 0.9 on descriptions
    paraphrased word for word is not reached with it."""
    sets: dict[str, Callable[[GeneratedTool], str]] = {
        "reworded (no shared content word)": lambda t: t.query,
        "object named, action and domain reworded": lambda t: t.partial,
        "action and object in the tool's words": lambda t: t.exact,
    }
    figures = {label: {mode: recall_at_5(index, generated, query, mode) for mode in (LEXICAL, SEMANTIC, HYBRID)}
               for label, query in sets.items()}
    with capsys.disabled():
        for label, by_mode in figures.items():
            print(f"\n  recall@5 {label}: " + ", ".join(f"{m} {v:.3f}" for m, v in by_mode.items()), file=sys.stderr)
    assert figures["action and object in the tool's words"][HYBRID] >= 0.9
    assert figures["object named, action and domain reworded"][HYBRID] >= 0.5
    assert figures["reworded (no shared content word)"][HYBRID] >= 0.18
    # the embedding is what finds a reworded description at all
    assert figures["reworded (no shared content word)"][SEMANTIC] > figures["reworded (no shared content word)"][LEXICAL] + 0.1


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
