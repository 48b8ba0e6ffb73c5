"""Helpers shared by the tests."""

from __future__ import annotations

import contextlib
import itertools
import re
import os
from collections.abc import Iterator
from typing import Any

from testing.launcher import free_port

__all__ = ["ADMIN_TOKEN", "environment_without_settings", "expect", "free_port", "unique_id"]

ADMIN_TOKEN = "tsa_test-admin-token"
# The operator's (docs/tenants.md): manages tenants and nothing inside them.
OPERATOR_TOKEN = "test-operator-token-0123456789"
_counter = itertools.count()


def unique_id(prefix: str = "m") -> str:
    """A module id no other test uses (tests may share one engine)."""
    return f"{prefix}_{os.getpid()}_{next(_counter)}"


def environment_without_settings() -> dict[str, str]:
    """This process's environment without any Toolsmith, OpenSearch or PostgreSQL setting, for a
    child process that must get only the settings a test gives it."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("TOOLSMITH_", "OPENSEARCH_", "POSTGRES_"))}


def expect(response: Any, status: int) -> Any:
    """`response`, after checking a setup call answered `status` (else its body says why)."""
    assert response.status_code == status, f"{response.request.method} {response.request.url}: {response.status_code} {response.text}"
    return response


# -- the console without a browser (tests/console/) ----------------------------------------------------

CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


def same_origin(client: Any) -> dict[str, str]:
    """The `Origin` header a browser sends with a form posted from the client's own pages."""
    return {"Origin": str(client.base_url).rstrip("/")}


def page_csrf(html: str) -> str:
    """The CSRF token a console page carries for its forms."""
    match = CSRF_META.search(html)
    assert match, "the page carries no CSRF token"
    return match.group(1)


def sign_in_console(client: Any, token: str = ADMIN_TOKEN, next: str = "/console/modules") -> str:
    """Signs `client` in to the console with `token`; the CSRF token of its pages."""
    answer = client.post("/console/sign-in", data={"token": token, "next": next}, headers=same_origin(client), follow_redirects=False)
    assert answer.status_code == 303, answer.text
    return page_csrf(client.get(next).text)


def console_session(app: Any, token: str = ADMIN_TOKEN, **options: Any) -> tuple[Any, str]:
    """A new browser-like client of `app` signed in with `token`, and its CSRF token."""
    from fastapi.testclient import TestClient

    client = TestClient(app, **options)
    return client, sign_in_console(client, token)


@contextlib.contextmanager
def running(app: Any, base_url: str = "http://testserver") -> Iterator[Any]:
    """`app` with its lifespan started, for `on_its_loop`'s clients. A TestClient not entered makes
    an event loop of its own per request: an MCP session it opened was started in the session
    manager's task group from that other loop, and its end, when that loop closed, could end the
    lifespan (the services closed in the middle of a test, about one run in five on a loaded machine)."""
    from fastapi.testclient import TestClient

    with TestClient(app, base_url=base_url) as entered:
        app.state.test_portal = entered.portal
        try:
            yield app
        finally:
            app.state.test_portal = None


def on_its_loop(app: Any, **options: Any) -> Any:
    """A TestClient of its own (its cookies, its headers) whose requests run on the event loop of
    the app's lifespan (`running`), as a server's would."""
    from fastapi.testclient import TestClient

    client = TestClient(app, **options)
    client.portal = getattr(app.state, "test_portal", None)
    return client
