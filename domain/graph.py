"""The import graph (R5, R6, R10): cycles, transitive importers and bundle order.

Edges point from an importer to the module it imports. Every function takes the edges as a
mapping `{module: [imports…]}`, so callers decide which graph they ask about: the published one, the
published one plus a draft (at save), or the one a publish would produce. The functions on the
import graph visit only what they are about (a module's dependencies, its importers, what new
imports reach), never the whole tenant: a tenant may hold 50,000 modules. `find_cycle` builds the
whole graph it is given (plans, which are few).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from heapq import heapify, heappop, heappush

import networkx as nx


def _graph(edges: Mapping[str, Sequence[str]]) -> nx.DiGraph:
    graph = nx.DiGraph()
    for module, imports in edges.items():
        graph.add_node(module)
        graph.add_edges_from((module, dependency) for dependency in imports)
    return graph


def with_edges(edges: Mapping[str, Sequence[str]], module: str, imports: Sequence[str]) -> Mapping[str, Sequence[str]]:
    """The graph with `module`'s imports replaced, as a read-only view of `edges` (nothing is copied)."""
    return _WithEdges(edges, module, list(imports))


class _WithEdges(Mapping[str, Sequence[str]]):
    def __init__(self, edges: Mapping[str, Sequence[str]], module: str, imports: list[str]) -> None:
        self._edges = edges
        self._module = module
        self._imports = imports

    def __getitem__(self, module: str) -> Sequence[str]:
        return self._imports if module == self._module else self._edges[module]

    def __iter__(self) -> Iterator[str]:
        yield from self._edges
        if self._module not in self._edges:
            yield self._module

    def __len__(self) -> int:
        return len(self._edges) + (self._module not in self._edges)


def find_cycle(edges: Mapping[str, Sequence[str]], through: str | None = None) -> list[str] | None:
    """A cycle as a closed path (`[a, b, a]`), preferring one through `through`; None when acyclic."""
    graph = _graph(edges)
    try:
        found = nx.find_cycle(graph, source=through) if through in graph else nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        if through is None:
            return None
        return find_cycle(edges)
    path = [found[0][0]] + [target for _, target in found]
    return path


def cycle_through(edges: Mapping[str, Sequence[str]], module: str, imports: Sequence[str]) -> list[str] | None:
    """The cycle that `module` importing `imports` would close in `edges`, as a closed path
    (`[module, b, …, module]`); None when it closes none.

    `edges` must be acyclic (the published graph is: every publish is checked), so a cycle of the
    changed graph goes through a new edge `module → b`, and there is one exactly when `module` is
    reachable from `b`. The search starts there and visits only what the new imports reach, depth
    first in import order (the path named is the one networkx's `find_cycle` names).
    """
    path = [module]
    pending = [iter(imports)]
    seen = {module}
    while pending:
        dependency = next(pending[-1], None)
        if dependency is None:
            pending.pop()
            path.pop()
        elif dependency == module:
            return [*path, module]
        elif dependency not in seen:
            seen.add(dependency)
            path.append(dependency)
            pending.append(iter(edges.get(dependency, ())))
    return None


def transitive_importers(importers: Mapping[str, Collection[str]], edges: Mapping[str, Sequence[str]], module: str) -> list[str]:
    """Every module that imports `module`, directly or not, each after the modules it imports.

    `importers` is the reverse of `edges` (module → the modules that import it): the importers are
    found by walking it up from `module`, then ordered over their own edges only.
    """
    found: set[str] = set()
    stack = [module]
    while stack:
        for importer in importers.get(stack.pop(), ()):
            if importer not in found and importer != module:
                found.add(importer)
                stack.append(importer)
    graph = nx.DiGraph()
    graph.add_nodes_from(found)
    graph.add_edges_from((importer, dependency) for importer in found for dependency in edges.get(importer, ()) if dependency in found)
    return _dependencies_first(graph)


def bundle_order(edges: Mapping[str, Sequence[str]], module: str) -> list[str]:
    """The modules that `module` needs, dependencies first, ending with `module` itself (R6).

    Only the part of the graph reachable from `module` is visited, and no graph object is built: a
    tool call pays for its own dependencies, not for the size of the tenant, and a publish that
    orders a bundle per importer pays microseconds for each. The order is `_dependencies_first`'s.
    """
    if not edges.get(module):
        return [module]
    needs: dict[str, set[str]] = {}
    stack = [module]
    while stack:
        current = stack.pop()
        if current not in needs:
            needs[current] = set(edges.get(current, ()))
            stack.extend(needs[current])
    importers = dict.fromkeys(needs, 0)
    for dependencies in needs.values():
        for dependency in dependencies:
            importers[dependency] += 1
    # Kahn's algorithm from the importers down, smallest name first among the ready, then reversed.
    ready = [name for name, count in importers.items() if count == 0]
    heapify(ready)
    order = []
    while ready:
        name = heappop(ready)
        order.append(name)
        for dependency in needs[name]:
            importers[dependency] -= 1
            if importers[dependency] == 0:
                heappush(ready, dependency)
    if len(order) != len(needs):
        raise ValueError(f"the imports of {module} form a cycle")
    order.reverse()
    return order


def _dependencies_first(graph: nx.DiGraph) -> list[str]:
    # Sorting by name among equals keeps the order, and so every check and error, repeatable.
    return list(reversed(list(nx.lexicographical_topological_sort(graph, key=lambda n: n))))
