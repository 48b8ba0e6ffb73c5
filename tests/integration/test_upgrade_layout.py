"""Upgrade (issue 29's acceptance): a data dir and the OpenSearch indices left by the release before
the kinds became packages and every list a projection (commit 96bd070) start under today's layout:
the new projections (the tool indexes, the changesets, the usage counts) are built by replay at the
start, with their progress logged and each reported by /healthz at the log's head, the release's
module index is used as it is (not rebuilt), and the lists, the catalog, the usage counts and a
search answer what the release answered.

The fixture is what that release wrote, made with its own code by
tests/fixtures/make_layout_upgrade.py: its data dir (`layout-upgrade.tar.gz`, the single-tenant
store whose events carry the topics of the modules the kinds lived in then), both of its indices,
document for document with their mappings (`layout-upgrade.opensearch.json`), and its answers
(`layout-upgrade.json`). Each test restores the indices under aliases of its own.

Needs OpenSearch (see tests/engines.py) and the embedded QuickJS sandbox.
"""

from __future__ import annotations

import json
import logging
import tarfile
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opensearchpy import OpenSearch, helpers
from pydantic import SecretStr

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.integration.test_upgrade_single_tenant import still_holds

FIXTURES = Path(__file__).parents[1] / "fixtures"
KNOWN: dict[str, Any] = json.loads((FIXTURES / "layout-upgrade.json").read_text())
INDICES: list[dict[str, Any]] = json.loads((FIXTURES / "layout-upgrade.opensearch.json").read_text())["indices"]
ADMIN_TOKEN, OPERATOR_TOKEN = KNOWN["adminToken"], KNOWN["operatorToken"]
# The projections this layout adds to the module summaries, as /healthz names them.
NEW_PROJECTIONS = {"usage", "changesets", "api tool index", "search tool index"}


def restore(client: OpenSearch, dumped: dict[str, Any], alias: str) -> str:
    """The release's index, document for document, behind `alias`; answers the index's name."""
    index = f"{alias}-{dumped['index'].rpartition('-')[2]}"
    client.indices.create(index=index, body={"settings": {**dumped["settings"], "number_of_replicas": 0},
                                             "mappings": dumped["mappings"]})
    helpers.bulk(client, ({"_index": index, "_id": d["id"], "_source": d["source"]} for d in dumped["documents"]), refresh=True)
    client.indices.put_alias(index=index, name=alias)
    return index


@pytest.fixture
def release(tmp_path: Path, opensearch: OpenSearch, opensearch_index: str, opensearch_url: str) -> tuple[Settings, str]:
    """The release's data dir and indices, with the release's settings (and OpenSearch's address)."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    with tarfile.open(FIXTURES / "layout-upgrade.tar.gz") as tar:
        tar.extractall(data_dir, filter="data")
    for path in data_dir.rglob("*"):
        path.chmod(0o700 if path.is_dir() else 0o600)
    aliases = {KNOWN["aliases"]["modules"]: opensearch_index, KNOWN["aliases"]["chunks"]: f"{opensearch_index}-chunks"}
    modules_index = ""
    for dumped in INDICES:
        made = restore(opensearch, dumped, aliases[dumped["alias"]])
        if dumped["alias"] == KNOWN["aliases"]["modules"]:
            modules_index = made
    settings = Settings(data_dir=data_dir, admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                        opensearch_url=SecretStr(opensearch_url), opensearch_index=opensearch_index,
                        opensearch_chunks_index=f"{opensearch_index}-chunks", opensearch_replicas=0)
    return settings, modules_index


def comparable(body: Any) -> Any:
    """A search's answer without what depends on the machine (its duration) and on the index's
    segments rather than its documents (a score: the release's index still counted the chunks its
    rebuild had deleted); the results, their order and their text stay."""
    if isinstance(body, dict) and "output" in body and isinstance(body["output"], dict) and "results" in body["output"]:
        results = [{k: v for k, v in result.items() if k != "score"} for result in body["output"]["results"]]
        return {**{k: v for k, v in body.items() if k != "durationMillis"}, "output": {**body["output"], "results": results}}
    return body


def ask(client: TestClient, asked: dict[str, Any]) -> Any:
    if "call" in asked:
        return client.post(f"/api/v1/tools/{asked['call']}/call", json=asked["arguments"])
    token = OPERATOR_TOKEN if asked["path"].startswith("/api/v1/operator") else ADMIN_TOKEN
    return client.get(asked["path"], headers={"Authorization": f"Bearer {token}"})


def test_the_release_starts_with_its_projections_replayed_and_answers_the_same(
        release: tuple[Settings, str], opensearch: OpenSearch, shared_sandbox: Any, caplog: pytest.LogCaptureFixture) -> None:
    settings, modules_index = release
    with caplog.at_level(logging.INFO, logger="toolsmith.projections"), \
            TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        health = client.get("/healthz").json()
        # Every projection, built by replay at the start, stands at the log's head.
        head = health["eventStore"]["position"]
        projections = health["readModel"]["projections"]
        assert NEW_PROJECTIONS | {"module_summaries", "catalog journal", "chunks"} <= set(projections), projections
        assert all(p == {"position": head, "lag": 0} for p in projections.values()), projections
        # ... and said so, with what it replayed.
        ready = {r.projection: r.events for r in caplog.records if r.getMessage() == "projection ready"}  # type: ignore[attr-defined]
        assert NEW_PROJECTIONS <= set(ready) and all(ready[name] > 0 for name in NEW_PROJECTIONS), ready
        differences = []
        for asked in KNOWN["answers"]:
            answer = ask(client, asked)
            where = asked.get("path") or asked["call"]
            if answer.status_code != asked["status"]:
                differences.append(f"{where}: {answer.status_code} instead of {asked['status']}: {answer.text[:300]}")
                continue
            differences += [f"{where}{d}" for d in still_holds(comparable(answer.json()), comparable(asked["body"]))]
        assert differences == []
    # The release's module index served as it was: not rebuilt behind another name.
    assert list(opensearch.indices.get_alias(name=settings.opensearch_index)) == [modules_index]
