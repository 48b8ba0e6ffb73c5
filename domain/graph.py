"""The import graph (R5, R6, R10) on networkx: cycles, transitive importers and bundle order.

Edges point from an importer to the module it imports. Every function takes the edges as a plain
mapping `{module: [imports…]}`, so callers decide which graph they ask about: the published one, the
published one plus a draft (at save), or the one a publish would produce.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from heapq import heapify, heappop, heappush

import networkx as nx


def _graph(edges: Mapping[str, Sequence[str]]) -> nx.DiGraph:
    graph = nx.DiGraph()
    for module, imports in edges.items():
        graph.add_node(module)
        graph.add_edges_from((module, dependency) for dependency in imports)
    return graph


def with_edges(edges: Mapping[str, Sequence[str]], module: str, imports: Sequence[str]) -> dict[str, list[str]]:
    """The graph with `module`'s imports replaced."""
    changed = {m: list(i) for m, i in edges.items()}
    changed[module] = list(imports)
    return changed


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


def transitive_importers(edges: Mapping[str, Sequence[str]], module: str) -> list[str]:
    """Every module that imports `module`, directly or not, each after the modules it imports."""
    graph = _graph(edges)
    if module not in graph:
        return []
    importers = nx.ancestors(graph, module)
    return _dependencies_first(graph.subgraph(importers))


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
