"""Shared fixtures: settings on a temporary data dir, the wired services, an authenticated client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from infrastructure.bootstrap import Services, bootstrap
from infrastructure.settings import Settings

from tests.helpers import ADMIN_TOKEN


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN)


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    wired = bootstrap(settings)
    wired.start()
    yield wired
    wired.close()


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    """An HTTP client for a whole app (lifespan included), authenticated as the admin."""
    app = create_app(bootstrap(settings))
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as test_client:
        yield test_client
