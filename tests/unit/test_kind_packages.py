"""A kind of tool is one package (issue 29, 1): `toolkinds/<kind>/` holds everything of the kind, and
nothing outside it names it but its one line in the registry (`entrypoints/kinds.py`). The core asks
the registered kinds (`api/kinds.py: KindPlugin`, `application/kinds/base.py: ToolKind`) instead.

What counts, over every production file (api, application, console, domain, entrypoints,
infrastructure, projections, sandbox, toolkinds):

- **Importing** a kind: any import of `toolkinds.<kind>` (or of one of its modules) anywhere in a
  file outside that kind's package and the registry, at the top, inside a function or under
  `TYPE_CHECKING` alike. One kind's package importing another's counts too. This holds for every
  kind.
- **Naming** a kind, for the configured kinds (API URL tools and File Search tools), in code: not in
  comments or docstrings, which may say what they like (a docstring saying that File Search tools
  exist is prose; code that branches on one is coupling). A file names the kind when its code holds
  * its call type (`API_URL`) in a string literal, or the name of a constant of the package whose
    value is the call type;
  * its route segment (`api-tools`, from its REST and console routes) in a string literal, as a
    segment of a path (not as part of a longer word);
  * the name of a class its package defines (`ApiTool`, `SearchToolKind`, `Files`, …) as a name or
    attribute in code, unless a class of that name is also defined outside the package (then the
    name is not the kind's).

The code-module kind is the product's core: the `CodeModule` aggregate, imports, publishing and
changesets live in `domain/` and `application/`, and API URL tools post-process with modules, so
the word "module" is everywhere by right. Its package holds its `ToolKind`, REST routes, console
pages and templates: imports of `toolkinds.code` are checked as every kind's, its words are not.

Each package's files also keep their layer (the layering test covers the top-level packages; this
one the files inside a kind): `model.py` imports no product code but `domain`, `kind.py` neither
FastAPI, Starlette, the API, the console nor the entry points, `routes.py` not the console;
`pages.py` may use the console.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = ("api", "application", "console", "domain", "entrypoints", "infrastructure", "projections", "sandbox",
              "toolkinds")
KINDS_DIR = "toolkinds"
REGISTRY = Path("entrypoints/kinds.py")
# The kinds whose words are checked as well as their imports (see the module's docstring).
CONFIGURED = ("api_tools", "search_tools")


def kinds(root: Path = ROOT) -> list[str]:
    return sorted(p.parent.name for p in (root / KINDS_DIR).glob("*/plugin.py"))


def production_files(root: Path = ROOT) -> Iterator[Path]:
    for package in PRODUCTION:
        for path in sorted((root / package).rglob("*.py")):
            yield path.relative_to(root)


def owner(path: Path) -> str | None:
    """The kind whose package holds `path`, or None."""
    parts = path.parts
    return parts[1] if len(parts) > 2 and parts[0] == KINDS_DIR else None


def parse(root: Path, path: Path) -> ast.Module:
    return ast.parse((root / path).read_text(encoding="utf-8"), filename=str(path))


def imported(tree: ast.Module, path: Path) -> Iterator[tuple[int, str]]:
    """Every module name an import in `tree` reaches (relative imports resolved), with its line."""
    package = ".".join(path.with_suffix("").parts[:-1] if path.name != "__init__.py" else path.parent.parts)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def imports_of_kinds(root: Path = ROOT) -> list[str]:
    """Where a file imports a kind's package without being that package or the registry."""
    found = []
    names = kinds(root)
    for path in production_files(root):
        if path == REGISTRY:
            continue
        here = owner(path)
        for line, target in imported(parse(root, path), path):
            parts = target.split(".")
            if parts[0] == KINDS_DIR and len(parts) > 1 and parts[1] in names and parts[1] != here:
                found.append(f"{path}:{line} imports {target}")
    return sorted(set(found))


# -- naming ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Words:
    """What names one configured kind in code (see the module's docstring)."""

    kind: str
    call_type: str
    segments: frozenset[str]  # its route segments: `api-tools`
    identifiers: frozenset[str]  # its classes, and its constants holding the call type

    def in_string(self, text: str) -> str | None:
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(self.call_type)}(?![A-Za-z0-9_])", text):
            return self.call_type
        for segment in self.segments:
            if re.search(rf"(?<![A-Za-z0-9_-]){re.escape(segment)}(?![A-Za-z0-9_-])", text):
                return segment
        return None


def _defined(root: Path, paths: list[Path]) -> tuple[set[str], dict[str, str]]:
    """The classes the files define at their top level, and their constants' string values."""
    classes: set[str] = set()
    constants: dict[str, str] = {}
    for path in paths:
        for node in parse(root, path).body:
            if isinstance(node, ast.ClassDef):
                classes.add(node.name)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        constants[target.id] = node.value.value
    return classes, constants


