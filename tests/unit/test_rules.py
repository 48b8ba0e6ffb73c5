"""The naming and limit rules (docs/rules.md R1, R3, R4, R9 and docs/javascript.md V1), as a client reads their refusals."""

from __future__ import annotations

import math
from typing import Any

import jsonschema_rs
import pytest

from domain.errors import InvalidDefinition, InvalidInput, Violation
from domain.rules import (
    MAX_SAFE_INTEGER,
    id_violations,
    imports_violations,
    input_schema,
    is_valid_id,
    normal_date,
    normalise_tool,
    tool_violations,
    validate_definition,
    validate_input,
)


def definition(**changes: Any) -> dict[str, Any]:
    """A valid definition, with `changes` applied."""
    base: dict[str, Any] = {
        "description": "Formats a report",
        "content": "exports.run = function (input) { return 1; };",
        "imports": [],
        "tool": None,
    }
    return {**base, **changes}


def tool(**changes: Any) -> dict[str, Any]:
    """A complete tool section (R9 defaults filled), with `changes` applied before normalising."""
    normalised = normalise_tool(changes)
    assert normalised is not None
    return normalised


def param(name: str, type_: str = "string", required: bool = False, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "required": required, "description": "", **extra}


def refusal(candidate: dict[str, Any]) -> list[Violation]:
    """The violations `validate_definition` raises for `candidate`; fails if it accepts it."""
    with pytest.raises(InvalidDefinition) as raised:
        validate_definition(candidate)
    return raised.value.violations


def only(violations: list[Violation]) -> Violation:
    assert len(violations) == 1, violations
    return violations[0]


# -- R1: module ids ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["a", "_x", "countLines", "A1_b2", "a" * 64])
def test_javascript_identifiers_are_valid_ids(value: str) -> None:
    assert id_violations(value) == []
    assert is_valid_id(value)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("", id="empty"),
        pytest.param("1abc", id="digit-first"),
        pytest.param("a$b", id="dollar"),
        pytest.param("$", id="dollar-alone"),
        pytest.param("café", id="non-ascii-letter"),
        pytest.param("λ", id="greek-letter"),
        pytest.param("my-tool", id="hyphen"),
        pytest.param("my tool", id="space"),
        pytest.param("a" * 65, id="65-chars"),
    ],
)
def test_malformed_ids_are_refused_under_r1(value: str) -> None:
    violation = only(id_violations(value))
    assert (violation.field, violation.rule) == ("id", "R1")
    assert not is_valid_id(value)


def test_id_length_boundary_is_64_characters() -> None:
    assert is_valid_id("x" * 64)
    violation = only(id_violations("x" * 65))
    assert violation.rule == "R1"
    assert "64" in violation.message


@pytest.mark.parametrize("word", ["class", "return", "null", "true", "false", "await", "enum", "function", "typeof"])
def test_reserved_words_are_refused_under_r1(word: str) -> None:
    violation = only(id_violations(word))
    assert (violation.field, violation.rule) == ("id", "R1")
    assert "reserved" in violation.message


@pytest.mark.parametrize("word", ["let", "static", "implements", "yield", "eval", "arguments", "interface", "package"])
def test_strict_mode_words_are_refused_under_r1(word: str) -> None:
    violation = only(id_violations(word))
    assert (violation.field, violation.rule) == ("id", "R1")


@pytest.mark.parametrize("name", ["exports", "log", "ai", "input"])
def test_names_the_sandbox_injects_are_refused_under_r1(name: str) -> None:
    # A module named `log` would shadow the injected `log` in every module that imports it.
    violation = only(id_violations(name))
    assert (violation.field, violation.rule) == ("id", "R1")
    assert "sandbox" in violation.message


def test_words_that_merely_contain_a_reserved_word_are_valid() -> None:
    assert is_valid_id("classify")
    assert is_valid_id("returnValue")
    assert is_valid_id("logger")


def test_a_non_string_id_is_refused_under_r1() -> None:
    assert only(id_violations(None)).rule == "R1"
    assert only(id_violations(42)).rule == "R1"


