"""R5, the import rules, checked where a draft is saved, run or published: imports name published
modules, never the module itself, and close no cycle.

The cycle check searches only from the new imports, over the published graph (see `cycle_through`):
it costs what those imports reach, not the size of the tenant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from application.store import Store
from domain.errors import ImportCycle, ImportRefused, Violation
from domain.graph import cycle_through, with_edges
from domain.model import ImportGraph


def check_draft_imports(store: Store, graph: ImportGraph, module_id: str, imports: list[str]) -> Mapping[str, Sequence[str]]:
    """R5 at save, against the published graph plus this draft; answers that graph (a view)."""
    check_imports(store, graph, module_id, imports, at_publish=False)
    return with_edges(graph.published_edges(), module_id, imports)


def check_imports(store: Store, graph: ImportGraph, module_id: str, imports: list[str], *, at_publish: bool) -> None:
    """R5: imports name published modules, not the module itself, and close no cycle in the
    published graph with `module_id` importing `imports`."""
    found = [
        Violation(f"draftImports[{i}]", "R5", _import_problem(store, graph.tenant, module_id, name))
        for i, name in enumerate(imports)
        if name == module_id or not graph.is_published(name)
    ]
    if found:
        raise ImportRefused(found, at_publish=at_publish)
    cycle = cycle_through(graph.published_edges(), module_id, imports)
    if cycle:
        raise ImportCycle(cycle, at_publish=at_publish)


def _import_problem(store: Store, tenant: str, module_id: str, name: str) -> str:
    if name == module_id:
        return f"a module cannot import itself ({name!r})"
    if not store.is_module(tenant, name):
        return f"no module {name!r} to import"
    return f"{name!r} is not published; only published modules can be imported"
