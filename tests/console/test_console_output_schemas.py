"""The API URL tool form's Output schema field (issue 33, point 3; no browser): saved with the tool,
shown again, and a schema that is not JSON or not a valid one named next to the field with what
was typed kept."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from tests.console.test_console_api_tools import PAGE, TOOLS, admin, client, error_of, upstream, weather_form  # noqa: F401
from tests.console.test_console_others import post
from tests.helpers import expect, unique_id
from tests.upstream import Upstream

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def test_the_output_schema_is_saved_from_the_form_and_a_bad_one_is_named_next_to_its_field(
        client: TestClient, admin: TestClient, upstream: Upstream) -> None:
    name = unique_id("weather")
    made = post(admin, PAGE, weather_form(upstream, name, outputSchema=json.dumps(SCHEMA)), page=f"{PAGE}/new")
    assert made.status_code == 303, made.text
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["outputSchema"] == SCHEMA
    page = admin.get(f"{PAGE}/{name}").text
    assert json.loads(page.split('name="outputSchema"')[1].split(">", 1)[1].split("</textarea>")[0].replace("&#34;", '"')) == SCHEMA

    other = unique_id("weather")
    answer = post(admin, PAGE, weather_form(upstream, other, outputSchema="{not json"), page=f"{PAGE}/new")
    assert answer.status_code == 200 and "Output schema: is not JSON" in error_of(answer.text, "outputSchema")
    answer = post(admin, PAGE, weather_form(upstream, other, outputSchema=json.dumps({"type": "array"})), page=f"{PAGE}/new")
    assert answer.status_code == 200 and 'must be "object"' in error_of(answer.text, "outputSchema")
    assert "{&#34;type&#34;: &#34;array&#34;}" in answer.text or '{"type": "array"}' in answer.text
    assert client.get(f"{TOOLS}/{other}").status_code == 404