def test_an_id_violation_names_the_field_it_was_given() -> None:
    violation = only(id_violations("1x", "draftImports[3]"))
    assert (violation.field, violation.rule) == ("draftImports[3]", "R1")


# -- R3: description -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\t"], ids=["empty", "spaces", "whitespace"])
def test_a_blank_description_is_refused_under_r3(text: str) -> None:
    violation = only(refusal(definition(description=text)))
    assert (violation.field, violation.rule) == ("description", "R3")


def test_a_description_of_2000_characters_is_accepted() -> None:
    validate_definition(definition(description="d" * 2_000))


def test_a_description_of_2001_characters_is_refused_under_r3() -> None:
    violation = only(refusal(definition(description="d" * 2_001)))
    assert (violation.field, violation.rule) == ("description", "R3")
    assert "2000" in violation.message.replace(",", "")


# -- R4: source, imports, tags, parameters ---------------------------------------------------------


def test_a_source_of_262144_characters_is_accepted() -> None:
    validate_definition(definition(content="x" * 262_144))


def test_a_source_of_262145_characters_is_refused_under_r4() -> None:
    violation = only(refusal(definition(content="x" * 262_145)))
    assert (violation.field, violation.rule) == ("draftContent", "R4")


def test_twenty_imports_are_accepted() -> None:
    validate_definition(definition(imports=[f"lib{i}" for i in range(20)]))


def test_twenty_one_imports_are_refused_under_r4() -> None:
    violation = only(refusal(definition(imports=[f"lib{i}" for i in range(21)])))
    assert (violation.field, violation.rule) == ("draftImports", "R4")
    assert "21" in violation.message


def test_duplicate_imports_are_refused_under_r4() -> None:
    violation = only(imports_violations(["dates", "report", "dates"]))
    assert (violation.field, violation.rule) == ("draftImports", "R4")
    assert "distinct" in violation.message


def test_an_import_that_is_not_a_valid_id_is_refused_with_its_position() -> None:
    violation = only(imports_violations(["dates", "2fast"]))
    assert (violation.field, violation.rule) == ("draftImports[1]", "R1")


def test_imports_must_be_a_list() -> None:
    violation = only(imports_violations("dates"))
    assert (violation.field, violation.rule) == ("draftImports", "R4")


def test_twenty_tags_are_accepted() -> None:
    assert tool_violations(tool(tags=[f"t{i}" for i in range(20)])) == []


def test_twenty_one_tags_are_refused_under_r4() -> None:
    violation = only(tool_violations(tool(tags=[f"t{i}" for i in range(21)])))
    assert (violation.field, violation.rule) == ("tool.tags", "R4")


def test_thirty_parameters_are_accepted() -> None:
    assert tool_violations(tool(inputParameters=[param(f"p{i}") for i in range(30)])) == []


def test_thirty_one_parameters_are_refused_under_r4() -> None:
    violation = only(tool_violations(tool(inputParameters=[param(f"p{i}") for i in range(31)])))
    assert (violation.field, violation.rule) == ("tool.inputParameters", "R4")


def test_duplicate_parameter_names_are_refused_under_r4() -> None:
    violation = only(tool_violations(tool(inputParameters=[param("day"), param("day")])))
    assert (violation.field, violation.rule) == ("tool.inputParameters[1].name", "R4")
    assert "'day'" in violation.message


def test_a_parameter_name_must_have_the_shape_of_an_id() -> None:
    violation = only(tool_violations(tool(inputParameters=[param("first-day")])))
    assert (violation.field, violation.rule) == ("tool.inputParameters[0].name", "R1")


def test_a_definition_reports_every_broken_rule_at_once() -> None:
    found = refusal(definition(description="", content="x" * 262_145, imports=["a", "a"], tool=tool(timeoutMillis=1)))
    assert {(v.field, v.rule) for v in found} == {
        ("description", "R3"),
        ("draftContent", "R4"),
        ("draftImports", "R4"),
        ("tool.timeoutMillis", "R9"),
    }


# -- R9: the tool section --------------------------------------------------------------------------


@pytest.mark.parametrize("millis", [100, 3_000, 10_000])
def test_timeouts_within_100_to_10000_ms_are_accepted(millis: int) -> None:
    assert tool_violations(tool(timeoutMillis=millis)) == []


