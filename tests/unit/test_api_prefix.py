"""`/api/v1` is written once (issue 29, 4): in `api/paths.py`, which every router, path rule and link
uses. A string of the product's code that spells it out is a second copy (docstrings and comments
may name a route: they are read by people, not matched)."""

from __future__ import annotations

import ast
from pathlib import Path

from api.paths import ADMIN_API, API_V1, OPERATOR_API

ROOT = Path(__file__).resolve().parents[2]
# The kinds' packages are their owners' to move onto the constants (their routers still spell it out).
PACKAGES = ("entrypoints", "api", "console", "application", "domain", "infrastructure", "projections", "sandbox", "toolkinds")
HOME = ROOT / "api" / "paths.py"


def docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def spelled_out(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES, home: Path = HOME) -> list[str]:
    """Each string of code (not a docstring) that holds `api/v1`, as `path:line`."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if path == home:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            skip = docstrings(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip and "api/v1" in node.value:
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_the_prefix_is_written_once() -> None:
    assert spelled_out() == []


def test_the_constants_say_where_the_api_is() -> None:
    assert (API_V1, ADMIN_API, OPERATOR_API) == ("/api/v1", "/api/v1/admin", "/api/v1/operator")


def test_a_copy_is_found_and_a_docstring_is_not(tmp_path: Path) -> None:
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "paths.py").write_text('API_V1 = "/api/v1"\n')
    (tmp_path / "api" / "routes.py").write_text('"""GET /api/v1/tools: the tools."""\nPREFIX = "/api/v1/tools"\n'
                                               'LINK = f"http://host/api/v1/x{1}"\n')
    assert spelled_out(tmp_path, ("api",), tmp_path / "api" / "paths.py") == ["api/routes.py:2", "api/routes.py:3"]
