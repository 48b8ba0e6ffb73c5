"""The API URL tool form's Output schema field (issue 33, point 3; no browser): saved with the tool,
shown again, and a schema that is not JSON or not a valid one named next to the field with what
was typed kept."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from fastapi.testclient import TestClient

from tests.console.test_console_api_tools import PAGE, TOOLS, admin, client, error_of, upstream, weather_form  # noqa: F401
from tests.console.test_console_others import post
from tests.helpers import expect, unique_id
from tests.upstream import Upstream

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


class Tags(HTMLParser):
    """Every start tag's attributes as written, a repeated attribute kept twice (as a browser ignores the second)."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[list[tuple[str, str | None]]] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(attrs)

    def by_id(self, element_id: str) -> list[tuple[str, str | None]]:
        return next(attrs for attrs in self.tags if ("id", element_id) in attrs)


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
    # The field names its error (and its hint) in one aria-describedby: a second one is dropped by the browser.
    tags = Tags(answer.text)
    field = tags.by_id("outputSchema")
    described = [value for name, value in field if name == "aria-describedby"]
    assert described == ["outputSchema-error output-schema-hint"] and ("aria-invalid", "true") in field
    assert tags.by_id("outputSchema-error") and tags.by_id("output-schema-hint")
    repeated = [attrs for attrs in tags.tags if len({name for name, _ in attrs}) != len(attrs)]
    assert repeated == []
    answer = post(admin, PAGE, weather_form(upstream, other, outputSchema=json.dumps({"type": "array"})), page=f"{PAGE}/new")
    assert answer.status_code == 200 and 'must be "object"' in error_of(answer.text, "outputSchema")
    assert "{&#34;type&#34;: &#34;array&#34;}" in answer.text or '{"type": "array"}' in answer.text
    assert client.get(f"{TOOLS}/{other}").status_code == 404