@pytest.mark.parametrize("millis", [99, 10_001, 0, -1])
def test_timeouts_outside_100_to_10000_ms_are_refused_under_r9(millis: int) -> None:
    violation = only(tool_violations(tool(timeoutMillis=millis)))
    assert (violation.field, violation.rule) == ("tool.timeoutMillis", "R9")


@pytest.mark.parametrize("style", ["module", "script"])
def test_module_and_script_styles_are_accepted(style: str) -> None:
    assert tool_violations(tool(style=style)) == []


def test_any_other_style_is_refused_under_r9() -> None:
    violation = only(tool_violations(tool(style="function")))
    assert (violation.field, violation.rule) == ("tool.style", "R9")


def test_a_tool_in_a_definition_is_checked_by_validate_definition() -> None:
    violation = only(refusal(definition(tool=tool(style="function"))))
    assert (violation.field, violation.rule) == ("tool.style", "R9")


def test_normalise_fills_the_r9_defaults_of_a_module_style_tool() -> None:
    filled = normalise_tool({"inputParameters": [{"name": "day"}]})
    assert filled == {
        "inputParameters": [{"name": "day", "description": "", "required": False, "type": "string"}],
        "timeoutMillis": 3_000,
        "memoryLimitMb": 128,
        "exposeInChat": False,
        "enabled": True,
        "tags": [],
        "style": "module",
    }


def test_a_script_style_tool_defaults_to_a_5000_ms_timeout() -> None:
    filled = normalise_tool({"style": "script"})
    assert filled is not None
    assert filled["timeoutMillis"] == 5_000


def test_normalise_keeps_explicit_values() -> None:
    filled = normalise_tool({"style": "script", "timeoutMillis": 250, "memoryLimitMb": 64, "exposeInChat": True, "enabled": False})
    assert filled is not None
    assert (filled["timeoutMillis"], filled["memoryLimitMb"], filled["exposeInChat"], filled["enabled"]) == (250, 64, True, False)


def test_normalise_removes_duplicate_tags_keeping_their_order() -> None:
    filled = normalise_tool({"tags": ["dates", "report", "dates", "csv", "report"]})
    assert filled is not None
    assert filled["tags"] == ["dates", "report", "csv"]


def test_normalise_of_no_tool_section_is_none() -> None:
    assert normalise_tool(None) is None


# -- V1: parameter types, defaults and inputs -------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "default"),
    [
        ("string", "x"),
        ("integer", 3),
        ("decimal", 2.5),
        ("decimal", 2),
        ("date", "2024-05-06"),
        ("date", "2024-05-06T10:00:00Z"),
        ("boolean", False),
        ("array", [1, 2]),
        ("object", {"a": 1}),
    ],
)
def test_a_default_of_the_declared_type_is_accepted(type_: str, default: Any) -> None:
    assert tool_violations(tool(inputParameters=[param("p", type_, default=default)])) == []


@pytest.mark.parametrize(
    ("type_", "default"),
    [
        ("string", 3),
        ("integer", "3"),
        ("integer", 2.5),
        ("integer", True),
        ("decimal", "2.5"),
        ("date", "next tuesday"),
        ("boolean", "false"),
        ("array", {"a": 1}),
        ("object", [1]),
    ],
)
def test_a_default_that_does_not_match_the_type_is_refused_under_v1(type_: str, default: Any) -> None:
    violation = only(tool_violations(tool(inputParameters=[param("p", type_, default=default)])))
    assert (violation.field, violation.rule) == ("tool.inputParameters[0].default", "V1")
    assert type_ in violation.message


def test_a_required_parameter_with_a_default_is_refused_under_v1() -> None:
    violation = only(tool_violations(tool(inputParameters=[param("p", "integer", required=True, default=3)])))
    assert (violation.field, violation.rule) == ("tool.inputParameters[0].default", "V1")
    assert "optional" in violation.message


def test_an_unknown_parameter_type_is_refused_under_v1() -> None:
    violation = only(tool_violations(tool(inputParameters=[param("p", "number")])))
    assert (violation.field, violation.rule) == ("tool.inputParameters[0].type", "V1")


