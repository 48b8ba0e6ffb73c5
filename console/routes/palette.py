"""The Ctrl/⌘+K palette's answers (docs/console.md, "Find anything"): `GET /console/palette?q=` finds the
tenant's modules, tools of every kind, MCP servers, usage profiles, agents and the console's pages by
name, and offers the common actions, as JSON for the palette's listbox (console/assets/palette.js).

Everything is read from what is already kept in memory for the pages: the catalog (every kind's tools,
sorted by name), the caller registry (servers, profiles, agents) and the modules' read model (its own
search, which also covers libraries and drafts a catalog does not list). A name matches when it starts
with the words typed, has a word that does, holds them, or holds their letters in order (fuzzy-ish);
the closest matches come first. An auditor is offered no action that writes."""

from __future__ import annotations

import re
from urllib.parse import quote
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from console.language import kind_words
from console.routes.catalog import new_kinds, page_of
from console.routing import ConsoleRoute
from console.security import Reader
from domain.callers import AGENT, PROFILE, SERVER
from domain.ports import ListQuery

router = APIRouter(prefix="/console/palette", route_class=ConsoleRoute, include_in_schema=False)

# How many results the listbox shows: enough to pick from, few enough to read.
LIMIT = 20
# How many modules the read model's search is asked for before ranking.
MODULES = 200
# How many modules, by name, a fuzzy match (letters in order) reads when the search found few.
FUZZY_MODULES = 5_000

# (label, where it leads, whether it writes), after each kind's New page (`actions`)
ACTIONS = (
    ("New MCP server", "/console/servers/new", True),
    ("New usage profile", "/console/profiles/new", True),
    ("New token", "/console/tokens#issue-heading", True),
    ("Run a tool in the Playground", "/console/playground", False),
    ("Download the audit export", "/console/audit/export", False),
)
# Not a page: the palette runs it in the browser (the shell's theme switch).
THEME_ACTION = {"label": "Switch between light and dark mode", "kind": "Action", "url": "", "action": "theme"}
_RECORDS = ((SERVER, "MCP server", "/console/servers/{}"), (PROFILE, "Usage profile", "/console/profiles/{}"),
            (AGENT, "Agent", "/console/agents/{}"))
_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[-_.\s/]+")


@dataclass(frozen=True, slots=True)
class Hit:
    label: str
    kind: str
    url: str
    score: int
    action: str = ""

    def out(self) -> dict[str, str]:
        found = {"label": self.label, "kind": self.kind, "url": self.url}
        if self.action:
            found["action"] = self.action
        return found


def score(name: str, query: str) -> int | None:
    """How well `name` matches `query` (lower is better), or None when it does not: 0 the name itself,
    1 its start, 2 the start of one of its words (`one` in addOne, `report` in dates_report), 3 inside
    it, 4 its letters in order (`fcur` in format_currency)."""
    if not query:
        return 5
    folded, wanted = name.casefold(), query.casefold()
    if folded == wanted:
        return 0
    if folded.startswith(wanted):
        return 1
    words = [w.casefold() for w in _BOUNDARY.split(name) if w]
    if any(word.startswith(wanted) for word in words[1:]):
        return 2
    if wanted in folded:
        return 3
    compact = wanted.replace(" ", "")
    if len(compact) >= 2 and _in_order(compact, folded):
        return 4
    return None


def _in_order(letters: str, text: str) -> bool:
    found = iter(text)
    return all(letter in found for letter in letters)


def actions(plugins: Iterable[Any]) -> list[tuple[str, str, bool]]:
    """What the palette offers to do: each kind's New page (`KindPlugin.new`), then `ACTIONS`."""
    return [(f"New {kind['noun']}", kind["href"], True) for kind in new_kinds(plugins)] + list(ACTIONS)


