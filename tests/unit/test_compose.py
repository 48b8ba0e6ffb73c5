"""docker-compose.yml cannot be started here (no Docker engine), so its wiring is checked
against the code: every service the scale-out needs, and only settings the services know."""

from __future__ import annotations

from pathlib import Path

import yaml

from infrastructure.settings import Settings

ROOT = Path(__file__).resolve().parent.parent.parent
OWN_PREFIXES = ("TOOLSMITH_", "CODESANDBOX_", "OPENSEARCH_")
EVENTSOURCING = {"PERSISTENCE_MODULE", "POSTGRES_HOST", "POSTGRES_PORT", "POSTGRES_DBNAME", "POSTGRES_USER", "POSTGRES_PASSWORD"}


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _known_variables() -> set[str]:
    names = set()
    for field in Settings.model_fields.values():
        choices = getattr(field.validation_alias, "choices", [])
        names.update(c for c in choices if isinstance(c, str) and c.isupper())
    return names


def test_the_scale_out_topology_is_described() -> None:
    services = _compose()["services"]
    assert {"lb", "api", "projections", "sandbox", "postgres", "opensearch"} <= set(services)
    assert services["api"]["deploy"]["replicas"] == 2
    assert "ports" not in services["api"] and services["lb"]["ports"] == ["127.0.0.1:8000:8000"]
    assert services["projections"]["command"] == ["toolsmith", "projections", "run"]
    for name in ("api", "sandbox", "postgres", "opensearch"):
        assert "healthcheck" in services[name], name


def test_every_variable_is_a_setting_and_secrets_come_from_the_environment() -> None:
    known = _known_variables()
    for name, service in _compose()["services"].items():
        for variable, value in (service.get("environment") or {}).items():
            if "build" in service and variable.startswith(OWN_PREFIXES):
                assert variable in known, f"{name}: {variable} is not a Toolsmith setting"
            if any(word in variable for word in ("SECRET", "PASSWORD", "TOKEN")):
                assert str(value).startswith("${") and ":?" in str(value), f"{name}: {variable} needs a value from the environment"
    api = _compose()["services"]["api"]["environment"]
    assert EVENTSOURCING <= set(api) and api["TOOLSMITH_PROJECTION_RUNNER"] == "external"
    assert Settings(**{"projection_runner": api["TOOLSMITH_PROJECTION_RUNNER"]}).projection_runner == "external"