REPORT_PARAMETERS = [param("day", "date", required=True), param("count", "integer", default=5)]


def test_a_missing_required_input_is_refused_naming_the_parameter() -> None:
    with pytest.raises(InvalidInput) as raised:
        validate_input(REPORT_PARAMETERS, {"count": 2})
    violation = only(raised.value.violations)
    assert (violation.field, violation.rule) == ("input.day", "V1")
    assert "'day'" in violation.message and "missing" in violation.message


def test_a_required_input_given_as_null_counts_as_missing() -> None:
    with pytest.raises(InvalidInput) as raised:
        validate_input(REPORT_PARAMETERS, {"day": None})
    assert only(raised.value.violations).field == "input.day"


def test_no_input_at_all_is_refused_when_a_parameter_is_required() -> None:
    with pytest.raises(InvalidInput) as raised:
        validate_input(REPORT_PARAMETERS, None)
    assert only(raised.value.violations).field == "input.day"


def test_the_default_is_applied_when_an_optional_input_is_omitted() -> None:
    assert validate_input(REPORT_PARAMETERS, {"day": "2024-05-06"}) == {"day": "2024-05-06T00:00:00.000Z", "count": 5}


def test_a_given_optional_input_wins_over_its_default() -> None:
    assert validate_input(REPORT_PARAMETERS, {"day": "2024-05-06", "count": 9})["count"] == 9


def test_validate_input_does_not_change_the_callers_input() -> None:
    given = {"day": "2024-05-06"}
    validate_input(REPORT_PARAMETERS, given)
    assert given == {"day": "2024-05-06"}


def test_three_and_a_half_is_not_an_integer() -> None:
    with pytest.raises(InvalidInput) as raised:
        validate_input(REPORT_PARAMETERS, {"day": "2024-05-06", "count": 3.5})
    violation = only(raised.value.violations)
    assert (violation.field, violation.rule) == ("input.count", "V1")
    assert "integer" in violation.message


def test_three_point_zero_is_accepted_as_the_integer_three() -> None:
    arguments = validate_input(REPORT_PARAMETERS, {"day": "2024-05-06", "count": 3.0})
    assert arguments["count"] == 3
    assert type(arguments["count"]) is int


@pytest.mark.parametrize(
    ("type_", "value"),
    [
        ("string", 1),
        ("integer", "3"),
        ("integer", True),
        ("decimal", "1.5"),
        ("decimal", False),
        ("boolean", "true"),
        ("boolean", 1),
        ("array", {"a": 1}),
        ("object", [1]),
        ("object", "{}"),
        ("date", "yesterday"),
        ("date", "2024-13-01"),
        ("date", 20240506),
    ],
)
def test_an_input_of_the_wrong_type_is_refused_under_v1(type_: str, value: Any) -> None:
    with pytest.raises(InvalidInput) as raised:
        validate_input([param("p", type_)], {"p": value})
    violation = only(raised.value.violations)
    assert (violation.field, violation.rule) == ("input.p", "V1")


@pytest.mark.parametrize(
    ("type_", "value"),
    [
        ("string", ""),
        ("integer", -7),
        ("decimal", 7),
        ("decimal", 0.1),
        ("boolean", False),
        ("array", []),
        ("object", {}),
        ("integer", MAX_SAFE_INTEGER),
        ("integer", -MAX_SAFE_INTEGER),
    ],
)
def test_an_input_of_the_declared_type_is_accepted(type_: str, value: Any) -> None:
    assert validate_input([param("p", type_)], {"p": value}) == {"p": value}


def test_every_wrong_input_is_reported_at_once() -> None:
    with pytest.raises(InvalidInput) as raised:
        validate_input(REPORT_PARAMETERS, {"count": "many"})
    assert [v.field for v in raised.value.violations] == ["input.day", "input.count"]


def test_an_input_that_is_not_an_object_is_refused_when_parameters_are_declared() -> None:
    with pytest.raises(InvalidInput) as raised:
        validate_input(REPORT_PARAMETERS, ["2024-05-06"])
    violation = only(raised.value.violations)
    assert (violation.field, violation.rule) == ("input", "V1")


