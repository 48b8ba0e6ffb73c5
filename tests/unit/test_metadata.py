"""Typed document metadata and search filters (issue 36 item 4, domain/metadata.py): what a value of
each type may be, how a date compares, every problem of a filter named by its path, and how a
filter reads a document's metadata (a key it lacks passes no comparison, `ne` and `nin` included)."""

from __future__ import annotations

import pytest

from domain.metadata import (
    MAX_DEPTH, MAX_KEYS, MAX_LISTED, MAX_NODES, MAX_STRING_CHARS, filter_violations, instant, matches, merged,
    schema_violations, values_violations,
)

SCHEMA = {"dept": "string", "year": "number", "draft": "boolean", "published": "date"}


def fields(violations: list) -> list[str]:
    return [v.field for v in violations]


def test_a_schema_names_each_bad_key_and_type() -> None:
    assert schema_violations(SCHEMA) == []
    assert fields(schema_violations({"a b": "string", "ok": "integer", "x" * 65: "string"})) == [
        "metadata.a b", "metadata.ok", "metadata." + "x" * 65]
    assert fields(schema_violations({f"k{i}": "string" for i in range(MAX_KEYS + 1)})) == ["metadata"]
    assert fields(schema_violations(["dept"])) == ["metadata"]


def test_values_are_checked_against_the_schema_and_dates_kept_normalised() -> None:
    kept, found = values_violations(SCHEMA, {"dept": "legal", "year": 2024, "draft": False, "published": "2024-05-01"})
    assert found == [] and kept == {"dept": "legal", "year": 2024, "draft": False, "published": "2024-05-01"}
    kept, _ = values_violations(SCHEMA, {"published": "2024-05-01T10:00:00+02:00"})
    assert kept == {"published": "2024-05-01T08:00:00Z"}
    kept, _ = values_violations(SCHEMA, {"published": "2024-05-01T10:00:00"})  # no offset: UTC
    assert kept == {"published": "2024-05-01T10:00:00Z"}
    _, found = values_violations(SCHEMA, {"dept": 3, "year": True, "draft": "no", "published": "May 1st", "colour": "red",
                                          "title": "x" * (MAX_STRING_CHARS + 1)})
    assert sorted(fields(found)) == sorted(["metadata.dept", "metadata.year", "metadata.draft", "metadata.published",
                                            "metadata.colour", "metadata.title"])
    [unknown] = [v for v in found if v.field == "metadata.colour"]
    assert "dept" in unknown.message  # says which keys there are
    assert fields(values_violations(SCHEMA, {"year": float("nan")})[1]) == ["metadata.year"]
    assert fields(values_violations(SCHEMA, {"published": "2024-02-30"})[1]) == ["metadata.published"]
    assert fields(values_violations(SCHEMA, "dept=legal")[1]) == ["metadata"]


def test_a_merge_patch_sets_and_removes_keys() -> None:
    assert merged({"dept": "legal", "year": 2020}, {"year": None, "draft": True}) == {"dept": "legal", "draft": True}


def test_dates_compare_as_the_instant_they_name() -> None:
    assert instant("2024-05-01") == instant("2024-05-01T00:00:00Z")
    late_evening = {"published": "2024-04-30T23:30:00Z"}  # 2024-05-01T01:30+02:00, still April in UTC
    assert matches(SCHEMA, {"type": "lt", "key": "published", "value": "2024-05-01"}, late_evening)
    assert not matches(SCHEMA, {"type": "gte", "key": "published", "value": "2024-05-01T00:00:00+00:00"}, late_evening)
    assert matches(SCHEMA, {"type": "gt", "key": "published", "value": instant("2024-04-30")}, late_evening)  # Unix seconds


def test_each_operator_and_a_missing_key() -> None:
    doc = {"dept": "legal", "year": 2021, "draft": False}
    cases = [("eq", "dept", "legal", True), ("eq", "dept", "Legal", False), ("ne", "dept", "hr", True),
             ("gt", "year", 2021, False), ("gte", "year", 2021, True), ("lt", "year", 2021.5, True), ("lte", "year", 2020, False),
             ("in", "dept", ["hr", "legal"], True), ("nin", "dept", ["hr", "legal"], False), ("eq", "draft", False, True)]
    for op, key, value, expected in cases:
        assert matches(SCHEMA, {"type": op, "key": key, "value": value}, doc) is expected, (op, key, value)
    # No `published` in this document: no comparison on it passes, not even ne or nin.
    for op, value in (("eq", "2024-01-01"), ("ne", "2024-01-01"), ("nin", ["2024-01-01"]), ("lt", "2999-01-01")):
        assert not matches(SCHEMA, {"type": op, "key": "published", "value": value}, doc)
    both = {"type": "and", "filters": [{"type": "eq", "key": "dept", "value": "legal"},
                                       {"type": "or", "filters": [{"type": "lt", "key": "year", "value": 2000},
                                                                  {"type": "eq", "key": "draft", "value": False}]}]}
    assert matches(SCHEMA, both, doc) and not matches(SCHEMA, both, {**doc, "draft": True})


@pytest.mark.parametrize(("given", "field"), [
    ({"type": "eq", "key": "colour", "value": "red"}, "input.filters.key"),
    ({"type": "eq", "key": "year", "value": "2024"}, "input.filters.value"),
    ({"type": "gt", "key": "dept", "value": "a"}, "input.filters.type"),
    ({"type": "gt", "key": "draft", "value": True}, "input.filters.type"),
    ({"type": "in", "key": "dept", "value": "legal"}, "input.filters.value"),
    ({"type": "in", "key": "dept", "value": []}, "input.filters.value"),
    ({"type": "in", "key": "dept", "value": ["x"] * (MAX_LISTED + 1)}, "input.filters.value"),
    ({"type": "in", "key": "year", "value": [1, "two"]}, "input.filters.value[1]"),
    ({"type": "eq", "key": "published", "value": "yesterday"}, "input.filters.value"),
    ({"type": "eq", "key": "dept"}, "input.filters.value"),
    ({"type": "like", "key": "dept", "value": "x"}, "input.filters.type"),
    ({"type": "eq", "key": "dept", "value": "x", "extra": 1}, "input.filters.extra"),
    ({"type": "and", "filters": []}, "input.filters.filters"),
    ({"type": "or", "filters": [{"type": "eq", "key": "dept", "value": "x"}, {"type": "eq", "key": "nope", "value": 1}]},
     "input.filters.filters[1].key"),
    ("dept = legal", "input.filters"),
])
def test_every_problem_of_a_filter_is_named_by_its_path(given: object, field: str) -> None:
    found = filter_violations(SCHEMA, given)
    assert field in fields(found), found


def test_depth_and_size_are_capped() -> None:
    leaf = {"type": "eq", "key": "dept", "value": "x"}
    deep: dict = leaf
    for _ in range(MAX_DEPTH):
        deep = {"type": "and", "filters": [deep]}
    assert [v for v in filter_violations(SCHEMA, deep) if "levels" in v.message]
    shallow = leaf
    for _ in range(MAX_DEPTH - 1):
        shallow = {"type": "and", "filters": [shallow]}
    assert filter_violations(SCHEMA, shallow) == []
    wide = {"type": "or", "filters": [leaf] * MAX_NODES}
    assert fields(filter_violations(SCHEMA, wide)) == ["input.filters"]
    assert filter_violations(SCHEMA, {"type": "or", "filters": [leaf] * (MAX_NODES - 1)}) == []
