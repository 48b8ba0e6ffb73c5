"""The edges' JSON limits: depth without recursion, lone surrogates found by path and replaced."""

from __future__ import annotations

from domain.values import MAX_DEPTH, lone_surrogate_at, too_deep, well_formed


def nested(levels: int) -> object:
    value: object = "leaf"
    for i in range(levels):
        value = [value] if i % 2 else {"k": value}
    return value


def test_depth_counts_containers_and_allows_exactly_the_limit() -> None:
    assert not too_deep("text")
    assert not too_deep(nested(MAX_DEPTH))
    assert too_deep(nested(MAX_DEPTH + 1))


def test_a_value_far_deeper_than_the_recursion_limit_is_measured_without_recursing() -> None:
    assert too_deep(nested(200_000))


def test_a_lone_surrogate_is_found_by_its_path_in_values_and_keys() -> None:
    body = {"id": "a", "tool": {"inputParameters": [{"name": "x"}, {"name": "y\ud800"}]}}
    assert lone_surrogate_at(body) == "tool.inputParameters[1].name"
    assert lone_surrogate_at({"ok": 1, "k\udfff": 2}) == "k\\udfff"  # the path itself stays printable
    assert lone_surrogate_at("\ud800") == "body"
    assert lone_surrogate_at({"emoji": "\U0001f600"}) is None  # a pair is one character, not a surrogate


def test_well_formed_replaces_each_lone_surrogate_with_the_replacement_character() -> None:
    assert well_formed({"a\ud800": ["x\udc00y", 2, None]}) == {"a\ufffd": ["x\ufffdy", 2, None]}