@pytest.mark.parametrize("given", [{"anything": [1, 2]}, "free text", [1, 2], None, 42])
def test_a_tool_without_parameters_receives_its_input_unchanged(given: Any) -> None:
    assert validate_input([], given) is given


@pytest.mark.parametrize(
    ("type_", "value"),
    [
        pytest.param("integer", 3.5, id="integer-3.5"),
        pytest.param("integer", "3", id="integer-string"),
        pytest.param("integer", MAX_SAFE_INTEGER + 1, id="integer-2^53"),
        pytest.param("integer", -MAX_SAFE_INTEGER - 1, id="integer-minus-2^53"),
        pytest.param("integer", 1e20, id="integer-1e20-float"),
        pytest.param("decimal", True, id="decimal-true"),
        pytest.param("decimal", math.inf, id="decimal-infinity"),
        pytest.param("decimal", -math.inf, id="decimal-minus-infinity"),
        pytest.param("decimal", math.nan, id="decimal-nan"),
        pytest.param("decimal", 10**400, id="decimal-beyond-float"),
        pytest.param("string", None, id="string-null-given-but-required"),
        pytest.param("string", ["a"], id="string-array"),
        pytest.param("string", {"a": 1}, id="string-object"),
        pytest.param("array", "[1]", id="array-string"),
        pytest.param("object", None, id="object-null-given-but-required"),
    ],
)
def test_values_are_not_converted_between_types(type_: str, value: Any) -> None:
    with pytest.raises(InvalidInput) as raised:
        validate_input([param("p", type_, required=True)], {"p": value})
    violation = only(raised.value.violations)
    assert (violation.field, violation.rule) == ("input.p", "V1")


def test_an_integer_out_of_javascripts_exact_range_is_refused_saying_why() -> None:
    with pytest.raises(InvalidInput) as raised:
        validate_input([param("n", "integer")], {"n": 2**53})
    message = only(raised.value.violations).message
    assert str(MAX_SAFE_INTEGER) in message and "JavaScript" in message


def test_a_default_outside_javascripts_exact_integers_is_refused_under_v1() -> None:
    violation = only(tool_violations(tool(inputParameters=[param("n", "integer", default=2**53)])))
    assert (violation.field, violation.rule) == ("tool.inputParameters[0].default", "V1")


# -- V1: dates ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2024-05-06", "2024-05-06T00:00:00.000Z"),
        ("2024-02-29", "2024-02-29T00:00:00.000Z"),
        ("2024-05-06T10:00:00Z", "2024-05-06T10:00:00.000Z"),
        ("2024-05-06t10:00:00z", "2024-05-06T10:00:00.000Z"),
        ("2024-05-06T10:00:00+02:00", "2024-05-06T08:00:00.000Z"),
        ("2024-05-06T23:30:00-01:00", "2024-05-07T00:30:00.000Z"),
        ("2024-05-06T10:00:00-00:00", "2024-05-06T10:00:00.000Z"),
        ("2024-05-06T10:00:00.5Z", "2024-05-06T10:00:00.500Z"),
        ("2024-05-06T10:00:00.123456789Z", "2024-05-06T10:00:00.123Z"),
        ("2016-12-31T23:59:60Z", "2017-01-01T00:00:00.000Z"),
    ],
)
def test_a_date_is_passed_on_as_javascripts_iso_string_of_the_same_instant(text: str, instant: str) -> None:
    assert normal_date(text) == instant
    assert validate_input([param("when", "date")], {"when": text}) == {"when": instant}


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("2024-05-06T10:00:00", id="no-time-zone"),
        pytest.param("2024-05-06T10:00Z", id="no-seconds"),
        pytest.param("2024-05-06 10:00:00Z", id="space-separator"),
        pytest.param("20240506", id="basic-format"),
        pytest.param("2024-W19-1", id="week-date"),
        pytest.param("2024-127", id="ordinal-date"),
        pytest.param("2024-02-30", id="no-such-day"),
        pytest.param("2023-02-29", id="not-a-leap-year"),
        pytest.param("2024-05-06T24:00:00Z", id="hour-24"),
        pytest.param("2024-05-06T10:00:00+24:00", id="offset-24h"),
        pytest.param("2024-05-06T10:00:00+0200", id="offset-without-colon"),
        pytest.param("2024-05-06T10:00:60Z", id="leap-second-not-at-end-of-day"),
        pytest.param("2024-05-06T10:00:00.Z", id="empty-fraction"),
        pytest.param("٢٠٢٤-٠٥-٠٦", id="non-ascii-digits"),
        pytest.param("2024-05-06\n", id="trailing-newline"),
        pytest.param("", id="empty"),
    ],
)
def test_a_date_that_is_not_rfc3339_is_refused_naming_the_forms_accepted(text: str) -> None:
    assert normal_date(text) is None
    with pytest.raises(InvalidInput) as raised:
        validate_input([param("when", "date")], {"when": text})
    violation = only(raised.value.violations)
    assert violation.field == "input.when"
    assert "2024-05-06" in violation.message and "time zone" in violation.message


