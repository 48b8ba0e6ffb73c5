"""Issue 28, finding 11: after a restart the runner applies again the batch it had written but not
tracked, and OpenSearch answers each item 409 (that version is there already). Those items are
applied, not rejected: nothing is retried, nothing is logged as a 429, and the runner does not
pause. Before, the bulk's `errors: true` fell into the retry branch: "bulk items rejected with 429;
retrying them" with 0 items, and a backoff pause for nothing. Only the items answered 429 are
retried, and the log counts those."""

from __future__ import annotations

import logging

import orjson
import pytest

from projections.opensearch import Batch, OpenSearchModuleReadModel

RETRY_LOG = "bulk items rejected with 429; retrying them"


class BulkClient:
    """Answers each `_bulk` with the statuses it is given, one list per request, and keeps the
    ids each request carried."""

    def __init__(self, *answers: list[int]) -> None:
        self.answers = list(answers)
        self.requests: list[list[str]] = []

    def bulk(self, body: bytes, refresh: str) -> dict[str, object]:
        lines = [orjson.loads(line) for line in body.splitlines()]
        ids = [line["index"]["_id"] for line in lines[::2]]
        self.requests.append(ids)
        statuses = self.answers.pop(0) if self.answers else [200] * len(ids)
        assert len(statuses) == len(ids)
        items = [{"index": {"_id": doc_id, "status": status}} for doc_id, status in zip(ids, statuses, strict=True)]
        return {"errors": any(status >= 300 for status in statuses), "items": items}


def _document(module_id: str) -> dict[str, object]:
    return {"tenant": "t", "id": module_id, "description": module_id, "state": "DRAFT"}


def _batch(*module_ids: str) -> Batch:
    return Batch(documents={f"t/{m}": (_document(m), n) for n, m in enumerate(module_ids, start=1)},
                 positions={"store": len(module_ids)})


def test_a_batch_applied_already_answered_409_is_neither_retried_nor_logged_as_429(caplog: pytest.LogCaptureFixture) -> None:
    client = BulkClient([409, 409, 409], [409])
    view = OpenSearchModuleReadModel(client, index="modules", retry_base_seconds=60)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="toolsmith.projections.opensearch"):
        view.write(_batch("a", "b", "c"))
    # one request for the documents, one for the position: no retry (its pause would be a minute)
    assert client.requests == [["t/a", "t/b", "t/c"], ["tracking/store"]]
    assert RETRY_LOG not in caplog.text and "429" not in caplog.text


def test_only_the_items_answered_429_are_retried_and_the_log_counts_them(caplog: pytest.LogCaptureFixture) -> None:
    client = BulkClient([409, 429, 200], [200], [200])
    view = OpenSearchModuleReadModel(client, index="modules", retry_base_seconds=0.001)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="toolsmith.projections.opensearch"):
        view.write(_batch("a", "b", "c"))
    assert client.requests == [["t/a", "t/b", "t/c"], ["t/b"], ["tracking/store"]]
    retries = [record for record in caplog.records if record.getMessage() == RETRY_LOG]
    assert [(record.items, record.attempt) for record in retries] == [(1, 1)]  # type: ignore[attr-defined]
