"""The layers import in one direction (issue 13): entry points on top, then the API's presenters, then
the application layer, then the domain; the adapters (infrastructure, projections, sandbox) depend
inward only, and no module imports itself back through others.

Every import counts, also one inside a function or under `TYPE_CHECKING`: a deferred import is
still a dependency, and hiding a cycle in a function is what this test is here to catch.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("entrypoints", "api", "console", "application", "domain", "infrastructure", "projections", "sandbox")
ADAPTERS = {"infrastructure", "projections", "sandbox"}

# What each top-level package may import, besides itself and third-party code.
ALLOWED: dict[str, set[str]] = {
    "entrypoints": set(PACKAGES),
    "api": {"application", "domain"} | ADAPTERS,
    # The console presents what the API's queries answer (api.queries), never the reverse.
    "console": {"api", "application", "domain"} | ADAPTERS,
    "application": {"domain"},
    "domain": set(),
    **{adapter: {"application", "domain"} | ADAPTERS for adapter in ADAPTERS},
}


def product_modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The product modules `name` imports, anywhere in its file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            # The longest product module the name starts with (`from a import b` may name module a.b).
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path = ROOT) -> nx.DiGraph:
    modules = product_modules(root)
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        for target in imports_of(name, path, set(modules)):
            graph.add_edge(name, target)
    return graph


def forbidden_imports(graph: nx.DiGraph) -> list[str]:
    wrong = []
    for source, target in sorted(graph.edges):
        here, there = source.split(".")[0], target.split(".")[0]
        if here != there and there not in ALLOWED[here]:
            wrong.append(f"{source} imports {target} ({here} may import only {sorted(ALLOWED[here]) or 'itself'})")
    return wrong


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    return [sorted(component) for component in nx.strongly_connected_components(graph) if len(component) > 1]


def test_every_import_goes_down_the_layers() -> None:
    assert forbidden_imports(import_graph()) == []


def test_no_module_imports_itself_back() -> None:
    assert cycles(import_graph()) == []


def test_the_walk_sees_what_it_must(tmp_path: Path) -> None:
    """The checks above can fail: an adapter importing the API, a deferred import in a function,
    a relative import and a cycle through two modules are all found in a scratch tree."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "api" / "problems.py").write_text("X = 1\n")
    (tmp_path / "sandbox" / "service.py").write_text("def f():\n    from api.problems import X\n    return X\n")
    (tmp_path / "domain" / "a.py").write_text("from . import b\n")
    (tmp_path / "domain" / "b.py").write_text("import domain.a\n")
    (tmp_path / "domain" / "model.py").write_text("from application import services\n")
    graph = import_graph(tmp_path)
    assert forbidden_imports(graph) == [
        "domain.model imports application (domain may import only itself)",
        "sandbox.service imports api.problems (sandbox may import only ['application', 'domain', 'infrastructure', "
        "'projections', 'sandbox'])",
    ]
    assert cycles(graph) == [["domain.a", "domain.b"]]