def test_a_date_default_is_passed_on_as_an_iso_string_too() -> None:
    assert validate_input([param("when", "date", default="2024-05-06")], {}) == {"when": "2024-05-06T00:00:00.000Z"}


# -- V1: undeclared arguments -------------------------------------------------------------------------


def test_an_argument_the_tool_does_not_declare_is_refused_naming_what_it_takes() -> None:
    with pytest.raises(InvalidInput) as raised:
        validate_input(REPORT_PARAMETERS, {"day": "2024-05-06", "cuont": 3})
    violation = only(raised.value.violations)
    assert (violation.field, violation.rule) == ("input.cuont", "V1")
    assert violation.message == "unknown parameter 'cuont'; the tool takes: day, count"


def test_every_broken_argument_is_reported_at_once_each_naming_its_field() -> None:
    with pytest.raises(InvalidInput) as raised:
        validate_input(REPORT_PARAMETERS, {"count": 3.5, "x": 1, "y": 2})
    assert [v.field for v in raised.value.violations] == ["input.day", "input.count", "input.x", "input.y"]
    assert {v.rule for v in raised.value.violations} == {"V1"}


def test_a_tool_without_parameters_accepts_any_argument_names() -> None:
    assert validate_input([], {"whatever": 1}) == {"whatever": 1}


# -- V1: what each style receives ---------------------------------------------------------------------


def test_an_omitted_optional_value_without_default_is_left_out_for_a_module() -> None:
    assert validate_input([param("a"), param("b", "integer", default=2)], {}) == {"b": 2}


def test_in_script_style_an_omitted_optional_value_without_default_is_null() -> None:
    # each parameter is a variable: an omitted one must exist, or reading it throws ReferenceError
    arguments = validate_input([param("a"), param("b", "integer", default=2)], {}, omitted_as_null=True)
    assert arguments == {"a": None, "b": 2}


def test_an_optional_value_given_as_null_stays_null() -> None:
    assert validate_input([param("a")], {"a": None}) == {"a": None}


# -- V1: the JSON Schema of a tool's input (docs/mcp.md) --------------------------------------------------


SEVEN_TYPES = [
    param("text", "string", required=True, description="what to say"),
    param("count", "integer", default=2),
    param("amount", "decimal", required=True),
    param("when", "date", default="2024-05-06"),
    param("loud", "boolean", default=False),
    param("items", "array"),
    param("options", "object", description=""),
]


def test_the_input_schema_states_each_type_description_default_and_requirement() -> None:
    assert input_schema(SEVEN_TYPES) == {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "what to say"},
            "count": {"type": "integer", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER, "default": 2},
            "amount": {"type": "number"},
            "when": {"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}], "default": "2024-05-06"},
            "loud": {"type": "boolean", "default": False},
            "items": {"type": "array"},
            "options": {"type": "object"},
        },
        "required": ["text", "amount"],
        "additionalProperties": False,
    }


def test_the_input_schema_is_a_valid_draft_2020_12_schema() -> None:
    assert jsonschema_rs.meta.is_valid(input_schema(SEVEN_TYPES))
    assert jsonschema_rs.meta.is_valid(input_schema([]))


