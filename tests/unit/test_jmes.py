"""JMESPath, bounded (issue 28, `domain.jmes`): jmespath's own answers for ordinary expressions, and
an expression that multiplies its answer stopped early, quickly and with little memory.

The budgets are the tests' own (`budget=`, `seconds=`, a clock that is a counter): nothing here
depends on how fast the machine is.
"""

from __future__ import annotations

import itertools
import json
import tracemalloc
from typing import Any

import jmespath
import jmespath.exceptions
import pytest

from domain import jmes

DATA: dict[str, Any] = {
    "a": {"b": [1, 2, 3], "c": "x", "d": None, "e": {"f": [{"g": 1}, {"g": 2}]}},
    "items": [{"id": i, "name": f"name {i}", "active": i % 2 == 0, "tags": [f"t{i}", "u"], "n": {"v": i * 1.5}} for i in range(6)],
    "s": "héllo \"quoted\"",
    "m": [[1, 2], [3, [4, 5]], 6],
    "empty": [],
}

ORDINARY = [
    "a.b", "a.b[0]", "a.b[-1]", "a.b[1:]", "a.b[::-1]", "a.b[::2]", "a.e.f[*].g", "a.nope.deeper",
    "items[*].id", "items[?active].name", "items[?id > `2`].tags[0]", "items[?n.v >= `3.0`] | [0].id",
    "items[].tags[]", "m[]", "m[][]", "*.c", "a.*", "a.e.f[].g", "items[*].n.*",
    "[a.b, s]", "{x: a.c, y: items[0].n, z: a.b[1]}", "items[*].{id: id, name: name}", "items[?active].{id: id, name: name}",
    "items[*].[id, name]", "[@, @]", "a.[b, c].[@, @]", "{all: @}.all.a.c",
    "length(items)", "length(s)", "join(', ', items[*].name)", "to_string(a)", "to_string(s)", "to_number('12')",
    "sort_by(items, &n.v)[-1].id", "max_by(items, &id).name", "min_by(items, &id).name", "map(&id, items)",
    "merge(a, `{\"z\": 1}`)", "keys(a)", "values(a.e)", "sort(a.b)", "reverse(s)", "reverse(a.b)",
    "contains(a.b, `2`)", "contains(s, 'llo')", "contains(items, items[0])", "not_null(nope, a.d, s)",
    "a.b == `[1, 2, 3]`", "[a.b, a.b] == [a.b, a.b]", "items[0] != items[1]", "to_array(s)", "to_array(a.b)",
    "abs(`-3`)", "avg(a.b)", "sum(a.b)", "max(a.b)", "min(items[*].name)", "ceil(`1.2`)", "floor(`1.8`)",
    "type(a)", "type(a.d)", "items[0].n.v || 'x'", "a.d || 'fallback'", "!s", "!empty", "a && s", "empty && s",
    "nope", "`[]`", "starts_with(s, 'h')", "ends_with(s, '\"')", "a.b | [0]", "items[?contains(tags, 'u')] | length(@)",
    "items[?!active].id", "items[?active && id > `1`].id", "items[?active || id == `1`].id", "a.b[?@ > `1`]",
    "items[*].tags[?@ == 'u'] | []", "m[*][0]", "a.e.f[?g == `2`] | [0].g", "`\"literal\"`", "'raw'",
]


@pytest.mark.parametrize("expression", ORDINARY)
def test_an_ordinary_expression_gives_exactly_jmespaths_answer(expression: str) -> None:
    assert jmes.search(expression, DATA, budget=100_000) == jmespath.search(expression, DATA)
    assert jmes.expression_problem(expression) is None


def hostile(steps: int) -> str:
    return "b" + ".[@,@]" * steps


@pytest.mark.parametrize("expression", [
    hostile(30),                                       # references: the written answer doubles at each step
    "b" + ".[@,@][]" * 30,                             # a flatten: the list itself doubles
    "b" + ".join('', [@,@])" * 30,                     # a text that doubles
    "to_string(" + hostile(30) + ")",                  # written out whole in C
    "b" + ".{l: @, r: @}" * 30,                        # objects
    hostile(30) + " == " + hostile(30),                # compared whole in C
    "contains([" + hostile(30) + "], " + hostile(29) + ")",
    "b" + ".[@,@,@,@,@,@,@,@,@,@]" * 9,
])
def test_an_expression_that_multiplies_its_answer_is_stopped_early_with_little_memory(expression: str) -> None:
    budget = jmes.budget_for(answer_chars=12, max_output_chars=1_000)
    tracemalloc.start()
    try:
        with pytest.raises(jmes.Stopped, match="builds more from this answer than its bound"):
            jmes.search(expression, {"b": "xx"}, budget=budget, seconds=600)  # the budget stops it, not the clock
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # plain jmespath holds (or writes out) 2**30 values for most of these
    assert peak < 16 * 1_048_576, peak


def test_the_bound_is_the_answers_size_and_the_output_cap() -> None:
    assert jmes.budget_for(answer_chars=1_000, max_output_chars=20_000) == jmes.BUDGET_FACTOR * 21_000
    # the budget counts everything built on the way: here 40 002 values (the pairs, the flattened lists)
    answer = {"b": list(range(1_000))}
    expression = "b.[@,@][].[@,@][].[@,@][]"
    assert len(jmes.search(expression, answer, budget=40_002)) == 8_000
    with pytest.raises(jmes.Stopped):
        jmes.search(expression, answer, budget=40_001)


