"""A bundle's order (R6) is repeatable: the same modules in the same order whatever the order in
which a module lists its imports, and an import cycle is refused rather than cut."""

from __future__ import annotations

import pytest

from domain.graph import bundle_order


def test_the_order_does_not_depend_on_how_the_imports_are_listed() -> None:
    listed = {"app": ["zeta", "alpha", "mid"], "mid": ["alpha"], "zeta": [], "alpha": []}
    reordered = {"app": ["mid", "alpha", "zeta"], "mid": ["alpha"], "zeta": [], "alpha": []}
    assert bundle_order(listed, "app") == bundle_order(reordered, "app") == ["zeta", "alpha", "mid", "app"]


def test_a_module_imported_twice_is_in_the_bundle_once() -> None:
    assert bundle_order({"app": ["dates", "dates"], "dates": []}, "app") == ["dates", "app"]


def test_an_import_cycle_is_refused_not_cut() -> None:
    with pytest.raises(ValueError, match="cycle"):
        bundle_order({"app": ["a"], "a": ["b"], "b": ["a"]}, "app")
