"""The import graph (R5, R6, R10): cycles, who must be re-checked at publish, and bundle order."""

from __future__ import annotations

from domain.graph import bundle_order, cycle_through, find_cycle, transitive_importers, with_edges


def assert_closed_path(path: list[str] | None, edges: dict[str, list[str]]) -> None:
    """`path` starts and ends on one module and follows real import edges."""
    assert path is not None
    assert len(path) >= 2
    assert path[0] == path[-1]
    for importer, dependency in zip(path, path[1:]):
        assert dependency in edges[importer], f"{importer} -> {dependency} is not an edge"


# -- cycles (R5) -----------------------------------------------------------------------------------


def test_a_two_module_cycle_is_a_closed_path_through_the_given_module() -> None:
    edges = {"a": ["b"], "b": ["a"]}
    path = find_cycle(edges, through="a")
    assert_closed_path(path, edges)
    assert path is not None
    assert path[0] == "a"
    assert set(path) == {"a", "b"}


def test_the_cycle_starts_at_whichever_module_is_named() -> None:
    edges = {"a": ["b"], "b": ["a"]}
    assert find_cycle(edges, through="b") == ["b", "a", "b"]


def test_a_longer_cycle_names_every_module_on_it() -> None:
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "lib": []}
    path = find_cycle(edges, through="c")
    assert_closed_path(path, edges)
    assert path == ["c", "a", "b", "c"]


def test_a_self_import_is_a_cycle_of_one_module() -> None:
    assert find_cycle({"a": ["a"]}, through="a") == ["a", "a"]


def test_an_acyclic_graph_has_no_cycle() -> None:
    edges = {"app": ["report", "dates"], "report": ["dates"], "dates": []}
    assert find_cycle(edges, through="app") is None
    assert find_cycle(edges) is None


def test_a_cycle_elsewhere_is_found_when_none_passes_through_the_module() -> None:
    edges = {"lone": [], "a": ["b"], "b": ["a"]}
    path = find_cycle(edges, through="lone")
    assert_closed_path(path, edges)


def test_a_module_unknown_to_the_graph_still_finds_an_existing_cycle() -> None:
    edges = {"a": ["b"], "b": ["a"]}
    assert_closed_path(find_cycle(edges, through="missing"), edges)
    assert find_cycle({"a": []}, through="missing") is None


# -- the cycle new imports would close (R5, at save and publish) -----------------------------------


def test_a_draft_that_closes_a_cycle_names_it_from_the_module() -> None:
    # report imports dates; a draft of dates would import report
    published = {"report": ["dates"], "dates": []}
    assert cycle_through(published, "dates", []) is None
    assert cycle_through(published, "dates", ["report"]) == ["dates", "report", "dates"]


def test_the_cycle_named_follows_the_imports_in_order_as_networkx_does() -> None:
    published = {"a": ["b", "c"], "b": ["lib"], "c": ["d"], "d": ["top"], "lib": []}
    path = cycle_through(published, "top", ["lib", "a"])
    assert path == find_cycle(with_edges(published, "top", ["lib", "a"]), through="top")
    assert path == ["top", "a", "c", "d", "top"]


def test_new_imports_that_reach_back_only_through_other_branches_close_no_cycle() -> None:
    published = {"app": ["report", "dates"], "report": ["dates"], "dates": [], "other": ["app"]}
    assert cycle_through(published, "report", ["dates"]) is None
    assert cycle_through(published, "new", ["app", "report"]) is None


def test_the_search_visits_only_what_the_new_imports_reach() -> None:
    class Counting(dict[str, list[str]]):
        looked_up: list[str] = []

        def get(self, key: str, default: object = None) -> object:
            self.looked_up.append(key)
            return super().get(key, default)

    published = Counting({f"m{i}": [f"m{i + 1}"] for i in range(1_000)} | {"lib": [], "user": ["lib"]})
    assert cycle_through(published, "lib", ["m998"]) is None
    assert sorted(published.looked_up) == ["m1000", "m998", "m999"]


# -- transitive importers (R10) --------------------------------------------------------------------


def transitive_importers_in(edges: dict[str, list[str]], module: str) -> list[str]:
    """`transitive_importers` with the reverse index built here, as the graph aggregate keeps it."""
    importers: dict[str, set[str]] = {}
    for importer, imports in edges.items():
        for name in imports:
            importers.setdefault(name, set()).add(importer)
    return transitive_importers(importers, edges, module)