def test_an_evaluation_past_its_deadline_is_stopped() -> None:
    ticks = itertools.count()  # a clock that moves one second each time it is read
    data = {"items": [{"id": i} for i in range(1_000)]}
    with pytest.raises(jmes.Stopped, match="time limit of 5 s"):
        jmes.search("items[*].[@, @]", data, budget=10**9, seconds=5, clock=lambda: float(next(ticks)))
    assert jmes.search("items[*].[@, @]", data, budget=10**9, seconds=10**6, clock=lambda: float(next(ticks)))[0] == [{"id": 0}] * 2


@pytest.mark.parametrize(("expression", "data", "says"), [
    ("a[::0]", {"a": [1, 2]}, "slice step cannot be zero"),
    ("contains('abc', `1`)", {}, "requires string"),
    ("length(`1`)", {}, "invalid type"),
    ("nosuchfunction(@)", {}, "Unknown function"),
    ("(" * 500 + "a" + ")" * 500, {"a": 1}, "nested too deeply"),
])
def test_what_jmespath_cannot_evaluate_is_a_failure_not_a_crash(expression: str, data: Any, says: str) -> None:
    with pytest.raises(jmes.Failed, match=says):
        jmes.search(expression, data, budget=100_000)


@pytest.mark.parametrize(("expression", "says"), [
    ("a[::0]", "slice step of 0"),
    ("a[1:5:0]", "slice step of 0"),
    ("(" * 500 + "a" + ")" * 500, "nested too deeply"),
    ("a" + " | b" * 100, "nests more than 64 levels"),
    ("[" * 100 + "a" + "]" * 100, "nests more than 64 levels"),
    (hostile(30), "multiplies its input more than 1024 times"),
    (hostile(11), "multiplies its input more than 1024 times"),
    ("b" + ".{l: @, r: @}" * 11, "multiplies its input more than 1024 times"),
    ("map(&[@,@,@,@], " + hostile(9) + ")", "multiplies its input more than 1024 times"),
    ("foo[?", "does not compile"),
])
def test_a_hostile_shape_is_refused_at_save(expression: str, says: str) -> None:
    problem = jmes.expression_problem(expression)
    assert problem is not None and says in problem


def test_ordinary_shapes_are_accepted_at_save() -> None:
    assert jmes.expression_problem(hostile(10)) is None  # 1024 times
    assert jmes.expression_problem("items[*].{" + ", ".join(f"f{i}: f{i}" for i in range(200)) + "}") is None
    assert jmes.expression_problem("a" + ".b" * 300) is None  # a chain of fields is one node


VALUES: list[Any] = [
    [], {}, [[]], {"a": []}, {"a": 1, "b": "x\"y\n\u00e9\u2028\ud800"}, [1, 2.5, True, False, None, float("nan"), -1e300, 10**30],
    "s" * 300, ["s" * 300] * 3, {"k": {"j": [1, {}]}}, [{"id": 1, "n": "x"}] * 3, {1: 2, "a": 3}, {True: 1}, {None: []},
    DATA, jmespath.search(hostile(6), {"b": DATA}),
]


@pytest.mark.parametrize("value", VALUES)
def test_the_serialized_length_and_prefix_are_jsons_own(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert jmes.serialized_length(value) == len(text)
    for limit in (0, 1, 7, len(text) // 2, len(text), len(text) + 5):
        assert jmes.serialized_prefix(value, limit) == text[:limit]


def test_a_result_of_references_is_measured_and_cut_without_being_written_out() -> None:
    result = jmespath.search(hostile(40), {"b": "x" * 100})  # 2**40 references, 40 lists held
    tracemalloc.start()
    try:
        assert jmes.serialized_length(result) == 2**40 * 105 - 3
        assert jmes.serialized_prefix(result, 50) == '[' * 40 + '"' + "x" * 9
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_048_576, peak


NUMBERS = '{"a": [' + ", ".join(["1e15"] * 500) + '], "b": {"c": [1, 2], "d": "x"}}'  # 1e15 writes out as 18 characters


@pytest.mark.parametrize("expression", ORDINARY + ["items[*].[@, @]", "{a: @, b: @}.{x: a, y: b}", "a.[b, b].[@, @]", "items[*].[`\"a constant\"`, id]"])
def test_a_known_bound_of_the_results_json_is_never_below_its_length(expression: str) -> None:
    for text in (json.dumps(DATA), NUMBERS):
        data = json.loads(text)
        try:
            expected = jmespath.search(expression, data)
        except jmespath.exceptions.JMESPathError:  # length(items) of the numbers: no items there
            continue
        found = jmes.evaluate(expression, data, budget=10**7, answer_chars=len(text))
        assert found.value == expected
        if found.written_at_most is not None:
            assert found.written_at_most >= len(json.dumps(found.value, ensure_ascii=False, separators=(",", ":")))


def test_a_result_that_may_be_long_written_out_has_no_known_bound() -> None:
    text = json.dumps({"b": "x" * 100})
    # 2**12 times the text when written out: more than twice the budget, so it is measured instead
    assert jmes.evaluate(hostile(12), json.loads(text), budget=20_000, answer_chars=len(text)).written_at_most is None
    # a text built may be repeated anywhere
    assert jmes.evaluate("join(',', [b, b])", json.loads(text), budget=20_000, answer_chars=len(text)).written_at_most is None
    assert jmes.evaluate("{x: b}", json.loads(text), budget=20_000, answer_chars=len(text)).written_at_most is not None
