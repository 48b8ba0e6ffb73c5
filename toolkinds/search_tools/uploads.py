"""An upload's files as they reach a File Search tool (docs/kinds/file-search-tools.md): each part of
a multipart form spooled into a file of the kind's work folder, never whole in memory, and refused
with 413 once it passes `TOOLSMITH_MAX_UPLOAD_MB`. The REST upload and the console's take the same
steps through `spooled`, then hand the files to the kind's `upload`, which takes them over."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from domain.errors import InvalidInput, UploadTooLarge, Violation
from toolkinds.search_tools.kind import Upload

CHUNK = 1_048_576


async def spooled(given: Sequence[Any], workdir: Path, limit: int) -> list[Upload]:
    """Each file part of a form in a file of its own (a part that is not a file is refused): all of
    them, or, when one is refused, none (those already spooled are removed)."""
    if any(not isinstance(item, UploadFile) for item in given):
        raise InvalidInput([Violation("files", "DOC", "must be files (multipart/form-data file parts)")])
    uploads: list[Upload] = []
    try:
        for item in given:
            uploads.append(Upload(item.filename or "document", await run_in_threadpool(spool, item, workdir, limit)))
    except BaseException:
        for upload in uploads:
            upload.path.unlink(missing_ok=True)
        raise
    return uploads


def form_metadata(given: Sequence[Any]) -> dict[str, Any] | None:
    """The upload's `metadata` field: one JSON object (None when the form has none), checked
    against the tool's schema by the kind."""
    if not given:
        return None
    if len(given) > 1 or not isinstance(given[0], str):
        raise InvalidInput([Violation("metadata", "DOC", "one form field holding a JSON object, given to every file")])
    try:
        value = orjson.loads(given[0])
    except orjson.JSONDecodeError:
        raise InvalidInput([Violation("metadata", "DOC", "is not JSON (a JSON object of key -> value)")]) from None
    if not isinstance(value, dict):
        raise InvalidInput([Violation("metadata", "DOC", "must be a JSON object of key -> value")])
    return value


def spool(item: UploadFile, workdir: Path, limit: int) -> Path:
    """The upload in a file of the kind's work folder (the kind takes it over), 413 past the cap."""
    handle, name = tempfile.mkstemp(prefix="upload-", dir=workdir)
    path = Path(name)
    size = 0
    try:
        with os.fdopen(handle, "wb") as target:
            item.file.seek(0)
            while piece := item.file.read(CHUNK):
                size += len(piece)
                if size > limit:
                    raise UploadTooLarge(f"{item.filename!r} is larger than {limit // 1_048_576} MB (TOOLSMITH_MAX_UPLOAD_MB)")
                target.write(piece)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def uploaded(documents: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The upload's answer (202): each document's id, name, state, type and size."""
    return {"documents": [{"id": d["id"], "name": d["name"], "state": d["state"], "mediaType": d["mediaType"],
                           "size": d["size"]} for d in documents]}
