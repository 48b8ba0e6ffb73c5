"""The layers import in one direction (issue 13, issue 29): entry points on top, then the API's
presenters and the console, then the application layer, then the domain; the adapters
(infrastructure, projections, sandbox) depend on the domain only, and no module imports itself
back through others, nor a top-level package another that imports it back.

The kinds of tool (`toolkinds/<kind>/`) are each one package across the layers (a model, a
ToolKind, REST routes, console pages): what they import is held to the rules below like any
module, and only the entry points (the registry, `entrypoints/kinds.py`) import them; how a
kind's own modules depend on each other is `test_kind_packages.py`'s.

Every import counts, also one inside a function or under `TYPE_CHECKING`: a deferred import is
still a dependency, and hiding a cycle in a function is what this test is here to catch.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("entrypoints", "api", "console", "application", "domain", "infrastructure", "projections", "sandbox",
            "toolkinds")
ADAPTERS = {"infrastructure", "projections", "sandbox"}

# What each top-level package may import, besides itself and third-party code.
ALLOWED: dict[str, set[str]] = {
    "entrypoints": set(PACKAGES),
    "api": {"application", "domain"} | ADAPTERS,
    # The console presents what the application answers, and reuses the API's presenters, schemas
    # and problems; never a REST route (`CONSOLE_NEVER`).
    "console": {"api", "application", "domain"} | ADAPTERS,
    "application": {"domain"},
    "domain": set(),
    # An adapter implements a port of the domain; the application hands it what it needs.
    **{adapter: {"domain"} | ADAPTERS for adapter in ADAPTERS},
    # A kind reaches every layer it has a part in, never the entry points that list it.
    "toolkinds": {"api", "console", "application", "domain"} | ADAPTERS,
}

# The console reaches the application one way only: through the application's services and
# queries, never by calling a REST route's function.
CONSOLE_NEVER = ("api.routes",)

# The adapters, each on its own: no adapter imports another, but for what every one of them may
# use. `KERNEL` is the process's own (its settings, data dir, logs, priority), and the egress
# adapter is the one way out to the network (docs/security.md): the sandbox's `http.fetch` and the
# tools file's MCP tools go through its policy, never around it.
ADAPTER_GROUPS = ("infrastructure.egress", "infrastructure.extraction", "infrastructure", "projections", "sandbox")
KERNEL = {"infrastructure.settings", "infrastructure.data_dir", "infrastructure.logs", "infrastructure.priority"}
# The embedder is shared too: the extraction workers embed a document's chunks with it and the File
# Search kind its query, with the same model (docs/kinds/file-search-tools.md).
SHARED_ADAPTERS = {"infrastructure.egress", "infrastructure.embeddings"}
# The one crossing besides: an audit import makes a new store, whose identity the read side keeps
# (projections/store_identity.py) so that a read model built from the old one is not taken for its.
CROSSINGS = {("infrastructure.audit", "projections.store_identity")}


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


def adapter_group(name: str) -> str | None:
    """The adapter a module is part of (the longest of `ADAPTER_GROUPS` it is in); None outside them."""
    return next((group for group in ADAPTER_GROUPS if name == group or name.startswith(group + ".")), None)


def _within(name: str, packages: set[str] | tuple[str, ...]) -> bool:
    return any(name == package or name.startswith(package + ".") for package in packages)


def forbidden_imports(graph: nx.DiGraph) -> list[str]:
    wrong = []
    for source, target in sorted(graph.edges):
        here, there = source.split(".")[0], target.split(".")[0]
        if here != there and there not in ALLOWED[here]:
            wrong.append(f"{source} imports {target} ({here} may import only {sorted(ALLOWED[here]) or 'itself'})")
        elif here == "console" and _within(target, CONSOLE_NEVER):
            wrong.append(f"{source} imports {target} (the console calls the application, never a REST route)")
        elif (ours := adapter_group(source)) and (theirs := adapter_group(target)) and ours != theirs and not (
            # `from infrastructure import settings` runs the top-level package's (empty) `__init__`: the
            # module it names is what counts.
            target == there or _within(target, KERNEL) or _within(target, SHARED_ADAPTERS) or (source, target) in CROSSINGS
        ):
            wrong.append(f"{source} imports {target} (the adapter {ours} may not use the adapter {theirs})")
    return wrong


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    return [sorted(component) for component in nx.strongly_connected_components(graph) if len(component) > 1]


def package_cycles(graph: nx.DiGraph) -> list[list[str]]:
    """Top-level packages that import each other back, through any of their modules. The kinds'
    packages span the layers by design (their part of each layer is held by the rules above), so
    they take no part in this one."""
    packages = nx.DiGraph()
    for source, target in graph.edges:
        here, there = source.split(".")[0], target.split(".")[0]
        if here != there and "toolkinds" not in (here, there):
            packages.add_edge(here, there)
    return cycles(packages)


def test_every_import_goes_down_the_layers() -> None:
    assert forbidden_imports(import_graph()) == []


def kind_package(name: str) -> str | None:
    """`toolkinds.<kind>` for a module of a kind's package; None for any other."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "toolkinds" and len(parts) > 2 else None


