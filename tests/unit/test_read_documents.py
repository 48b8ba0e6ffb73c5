"""Read-side documents hold one copy of each name that repeats across modules (issue 15, 8)."""

import json
from datetime import datetime, timezone

from projections.documents import new_document, part, touched

EVENT = json.dumps({"tenant": "acme", "by": "ana", "definition": {
    "description": "Formats dates", "content": "", "imports": ["dates"],
    "tool": {"tags": ["time", "text"], "exposeInChat": True}}})


def _document(module_id: str) -> dict:
    event = json.loads(EVENT)  # each event is decoded into strings of its own
    document = new_document(event["tenant"], module_id)
    document["draft"] = part(event["definition"])
    return touched(document, event["by"], datetime(2026, 1, 1, tzinfo=timezone.utc))


def test_two_documents_share_their_tenant_author_tags_and_imports():
    a, b = _document("a"), _document("b")
    assert a["tenant"] is b["tenant"] and a["updatedBy"] is b["updatedBy"]
    assert all(x is y for x, y in zip(a["tags"], b["tags"]))
    assert a["imports"][0] is b["imports"][0]
    assert (a["tags"], a["imports"], a["updatedBy"]) == (["time", "text"], ["dates"], "ana")