def words_of(kind: str, root: Path = ROOT) -> Words:
    """The call type and route segments the registered plugin says, and the names its package defines."""
    from entrypoints.kinds import DEFAULT_KINDS

    plugin = next(p for p in DEFAULT_KINDS if p.kind.__module__.split(".")[1] == kind)
    prefixes = [router.prefix for router in (*plugin.routers, *plugin.console)] + [plugin.page or ""]
    segments = {segment for prefix in prefixes for segment in prefix.split("/")
                if segment and segment not in ("api", "v1", "admin", "console", "{}") and "{" not in segment}
    files = list(production_files(root))
    inside = [p for p in files if owner(p) == kind]
    outside = [p for p in files if owner(p) != kind]
    classes, constants = _defined(root, inside)
    elsewhere, _ = _defined(root, outside)
    # A private class (`_Failed`) is its module's own business, whatever another module calls its own.
    identifiers = {c for c in classes - elsewhere if not c.startswith("_")} | {
        name for name, value in constants.items() if value == plugin.call_type}
    return Words(kind, plugin.call_type, frozenset(segments), frozenset(identifiers))


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the string constants that are docstrings (of the module, a class or a function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def namings(words: Words, root: Path = ROOT) -> list[str]:
    """Where code outside the kind's package and the registry names the kind."""
    found = []
    for path in production_files(root):
        if path == REGISTRY or owner(path) == words.kind:
            continue
        tree = parse(root, path)
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                word = words.in_string(node.value)
                if word is not None:
                    found.append(f"{path}:{node.lineno} says {word!r} in {node.value[:60]!r}")
            elif isinstance(node, ast.Name) and node.id in words.identifiers:
                found.append(f"{path}:{node.lineno} names {node.id}")
            elif isinstance(node, ast.Attribute) and node.attr in words.identifiers:
                found.append(f"{path}:{node.lineno} names .{node.attr}")
            elif isinstance(node, ast.alias) and node.name.rpartition(".")[2] in words.identifiers:
                found.append(f"{path} imports the name {node.name}")
    return sorted(set(found))


# -- each file's layer -----------------------------------------------------------------------------

# What each file of a kind's package may not import, by its name (product packages and frameworks).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "kind.py": ("fastapi", "starlette", "api", "console", "entrypoints"),
    "routes.py": ("console",),
}
# A kind's console pages reach the application one way only, never through a REST route's
# function: what both need (request bodies, `public`) is the package's `schemas.py`.
CONSOLE_FILES = ("pages.py", "form.py")


def layer_breaks(root: Path = ROOT) -> list[str]:
    found = []
    for path in production_files(root):
        if owner(path) is None:
            continue
        for line, target in imported(parse(root, path), path):
            top = target.split(".")[0]
            if path.name == "model.py" and top in PRODUCTION and top != "domain":
                found.append(f"{path}:{line} imports {target} (a model imports the domain only)")
            if top in FORBIDDEN.get(path.name, ()):
                found.append(f"{path}:{line} imports {target} (not in a kind's {path.name})")
            if path.name in CONSOLE_FILES and (target.endswith(".routes") or target.startswith("api.routes")):
                found.append(f"{path}:{line} imports {target} (a kind's pages call the application, never a REST route)")
    return sorted(set(found))


# -- the tests -------------------------------------------------------------------------------------


def test_the_registry_lists_every_kind_package() -> None:
    from entrypoints.kinds import DEFAULT_KINDS

    registered = {plugin.kind.__module__.split(".")[1] for plugin in DEFAULT_KINDS}
    assert registered == set(kinds()), "every toolkinds/<kind>/ with a plugin.py is one line of entrypoints/kinds.py"
    assert set(CONFIGURED) <= registered


def test_nothing_outside_a_kind_and_the_registry_imports_it() -> None:
    assert imports_of_kinds() == []


@pytest.mark.parametrize("kind", CONFIGURED)
def test_nothing_outside_a_configured_kind_names_it(kind: str) -> None:
    words = words_of(kind)
    # What the test looks for is what the kind is called by: a test that finds nothing to look for proves nothing.
    assert words.call_type and words.segments and words.identifiers
    assert namings(words) == []


def test_each_file_of_a_kind_keeps_its_layer() -> None:
    assert layer_breaks() == []


def test_the_checks_see_an_import_and_a_name_anywhere(tmp_path: Path) -> None:
    """The checks themselves: an import inside a function, a route segment in a string and a
    class name in code are found; the same words in a comment or a docstring are not."""
    (tmp_path / "toolkinds" / "api_tools").mkdir(parents=True)
    (tmp_path / "toolkinds" / "api_tools" / "plugin.py").write_text("")
    (tmp_path / "toolkinds" / "api_tools" / "model.py").write_text("import application.store\nclass OnlyHere: ...\n")
    (tmp_path / "application").mkdir()
    (tmp_path / "application" / "core.py").write_text(
        '"""Mentions API_URL, api-tools and OnlyHere in prose."""\n'
        "# and in a comment: toolkinds.api_tools\n"
        "def f():\n"
        "    from toolkinds.api_tools import model\n"
        '    return "/api/v1/admin/api-tools/x", OnlyHere, "API_URL"\n')
    assert imports_of_kinds(tmp_path) == ["application/core.py:4 imports toolkinds.api_tools",
                                          "application/core.py:4 imports toolkinds.api_tools.model"]
    words = Words("api_tools", "API_URL", frozenset({"api-tools"}), frozenset({"OnlyHere"}))
    assert namings(words, tmp_path) == ["application/core.py:5 names OnlyHere",
                                        "application/core.py:5 says 'API_URL' in 'API_URL'",
                                        "application/core.py:5 says 'api-tools' in '/api/v1/admin/api-tools/x'"]
    assert layer_breaks(tmp_path) == ["toolkinds/api_tools/model.py:1 imports application.store (a model imports the domain only)"]
