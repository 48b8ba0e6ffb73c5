"""An API URL tool's Output schema field in Chromium (issue 33, point 3): a schema that is not JSON
is refused next to the field with what was typed kept, a good one is saved with the tool and listed
by REST as its outputSchema."""

from __future__ import annotations

import json
import re
from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shot, sign_in

SCHEMA = {"type": "object", "properties": {"temperature": {"type": "number"}}, "required": ["temperature"]}


def test_an_api_url_tool_s_output_schema_is_refused_at_its_field_then_saved(page, console_server, watch) -> None:  # noqa: ANN001
    watch.allowed_console += [re.compile(r"status of 400"), re.compile(r"Error Code 400 from /console/api-tools")]
    name = f"temp{uuid4().hex[:6]}"
    api = console_server.client()
    created = api.post("/api/v1/admin/api-tools", json={"id": name, "description": "Reads a temperature", "method": "GET",
                                                         "urlTemplate": "https://api.example.com/temperature"})
    assert created.status_code == 201, created.text
    sign_in(page, then=f"/console/api-tools/{name}")
    schema = page.get_by_label("Output schema")
    schema.fill("{not json")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#outputSchema-error")).to_contain_text("is not JSON")
    expect(page.get_by_label("Output schema")).to_have_value("{not json")
    page.get_by_label("Output schema").scroll_into_view_if_needed()
    shot(page, "api-tool-output-schema-refused")
    page.get_by_label("Output schema").fill(json.dumps(SCHEMA))
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#toasts")).to_contain_text(f"Saved {name}")
    assert api.get(f"/api/v1/admin/api-tools/{name}").json()["outputSchema"] == SCHEMA
    assert_accessible(page, "an API URL tool's page with an output schema")
