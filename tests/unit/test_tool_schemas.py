"""domain.schemas and domain.content on their own (issue 33, points 3 and 4): what a schema must be
to be saved, what a result's content must be to be sent."""

from __future__ import annotations

import pytest

from domain.content import MAX_CONTENT_CHARS, ContentError, content_of, is_content
from domain.schemas import input_violations, output_problem, schema_violations, validator
from toolkinds.search_tools.capabilities import OUTPUT_SCHEMAS


@pytest.mark.parametrize("capability", sorted(OUTPUT_SCHEMAS))
def test_each_file_search_capability_declares_a_valid_output_schema(capability: str) -> None:
    assert schema_violations(OUTPUT_SCHEMAS[capability], "outputSchema") == []


def test_a_validator_is_compiled_once_per_schema_document() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert validator(schema) is validator(schema)
    assert validator(dict(schema)) is not validator(schema)  # another document (a new version): its own


def test_in_place_recursion_loops_but_recursion_through_a_property_does_not() -> None:
    assert schema_violations({"type": "object", "anyOf": [{"$ref": "#/$defs/a"}], "$defs": {"a": {"not": {"$ref": "#"}}}}, "s")
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}
    assert schema_violations(tree, "s") == []
    assert input_violations(tree, {"kids": [{"kids": [{"kids": "no"}]}]})[0].field == "input.kids[0].kids[0].kids"


def test_an_output_problem_names_the_first_path() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}, "required": ["a"]}
    assert output_problem(schema, {"a": [1, 2]}) is None
    assert "at $.a[1]:" in (output_problem(schema, {"a": [1, "x"]}) or "")
    assert "at $:" in (output_problem(schema, {}) or "")


def test_only_marked_values_are_content() -> None:
    assert not is_content({"a": 1}) and not is_content([1, 2]) and not is_content([]) and not is_content("text")
    assert is_content({"$mcp": "text", "text": "a"}) and is_content([{"$mcp": "text", "text": "a"}])
    items, structured = content_of({"$mcp": "result", "content": [{"$mcp": "text", "text": "a"}], "structuredContent": {"n": 1}})
    assert items == [{"text": "a", "type": "text"}] and structured == {"n": 1}


def test_the_content_cap_counts_every_item() -> None:
    half = "A" * (MAX_CONTENT_CHARS // 2 + 4)
    with pytest.raises(ContentError, match=r"content\[1\].data: the result's content is over"):
        content_of([{"$mcp": "image", "data": half, "mimeType": "image/png"}, {"$mcp": "audio", "data": half, "mimeType": "audio/wav"}])


def test_the_publish_review_shows_a_changed_schema_as_json() -> None:
    from toolkinds.code.lifecycle import definition_diff

    tool = {"inputParameters": [], "timeoutMillis": 3000, "memoryLimitMb": 128, "exposeInChat": True, "enabled": True, "tags": [],
            "style": "module", "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}
    after = {**tool, "outputSchema": {"type": "object", "properties": {"n": {"type": "string"}}}}
    diff = definition_diff({"content": "", "tool": tool}, {"content": "", "tool": after}, "v1", "the draft")
    row = next(row for row in diff["tool"] if row["field"] == "Output schema")
    assert row["changed"] and '"type": "string"' in row["after"] and '"type": "integer"' in row["before"]
