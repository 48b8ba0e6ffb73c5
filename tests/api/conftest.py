"""The console's route tests: one app per test, started once (one lifespan, which every client of
it shares: two lifespans would close one store twice), and the REST API's client beside it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN


@pytest.fixture
def app(settings, shared_sandbox) -> Iterator[FastAPI]:  # noqa: ANN001
    application = create_app(wire(settings, shared_sandbox))
    with TestClient(application):
        yield application


@pytest.fixture
def api(app: FastAPI) -> TestClient:
    """The REST API with the admin's bearer token."""
    return TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