def test_a_tool_without_parameters_takes_no_argument() -> None:
    assert input_schema([]) == {"type": "object", "properties": {}, "additionalProperties": False}


def test_input_schemas_do_not_share_their_parts() -> None:
    first = input_schema([param("when", "date")])
    first["properties"]["when"]["anyOf"].append({"format": "time"})
    assert input_schema([param("when", "date")])["properties"]["when"]["anyOf"] == [{"format": "date"}, {"format": "date-time"}]


VALID = {"text": "hi", "amount": 1.5}
SCHEMA_CASES = [
    pytest.param(VALID, id="required-only"),
    pytest.param({**VALID, "count": 3, "when": "2024-05-06", "loud": True, "items": [1], "options": {"a": 1}}, id="every-type"),
    pytest.param({**VALID, "count": 3.0}, id="integer-as-3.0"),
    pytest.param({**VALID, "amount": 7}, id="decimal-as-integer"),
    pytest.param({**VALID, "when": "2024-05-06T10:00:00+02:00"}, id="date-time-with-offset"),
    pytest.param({**VALID, "when": "2016-12-31T23:59:60Z"}, id="leap-second"),
    pytest.param({**VALID, "count": MAX_SAFE_INTEGER}, id="largest-safe-integer"),
    pytest.param({"amount": 1.5}, id="missing-required"),
    pytest.param({**VALID, "count": 3.5}, id="integer-3.5"),
    pytest.param({**VALID, "count": "3"}, id="integer-string"),
    pytest.param({**VALID, "count": True}, id="integer-true"),
    pytest.param({**VALID, "count": MAX_SAFE_INTEGER + 1}, id="integer-2^53"),
    pytest.param({**VALID, "amount": True}, id="decimal-true"),
    pytest.param({**VALID, "amount": "1.5"}, id="decimal-string"),
    pytest.param({**VALID, "text": 3}, id="string-number"),
    pytest.param({**VALID, "loud": "true"}, id="boolean-string"),
    pytest.param({**VALID, "items": {}}, id="array-object"),
    pytest.param({**VALID, "options": []}, id="object-array"),
    pytest.param({**VALID, "when": "yesterday"}, id="date-words"),
    pytest.param({**VALID, "when": "2024-02-30"}, id="date-no-such-day"),
    pytest.param({**VALID, "when": "2024-05-06T10:00:00"}, id="date-time-without-zone"),
    pytest.param({**VALID, "when": "2024-05-06T10:00:60Z"}, id="leap-second-mid-day"),
    pytest.param({**VALID, "extra": 1}, id="unknown-argument"),
    pytest.param(["hi", 1.5], id="not-an-object"),
]


@pytest.mark.parametrize("arguments", SCHEMA_CASES)
def test_the_input_schema_accepts_exactly_what_validate_input_accepts(arguments: Any) -> None:
    schema = jsonschema_rs.Draft202012Validator(input_schema(SEVEN_TYPES), validate_formats=True)
    try:
        validate_input(SEVEN_TYPES, arguments)
    except InvalidInput:
        accepted = False
    else:
        accepted = True
    assert schema.is_valid(arguments) is accepted


def test_the_schema_is_stricter_than_validate_input_only_about_null_for_an_optional_value() -> None:
    # null stands for "omitted" in a call; the schema does not offer it, so a client following
    # the schema is never refused
    schema = jsonschema_rs.Draft202012Validator(input_schema(SEVEN_TYPES), validate_formats=True)
    assert validate_input(SEVEN_TYPES, {**VALID, "count": None})["count"] == 2
    assert not schema.is_valid({**VALID, "count": None})


def test_the_documented_visible_pattern_refuses_exactly_what_the_description_check_calls_blank() -> None:
    # The OpenAPI document's pattern (ECMA-262 and Python read it alike: an explicit class) and the
    # R3 check agree on every character; with a bare \S, "\x1c" was valid to a client and refused here.
    import re
    import sys

    from domain.rules import VISIBLE_PATTERN, description_violations

    visible = re.compile(VISIBLE_PATTERN)
    for code in (c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF):
        text = f" {chr(code)} "
        assert (visible.search(text) is not None) == (description_violations(text) == []), hex(code)
