"""The hottest routes served without the router's search (`api.direct`, issue 30): `POST
/api/v1/tools/{name}/call` and `GET /healthz` answer exactly what the router's own route answers, for
a call that works and for every refusal on the way (no token, an unknown tool, arguments that are
not an object, a body that is not JSON), and a request they do not take (another method, a longer
path) still meets the router (its 405 with `Allow`, its 404); the document still declares them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.direct import Direct
from tests.helpers import ADMIN_TOKEN, unique_id

BASE = "/api/v1/admin/code-modules"
# Headers that differ between two answers for a reason of their own.
VARYING = {"date", "x-request-id"}


@contextmanager
def through_the_router(app: FastAPI) -> Iterator[None]:
    """The app as it would be without `Direct`: every request searched for by the router."""
    direct = app.router.middleware_stack
    assert isinstance(direct, Direct)
    app.router.middleware_stack = direct.app
    try:
        yield
    finally:
        app.router.middleware_stack = direct


def _published(api: TestClient) -> str:
    name = unique_id("hot")
    created = api.post(BASE, json={"id": name, "description": "adds one", "draftContent": "exports.run = function (input) { return input.n + 1; };",
                                   "tool": {"inputParameters": [{"name": "n", "type": "integer", "required": True, "description": "n"}],
                                            "exposeInChat": True}})
    assert created.status_code == 201, created.text
    assert api.post(f"{BASE}/{name}/publish").status_code == 200
    return name


def _answer(client: TestClient, method: str, path: str, **kwargs: object) -> tuple[int, dict[str, str], object]:
    response = client.request(method, path, **kwargs)  # type: ignore[arg-type]
    headers = {k: v for k, v in response.headers.items() if k not in VARYING}
    body: object = response.content
    if response.content and response.headers.get("content-type", "").endswith("json"):
        body = response.json()
        if isinstance(body, dict):
            body.pop("durationMillis", None)  # the call's own time
            if isinstance(body.get("readModel"), dict):
                body["readModel"].pop("lagSeconds", None)
            if isinstance(body.get("callLog"), dict):  # the call log's counts move as the calls are written
                for moving in ("queued", "written"):
                    body["callLog"].pop(moving, None)
    headers.pop("content-length", None)
    return response.status_code, headers, body


def test_the_hot_routes_answer_what_the_router_answers(app: FastAPI, api: TestClient) -> None:
    name = _published(api)
    anonymous = TestClient(app)
    wrong = TestClient(app, headers={"Authorization": "Bearer tsa_not-a-token-0123456789abcdefgh"})
    call = f"/api/v1/tools/{name}/call"
    asked = [
        (api, "POST", call, {"json": {"n": 41}}),
        (api, "POST", call, {"json": {"n": "x"}}),
        (api, "POST", call, {"json": [1]}),
        (api, "POST", call, {"content": b"{not json", "headers": {"Content-Type": "application/json"}}),
        (api, "POST", call, {}),
        (api, "POST", "/api/v1/tools/noSuchTool/call", {"json": {}}),
        (api, "POST", "/api/v1/tools/a%2Fb/call", {"json": {}}),
        (api, "POST", f"/api/v1/tools/{name}/call/more", {"json": {}}),
        (api, "POST", "/api/v1/tools//call", {"json": {}}),
        (api, "GET", call, {}),
        (api, "HEAD", call, {}),
        (anonymous, "POST", call, {"json": {"n": 1}}),
        (wrong, "POST", call, {"json": {"n": 1}}),
        (anonymous, "GET", "/healthz", {}),
        (anonymous, "HEAD", "/healthz", {}),
        (anonymous, "POST", "/healthz", {}),
    ]
    direct = [_answer(client, method, path, **kwargs) for client, method, path, kwargs in asked]
    with through_the_router(app):
        routed = [_answer(client, method, path, **kwargs) for client, method, path, kwargs in asked]
    for (client, method, path, _), ours, theirs in zip(asked, direct, routed):
        assert ours == theirs, f"{method} {path}"
    statuses = [status for status, _, _ in direct]
    assert statuses[0] == 200 and direct[0][2]["output"] == 42  # type: ignore[index]
    assert statuses[9] == 405 and "POST" in direct[9][1]["allow"]
    assert statuses[11] == 401 and statuses[13] == 200


def test_the_hot_routes_are_still_the_documents(api: TestClient) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    assert "post" in paths["/api/v1/tools/{name}/call"] and "get" in paths["/healthz"]
    assert paths["/api/v1/tools/{name}/call"]["post"]["security"] == [{"HTTPBearer": []}]


@pytest.mark.parametrize("template", ["/a/{x}{y}", "/a{x}/b", "/a/{x}b"])
def test_a_hot_route_takes_one_parameter_a_whole_segment(template: str) -> None:
    from api.direct import _Matcher

    with pytest.raises(ValueError):
        _Matcher(template)