def candidates(services: Any, tenant: str, query: str, *, writer: bool, navigation: Iterable[Any]) -> Iterator[Hit]:
    """Every match, unranked: pages and actions, then the tenant's objects (when something was typed)."""
    for entry in _nav_entries(navigation):
        href, label = entry
        found = score(label, query)
        if found is not None:
            yield Hit(label, "Page", href, found)
    for label, url, writes in actions(services.plugins):
        if writes and not writer:
            continue
        found = score(label, query) if query else 5
        if found is None and query:
            # "new server", "server" find "New MCP server": each typed word in the label
            words = query.casefold().split()
            found = 3 if words and all(w in label.casefold() for w in words) else None
        if found is not None:
            yield Hit(label, "Action", url, found)
    found = score(THEME_ACTION["label"], query) if query else 5
    if found is None and query and any(w in ("dark", "light", "theme", "mode") for w in query.casefold().split()):
        found = 2
    if found is not None:
        yield Hit(THEME_ACTION["label"], "Action", "", found, action="theme")
    if not query:
        return
    for entry in services.toolbox.entries(tenant):
        name = entry.group or entry.name
        found = score(entry.name, query)
        if found is None:
            continue
        url = page_of(services.plugins, entry.call_type, quote(name, safe="")) or f"/console/tools?search={quote(entry.name)}"
        yield Hit(entry.name, _kind_label(entry.call_type), url, found)
    for record_kind, label, page in _RECORDS:
        for record in services.records.list(tenant, record_kind):
            found = score(record["id"], query)
            if found is not None:
                yield Hit(record["id"], label, page.format(quote(record["id"], safe="")), found)
    # the modules' own search: words of the name (libraries and drafts included, which no catalog lists)
    modules = services.read_model.list(tenant, ListQuery(search=query, limit=MODULES, order_by="id")).collection
    if len(modules) < LIMIT:
        # few hold the words as typed: their letters in order, among the first FUZZY_MODULES by name
        seen = {m["id"] for m in modules}
        every = services.read_model.list(tenant, ListQuery(limit=FUZZY_MODULES, order_by="id")).collection
        modules += [m for m in every if m["id"] not in seen and score(m["id"], query) is not None]
    for module in modules:
        found = score(module["id"], query)
        yield Hit(module["id"], "Code module", f"/console/modules/{quote(module['id'], safe='')}", found if found is not None else 4)


def _kind_label(call_type: str) -> str:
    words = kind_words(call_type)
    return words[:1].upper() + words[1:]


def _nav_entries(navigation: Iterable[Any]) -> Iterator[tuple[str, str]]:
    """The sidebar's (path, label) entries, whether it is grouped or flat."""
    for item in navigation:
        if len(item) == 2 and isinstance(item[1], tuple) and item[1] and isinstance(item[1][0], tuple):
            yield from item[1]
        elif len(item) >= 2 and isinstance(item[0], str) and isinstance(item[1], str):
            yield item[0], item[1]


def search(services: Any, tenant: str, query: str, *, writer: bool, navigation: Iterable[Any], limit: int = LIMIT) -> list[Hit]:
    """The best `limit` matches, closest first; one per page (a code tool is its module's page). With
    nothing typed, every page and action (a bounded list, whatever the tenant holds)."""
    seen: dict[str, Hit] = {}
    for hit in candidates(services, tenant, query, writer=writer, navigation=navigation):
        key = hit.url or hit.action
        kept = seen.get(key)
        if kept is None or hit.score < kept.score:
            seen[key] = hit
    order = {"Page": 0, "Action": 1}
    ranked = sorted(seen.values(), key=lambda h: (h.score, order.get(h.kind, 2) if not query else 0, len(h.label),
                                                  h.label.casefold()))
    return ranked[:limit] if query else ranked


@router.get("")
def palette(request: Request, visitor: Reader, q: Annotated[str, Query(max_length=200)] = "") -> JSONResponse:
    pages = request.app.state.console_pages
    hits = search(request.app.state.services, visitor.principal.tenant, q.strip(), writer=visitor.can_write,
                  navigation=pages.env.globals.get("navigation", ()))
    return JSONResponse({"query": q, "results": [hit.out() for hit in hits]}, headers={"Cache-Control": "no-store"})
