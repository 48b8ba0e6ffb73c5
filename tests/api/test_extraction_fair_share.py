"""Fair share of document extraction (issue 28, finding 5; docs/tenants.md), through the File Search kind
of a wired service with real extraction processes: while tenant alpha's upload of slow, hostile PDFs
fills its share of the extraction workers, tenant beta's one-line text file is extracted at once,
beside them, not after alpha's queue; alpha never runs more extractions at once than its share; and
one upload's documents all end within the upload's time limit, those it did not reach FAILED with
the reason. The tests assert the order things happen in and who held which worker, never how long
they took; the limits they depend on are set here."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolkinds.search_tools.kind import SearchToolKind, Upload
from infrastructure.settings import Settings
from tests import documents
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN

ALPHA, BETA = "alpha", "beta"
TOOL = "docs"


class Extractions:
    """Wraps the kind's extraction: records, per tenant (the file's name starts with it), how many
    run at once and the order they end in."""

    def __init__(self, extract: Any) -> None:
        self._extract = extract
        self._lock = threading.Lock()
        self.running: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.ended: list[str] = []

    def __call__(self, path: str, media_type: str, **options: Any) -> Any:
        name = Path(path).name
        tenant = name.split("-")[0]
        with self._lock:
            self.running[tenant] = self.running.get(tenant, 0) + 1
            self.most[tenant] = max(self.most.get(tenant, 0), self.running[tenant])
        try:
            return self._extract(path, media_type, **options)
        finally:
            with self._lock:
                self.running[tenant] -= 1
                self.ended.append(name)


@pytest.fixture
def service(tmp_path: Path, shared_sandbox: Any, request: pytest.FixtureRequest,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SearchToolKind, Extractions]]:  # fmt: skip
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, extract_workers=2, **request.param)
    services = wire(settings, shared_sandbox)
    services.start()
    try:
        kind = services.toolbox.kind(SearchToolKind)
        files = kind.files
        recorder = Extractions(files.extract)
        recorded = dataclasses.replace(files, extract=recorder)
        monkeypatch.setattr(SearchToolKind, "files", property(lambda self: recorded))
        for tenant in (ALPHA, BETA):
            kind.save(tenant, TOOL, {"description": f"{tenant}'s documents"}, by="admin", create=True)
        yield kind, recorder
    finally:
        services.close()


def upload(kind: SearchToolKind, tmp_path: Path, tenant: str, *files: tuple[str, bytes]) -> list[dict[str, Any]]:
    """One upload of `files` by `tenant`; each spooled under a name starting with the tenant's."""
    spooled = []
    for name, data in files:
        path = tmp_path / f"{tenant}-{name}"
        path.write_bytes(data)
        spooled.append(Upload(name, path))
    return kind.upload(tenant, TOOL, spooled, by="admin")


def state(kind: SearchToolKind, tenant: str, document: dict[str, Any]) -> dict[str, Any]:
    return kind.document(tenant, TOOL, document["id"])


def settled(kind: SearchToolKind, tenant: str, document: dict[str, Any], timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (now := state(kind, tenant, document))["state"] == "PROCESSING":
        assert time.monotonic() < deadline, f"{document['name']} still PROCESSING after {timeout} s"
        time.sleep(0.05)
    return now


def hostile_pdfs(count: int) -> list[tuple[str, bytes]]:
    """PDFs that keep their parser busy for minutes (each different: one document each)."""
    return [(f"loop{n}.pdf", documents.looping_pdf(pages=200 + n)) for n in range(count)]


@pytest.mark.parametrize("service", [{"extract_timeout_seconds": 3}], indirect=True)
def test_another_tenants_one_line_file_is_extracted_beside_a_flood_not_after_it(
        service: tuple[SearchToolKind, Extractions], tmp_path: Path) -> None:  # fmt: skip
    kind, extractions = service
    flood = upload(kind, tmp_path, ALPHA, *hostile_pdfs(3))
    deadline = time.monotonic() + 60
    while not extractions.running.get(ALPHA):  # alpha's first hostile PDF holds a worker
        assert time.monotonic() < deadline, "alpha's extraction never started"
        time.sleep(0.01)
    note = upload(kind, tmp_path, BETA, ("note.txt", b"one line about a heron\n"))[0]
    assert settled(kind, BETA, note)["state"] == "READY"
    waiting = [d["name"] for d in flood if state(kind, ALPHA, d)["state"] == "PROCESSING"]
    # Beta's file did not wait for alpha's queue: most of alpha's flood is still to come.
    assert len(waiting) >= 2, (waiting, extractions.ended)
    for document in flood:
        finished = settled(kind, ALPHA, document)
        assert finished["state"] == "FAILED" and "longer than 3 s" in finished["reason"], finished
    # With the default share (half of 2 workers), alpha never held both workers at once.
    assert extractions.most == {ALPHA: 1, BETA: 1}
    assert extractions.ended.index("beta-note.txt") < extractions.ended.index("alpha-loop1.pdf")


@pytest.mark.parametrize("service", [{"extract_timeout_seconds": 20, "upload_max_seconds": 3}], indirect=True)
def test_an_uploads_documents_all_end_within_its_time_limit_the_rest_failed_with_the_reason(
        service: tuple[SearchToolKind, Extractions], tmp_path: Path) -> None:  # fmt: skip
    kind, extractions = service
    flood = upload(kind, tmp_path, ALPHA, *hostile_pdfs(3))
    ended = [settled(kind, ALPHA, document) for document in flood]
    for document in ended:
        assert document["state"] == "FAILED", document
        assert document["reason"].startswith("its upload's documents were not all extracted within 3 s"), document
    # Only one was ever begun (alpha's share is one worker): the one cut at the limit; the two it
    # never reached were failed without an extraction, not lost.
    assert extractions.ended == ["alpha-loop0.pdf"]
    # The limit is the upload's: a later upload of the same tenant, and another tenant's, go on.
    later = upload(kind, tmp_path, ALPHA, ("later.md", b"# Later\n\nuploaded after: bittern\n"))[0]
    other = upload(kind, tmp_path, BETA, ("note.txt", b"one line about a heron\n"))[0]
    assert settled(kind, ALPHA, later)["state"] == "READY"
    assert settled(kind, BETA, other)["state"] == "READY"