def test_transitive_importers_lists_direct_and_indirect_importers() -> None:
    # lib <- a <- b, and lib <- c; `other` does not import lib
    edges = {"lib": [], "a": ["lib"], "b": ["a"], "c": ["lib"], "other": []}
    importers = transitive_importers_in(edges, "lib")
    assert sorted(importers) == ["a", "b", "c"]
    assert importers.index("a") < importers.index("b")


def test_each_importer_comes_after_the_modules_it_imports() -> None:
    edges = {"lib": [], "top": ["mid", "lib"], "mid": ["base"], "base": ["lib"], "side": ["base"]}
    importers = transitive_importers_in(edges, "lib")
    assert sorted(importers) == ["base", "mid", "side", "top"]
    for module in importers:
        for dependency in edges[module]:
            if dependency in importers:
                assert importers.index(dependency) < importers.index(module), (dependency, module)


def test_transitive_importers_excludes_the_module_itself_and_its_dependencies() -> None:
    edges = {"dates": [], "report": ["dates"], "app": ["report"]}
    assert transitive_importers_in(edges, "report") == ["app"]


def test_a_module_nobody_imports_has_no_importers() -> None:
    assert transitive_importers_in({"a": [], "b": ["a"]}, "b") == []
    assert transitive_importers_in({"a": []}, "missing") == []


def test_transitive_importers_walks_only_the_importers() -> None:
    edges = {f"m{i}": [f"m{i + 1}"] for i in range(1_000)} | {"lib": [], "a": ["lib"], "b": ["a"]}
    importers = {"lib": {"a"}, "a": {"b"}}  # the reverse index holds only what imports lib's side
    assert transitive_importers(importers, edges, "lib") == ["a", "b"]


def test_transitive_importers_is_repeatable() -> None:
    edges = {"lib": [], "z": ["lib"], "y": ["lib"], "x": ["lib"]}
    assert transitive_importers_in(edges, "lib") == transitive_importers_in(dict(reversed(list(edges.items()))), "lib")


# -- bundle order (R6) -----------------------------------------------------------------------------


def test_bundle_order_puts_dependencies_first_and_the_module_last() -> None:
    edges = {"app": ["report", "dates"], "report": ["dates"], "dates": []}
    assert bundle_order(edges, "app") == ["dates", "report", "app"]


def test_bundle_order_includes_only_what_the_module_needs() -> None:
    edges = {"report": ["dates"], "dates": [], "unrelated": ["dates"], "app": ["report"]}
    assert bundle_order(edges, "report") == ["dates", "report"]


def test_bundle_order_keeps_every_dependency_before_its_importer() -> None:
    edges = {"top": ["a", "b"], "a": ["c"], "b": ["c", "d"], "c": ["d"], "d": []}
    order = bundle_order(edges, "top")
    assert sorted(order) == ["a", "b", "c", "d", "top"]
    assert order[-1] == "top"
    for module in order:
        for dependency in edges[module]:
            assert order.index(dependency) < order.index(module), (dependency, module)


def test_a_module_without_imports_is_a_bundle_of_itself() -> None:
    assert bundle_order({"dates": []}, "dates") == ["dates"]
    assert bundle_order({}, "draft") == ["draft"]


# -- with_edges ------------------------------------------------------------------------------------


def test_with_edges_replaces_only_the_named_modules_imports() -> None:
    edges = {"report": ["dates"], "app": ["report"], "dates": []}
    assert with_edges(edges, "app", ["dates"]) == {"report": ["dates"], "app": ["dates"], "dates": []}


def test_with_edges_adds_a_module_the_graph_did_not_have() -> None:
    assert with_edges({"dates": []}, "report", ["dates"]) == {"dates": [], "report": ["dates"]}


def test_with_edges_is_a_view_that_leaves_its_input_alone() -> None:
    edges = {"report": ["dates"], "app": ["report"]}
    changed = with_edges(edges, "app", ["dates"])
    assert not hasattr(changed, "__setitem__")
    assert (changed["app"], len(changed), edges) == (["dates"], 2, {"report": ["dates"], "app": ["report"]})


def test_with_edges_does_not_keep_the_callers_import_list() -> None:
    imports = ["dates"]
    changed = with_edges({}, "report", imports)
    imports.append("later")
    assert changed == {"report": ["dates"]}