def test_no_module_imports_itself_back() -> None:
    # A cycle inside one kind's package is `test_kind_packages.py`'s to judge, with the package's layers.
    assert [c for c in cycles(import_graph()) if len({kind_package(m) for m in c}) > 1 or kind_package(c[0]) is None] == []


def test_no_package_imports_another_that_imports_it_back() -> None:
    assert package_cycles(import_graph()) == []


def test_the_walk_sees_what_it_must(tmp_path: Path) -> None:
    """The checks above can fail: an adapter importing the API or the application, a deferred
    import in a function, a relative import, a cycle through two modules, the console calling a
    REST route, one adapter using another, the API importing a kind, and two packages importing
    each other back are all found in a scratch tree; an adapter using the settings or the egress
    adapter is not."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "api" / "problems.py").write_text("X = 1\n")
    (tmp_path / "api" / "routes").mkdir()
    (tmp_path / "api" / "routes" / "__init__.py").write_text("")
    (tmp_path / "api" / "routes" / "tokens.py").write_text("def issue_token():\n    pass\n")
    (tmp_path / "api" / "tools.py").write_text("from toolkinds.hello import kind\n")
    (tmp_path / "application" / "tokens.py").write_text("")
    (tmp_path / "console" / "tokens.py").write_text("from api.routes.tokens import issue_token\n")
    (tmp_path / "sandbox" / "service.py").write_text("def f():\n    from api.problems import X\n    return X\n")
    (tmp_path / "domain" / "a.py").write_text("from . import b\n")
    (tmp_path / "domain" / "b.py").write_text("import domain.a\n")
    (tmp_path / "domain" / "model.py").write_text("from application import services\n")
    (tmp_path / "toolkinds" / "hello").mkdir()
    (tmp_path / "toolkinds" / "hello" / "__init__.py").write_text("")
    (tmp_path / "toolkinds" / "hello" / "kind.py").write_text("")
    for sub in ("egress", "extraction"):
        (tmp_path / "infrastructure" / sub).mkdir()
        (tmp_path / "infrastructure" / sub / "__init__.py").write_text("")
    (tmp_path / "infrastructure" / "settings.py").write_text("")
    (tmp_path / "infrastructure" / "egress" / "policy.py").write_text("from infrastructure import settings\n")
    (tmp_path / "infrastructure" / "extraction" / "pool.py").write_text("import projections.index\n")
    (tmp_path / "infrastructure" / "vault.py").write_text("from application.tokens import X\n")
    (tmp_path / "projections" / "index.py").write_text("")
    (tmp_path / "sandbox" / "net.py").write_text("from infrastructure.egress import policy\nfrom infrastructure import settings\n")
    (tmp_path / "sandbox" / "config.py").write_text("")
    (tmp_path / "infrastructure" / "limits.py").write_text("from sandbox.config import X\n")
    graph = import_graph(tmp_path)
    assert forbidden_imports(graph) == [
        "api.tools imports toolkinds.hello (api may import only ['application', 'domain', 'infrastructure', "
        "'projections', 'sandbox'])",
        "api.tools imports toolkinds.hello.kind (api may import only ['application', 'domain', 'infrastructure', "
        "'projections', 'sandbox'])",
        "console.tokens imports api.routes.tokens (the console calls the application, never a REST route)",
        "domain.model imports application (domain may import only itself)",
        "infrastructure.extraction.pool imports projections.index (the adapter infrastructure.extraction may not "
        "use the adapter projections)",
        "infrastructure.limits imports sandbox.config (the adapter infrastructure may not use the adapter sandbox)",
        "infrastructure.vault imports application.tokens (infrastructure may import only ['domain', 'infrastructure', "
        "'projections', 'sandbox'])",
        "sandbox.service imports api.problems (sandbox may import only ['domain', 'infrastructure', "
        "'projections', 'sandbox'])",
    ]
    assert cycles(graph) == [["domain.a", "domain.b"]]
    assert package_cycles(graph) == [["infrastructure", "sandbox"]]
