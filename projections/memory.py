"""The embedded read model: documents in a dict, rebuilt from the event store at every start.

Each tenant's documents come with indexes kept in step on every write, so that a page costs its
size rather than the tenant's: the orders of the list (sorted keys), the facet counts by state and
role, the modules of each tag, and who uses each module. Order keys break ties as OpenSearch does:
the primary key, then the id case-insensitively, then the id itself. Only `search` still reads every
id and description of the tenant (a word may match inside them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import islice, product
from typing import Any

from eventsourcing.persistence import Tracking
from eventsourcing.popo import POPOTrackingRecorder
from sortedcontainers import SortedList

from domain.model import STATES
from projections.documents import searchable, summary
from projections.interface import Document, ListQuery, ModuleReadModel, Page

ROLES = ("tool", "library")

# An id's place in every order: (id.lower(), id). One tuple per document, shared by its indexes.
IdKey = tuple[str, str]
Cell = tuple[str, str]  # (state, role): the facet counts are kept per cell

_PRIMARY: dict[str, Callable[[Document], str]] = {
    "description": lambda d: d["description"].lower(),
    "role": lambda d: d["role"],
    "state": lambda d: d["state"],
}


class InMemoryModuleReadModel(POPOTrackingRecorder, ModuleReadModel):
    def __init__(self) -> None:
        super().__init__()
        self._tenants: dict[str, _Tenant] = {}

    # -- writes ------------------------------------------------------------------------------

    def document(self, tenant: str, module_id: str) -> Document | None:
        with self._database_lock:
            found = self._tenant(tenant).documents.get(module_id)
            return _copy(found) if found is not None else None

    def put(self, document: Document, tracking: Tracking) -> None:
        with self._database_lock:
            self._assert_tracking_uniqueness(tracking)
            self._tenants.setdefault(document["tenant"], _Tenant()).put(_copy(document))
            self._insert_tracking(tracking)

    def remove(self, tenant: str, module_id: str, tracking: Tracking) -> None:
        with self._database_lock:
            self._assert_tracking_uniqueness(tracking)
            self._tenant(tenant).remove(module_id)
            self._insert_tracking(tracking)

    # -- queries -----------------------------------------------------------------------------

    def list(self, tenant: str, query: ListQuery) -> Page:
        with self._database_lock:
            return self._tenant(tenant).page(query)

    def summary(self, tenant: str, module_id: str) -> dict[str, Any] | None:
        with self._database_lock:
            found = self._tenant(tenant).documents.get(module_id)
            return summary(found) if found is not None else None

    def used_by(self, tenant: str, module_id: str) -> list[str]:
        with self._database_lock:
            return sorted(self._tenant(tenant).users.get(module_id, ()))

    def used_by_counts(self, tenant: str, module_ids: Iterable[str]) -> dict[str, int]:
        with self._database_lock:
            users = self._tenant(tenant).users
            return {module_id: len(users.get(module_id, ())) for module_id in module_ids}

    def is_taken(self, tenant: str, module_id: str) -> bool:
        with self._database_lock:
            return module_id in self._tenant(tenant).documents

    def _tenant(self, tenant: str) -> _Tenant:
        found = self._tenants.get(tenant)
        return found if found is not None else _NO_TENANT


class _Tenant:
    """One tenant's documents and their indexes. Every index holds ids or the ids' shared keys,
    never a document: the documents live in `documents` only."""

    def __init__(self) -> None:
        self.documents: dict[str, Document] = {}
        self.by_id: SortedList = SortedList()  # IdKey
        self.by_description: SortedList = SortedList()  # (description.lower(), IdKey)
        # One sorted list of IdKeys per state and per role: ordered by id within the value, they
        # are both the "state"/"role" orders (value after value) and a filter's ready answer.
        self.by_state: dict[str, SortedList] = {state: SortedList() for state in STATES}
        self.by_role: dict[str, SortedList] = {role: SortedList() for role in ROLES}
        self.counts: Counter[Cell] = Counter()
        self.tag_counts: dict[Cell, Counter[str]] = {}
        self.tagged: dict[str, set[str]] = {}  # tag → ids of the modules that carry it
        self.users: dict[str, set[str]] = {}  # module id → ids of the modules whose `uses` name it

    # -- writes ------------------------------------------------------------------------------

    def put(self, document: Document) -> None:
        module_id = document["id"]
        self.remove(module_id)
        self.documents[module_id] = document
        key = _id_key(module_id)
        self.by_id.add(key)
        self.by_description.add((_lowered(document["description"]), key))
        self.by_state.setdefault(document["state"], SortedList()).add(key)
        self.by_role.setdefault(document["role"], SortedList()).add(key)
        cell = (document["state"], document["role"])
        self.counts[cell] += 1
        self.tag_counts.setdefault(cell, Counter()).update(document["tags"])
        for tag in document["tags"]:
            self.tagged.setdefault(tag, set()).add(module_id)
        for used in document["uses"]:
            self.users.setdefault(used, set()).add(module_id)

    def remove(self, module_id: str) -> None:
        document = self.documents.pop(module_id, None)
        if document is None:
            return
        key = _id_key(module_id)
        self.by_id.remove(key)
        self.by_description.remove((document["description"].lower(), key))
        self.by_state[document["state"]].remove(key)
        self.by_role[document["role"]].remove(key)
        cell = (document["state"], document["role"])
        self.counts[cell] -= 1
        tag_counts = self.tag_counts[cell]
        for tag in document["tags"]:
            tag_counts[tag] -= 1
            if not tag_counts[tag]:
                del tag_counts[tag]
        for tag in document["tags"]:
            _forget(self.tagged, tag, module_id)
        for used in document["uses"]:
            _forget(self.users, used, module_id)

    # -- the list ----------------------------------------------------------------------------

    def page(self, query: ListQuery) -> Page:
        cells = _cells(query)
        chosen = self._chosen(query, cells)
        if chosen is None:
            total, facets = self._counted(cells)
        else:
            total, facets = len(chosen), self._facets(chosen)
        ids = self._window(query, cells, chosen, total) if query.offset < total else []
        return Page(collection=[summary(self.documents[i]) for i in ids], total=total, facets=facets)

    def _chosen(self, query: ListQuery, cells: set[Cell]) -> list[str] | None:
        """The matches, found from the smallest indexed set the filters name (the ids `usedBy`
        names, a tag's modules), else by reading every id and description when only `search`
        narrows (a word matches anywhere inside them, which no index of ours answers). None when
        only state and role filter: the counts answer then, and the page walks an order."""
        if query.used_by is None and not query.tags and not query.search:
            return None
        sets: list[Iterable[str]] = [self.tagged.get(tag, ()) for tag in query.tags]
        if query.used_by is not None:
            user = self.documents.get(query.used_by)
            sets.append({*(user["uses"] if user is not None else ()), *query.also_used})
        if not sets:
            return [i for i in self._searched(query.search or "") if self._cell(i) in cells]
        sets.sort(key=len)
        documents = self.documents
        return [
            module_id for module_id in sets[0]
            if module_id in documents
            and all(module_id in other for other in sets[1:])
            and self._cell(module_id) in cells
            and not (query.search and not searchable(documents[module_id], query.search))
        ]

    def _searched(self, text: str) -> Iterator[str]:
        """The ids `searchable` accepts, read from the lowercased keys of the description order
        rather than from the documents. A word holds no space, so it is in "id description"
        exactly when it is in the id or in the description."""
        words = text.lower().split()
        for description, (lowered_id, module_id) in self.by_description:
            if all(word in lowered_id or word in description for word in words):
                yield module_id

    def _counted(self, cells: set[Cell]) -> tuple[int, dict[str, dict[str, int]]]:
        facets = _empty_facets()
        tags: Counter[str] = Counter()
        for cell in cells:
            count = self.counts.get(cell, 0)
            if count:
                facets["state"][cell[0]] += count
                facets["role"][cell[1]] += count
                tags.update(self.tag_counts[cell])
        facets["tags"] = _ranked(tags)
        return sum(facets["role"].values()), facets

    def _facets(self, ids: list[str]) -> dict[str, dict[str, int]]:
        facets = _empty_facets()
        tags: Counter[str] = Counter()
        for module_id in ids:
            document = self.documents[module_id]
            facets["state"][document["state"]] += 1
            facets["role"][document["role"]] += 1
            tags.update(document["tags"])
        facets["tags"] = _ranked(tags)
        return facets

    def _window(self, query: ListQuery, cells: set[Cell], chosen: list[str] | None, total: int) -> list[str]:
        """The ids of the page: read from an order at the offset when the filters leave a whole
        order, else the cheaper of walking an order until the page is full and sorting the matches."""
        start, stop = query.offset, query.offset + query.limit
        group = self._ordered_group(query)
        walked = len(group[0]) if group is not None else len(self.documents)
        if chosen is None:
            if len(cells) == len(STATES) * len(ROLES):
                return list(islice(self._ordered(query.order_by, query.ascending, start), query.limit))
            if group is not None and len(group[0]) == total:  # the group is the matches
                return list(islice(_walk(*group, start), query.limit))
            pinned = self._smallest_pinned(query)
            if not _sorting_is_cheaper(len(pinned), total, stop, walked):
                return self._walked(query, group, lambda i: self._cell(i) in cells)
            chosen = [key[1] for key in pinned if self._cell(key[1]) in cells]
        elif not _sorting_is_cheaper(0, total, stop, walked):
            return self._walked(query, group, set(chosen).__contains__)
        return self._sorted(chosen, query)[start:stop]

    def _walked(self, query: ListQuery, group: tuple[SortedList, bool] | None, matches: Callable[[str], bool]) -> list[str]:
        ordered = _walk(*group, 0) if group is not None else self._ordered(query.order_by, query.ascending, 0)
        return list(islice(filter(matches, ordered), query.offset, query.offset + query.limit))

    def _cell(self, module_id: str) -> Cell:
        document = self.documents[module_id]
        return document["state"], document["role"]

    def _smallest_pinned(self, query: ListQuery) -> SortedList:
        """The smaller of the state's and the role's groups that the filters name."""
        pinned = [self.by_state.get(query.state, _EMPTY)] if query.state else []
        if query.tool is not None:
            pinned.append(self.by_role["tool" if query.tool else "library"])
        return min(pinned, key=len)

    def _sorted(self, ids: list[str], query: ListQuery) -> list[str]:
        """The matches in the page's order, sorted as OpenSearch sorts: primary key, then the id's key."""
        ordered = sorted(ids, key=_id_key)
        if query.order_by == "id":
            if not query.ascending:
                ordered.reverse()
            return ordered
        primary = _PRIMARY[query.order_by]
        documents = self.documents
        ordered.sort(key=lambda i: primary(documents[i]), reverse=not query.ascending)  # stable: ids stay ascending
        return ordered

    # -- orders ------------------------------------------------------------------------------

    def _ordered(self, order_by: str, ascending: bool, start: int) -> Iterator[str]:
        """Every id in the list's order, from position `start` (reached by index, not by walking)."""
        if order_by == "id":
            return _walk(self.by_id, ascending, start)
        if order_by == "description":
            return self._by_description(ascending, start)
        groups = self.by_state if order_by == "state" else self.by_role
        return self._grouped(groups, ascending, start)

    def _ordered_group(self, query: ListQuery) -> tuple[SortedList, bool] | None:
        """The state's or role's group that a filter pins when the page's order is the group's own
        (by id, or by that very field: one value, ids ascending), with the direction to walk it."""
        fitting = []
        if query.state and query.order_by in ("id", "state"):
            fitting.append(self.by_state.get(query.state, _EMPTY))
        if query.tool is not None and query.order_by in ("id", "role"):
            fitting.append(self.by_role["tool" if query.tool else "library"])
        if not fitting:
            return None
        return min(fitting, key=len), query.ascending or query.order_by != "id"

    def _grouped(self, groups: dict[str, SortedList], ascending: bool, start: int) -> Iterator[str]:
        for value in sorted(groups, reverse=not ascending):
            group = groups[value]
            if start >= len(group):
                start -= len(group)
                continue
            yield from _walk(group, True, start)  # ids ascending within a value, either direction
            start = 0

    def _by_description(self, ascending: bool, start: int) -> Iterator[str]:
        index = self.by_description
        if ascending:
            yield from (key[1] for _, key in index.islice(start))
            return
        # Descriptions descending, but ids ascending among equal descriptions: each run of one
        # description is read forwards. The run holding position `start` is found by bisection;
        # the runs below it are gathered while reading backwards.
        n = len(index)
        if start >= n:
            return
        description = index[n - 1 - start][0]
        low = index.bisect_left((description,))
        high = index.bisect_left((description + "\0",))  # the least string after `description`
        yield from (key[1] for _, key in index.islice(low + start - (n - high), high))
        run: list[tuple[str, IdKey]] = []
        for entry in index.islice(0, low, reverse=True):
            if run and entry[0] != run[0][0]:
                yield from (key[1] for _, key in reversed(run))
                run = []
            run.append(entry)
        yield from (key[1] for _, key in reversed(run))


_EMPTY: SortedList = SortedList()
_NO_TENANT = _Tenant()


def _walk(index: SortedList, ascending: bool, start: int) -> Iterator[str]:
    """The ids of a sorted list of IdKeys, from position `start` in the given direction."""
    keys = index.islice(start) if ascending else index.islice(0, max(len(index) - start, 0), reverse=True)
    return (key[1] for key in keys)


def _sorting_is_cheaper(scan: int, matches: int, wanted: int, walked: int) -> bool:
    """Sorting costs reading `scan` documents and sorting the matches; walking an order of
    `walked` ids to the page's end reads about wanted × walked / matches of them."""
    return scan + 4 * matches < wanted * walked / matches


def _cells(query: ListQuery) -> set[Cell]:
    states = (query.state,) if query.state else STATES
    roles = ROLES if query.tool is None else ("tool",) if query.tool else ("library",)
    return set(product(states, roles))


def _empty_facets() -> dict[str, dict[str, int]]:
    return {"state": {state: 0 for state in STATES}, "role": {role: 0 for role in ROLES}, "tags": {}}


def _ranked(tags: Counter[str]) -> dict[str, int]:
    return dict(sorted(tags.items(), key=lambda item: (-item[1], item[0])))


def _forget(index: dict[str, set[str]], name: str, module_id: str) -> None:
    found = index.get(name)
    if found is not None:
        found.discard(module_id)
        if not found:
            del index[name]


def _id_key(module_id: str) -> IdKey:
    return _lowered(module_id), module_id


def _lowered(text: str) -> str:
    """`text.lower()`, sharing `text` itself when it is lowercase already (most ids)."""
    lowered = text.lower()
    return text if lowered == text else lowered


def _copy(document: Document) -> Document:
    # Documents hold only JSON-shaped values; a shallow copy per level is enough and fast.
    copied = dict(document)
    for name in ("draft", "published"):
        if copied.get(name) is not None:
            copied[name] = dict(copied[name])
    return copied
