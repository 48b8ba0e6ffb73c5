"""The faster event decoder must read every stored event exactly as eventsourcing's own does."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.application import Application
from eventsourcing.persistence import JSONTranscoder

from infrastructure.transcoder import FastJSONTranscoder


def _transcoders() -> tuple[JSONTranscoder, FastJSONTranscoder]:
    standard, fast = JSONTranscoder(), FastJSONTranscoder()
    for transcoder in (standard, fast):
        Application.register_transcodings(None, transcoder)  # type: ignore[arg-type]
    return standard, fast


WHEN = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
CASES: dict[str, Any] = {
    "an event of ours": {"timestamp": WHEN, "tenant": "t", "module_id": "m", "definition": {"tool": {"tags": ["a"]}}},
    "nothing typed": {"a": [1, 2.5, None, True, "x"], "b": {"c": "ü ☃ 😀"}},
    "typed values deep inside": {"timestamp": WHEN, "nested": {"list": [{"when": WHEN}, uuid4()], "amount": Decimal("1.10")}},
    "user data that mentions the key": {"timestamp": WHEN, "content": 'const o = {"_type_": 1, "_data_": 2}; "_type_":'},
    "a key in user data, not top-level": {"definition": {"default": {"_type_": "uuid_hex", "_data_": uuid4().hex}}},
    "a top-level typed object with a third key": {"x": {"_type_": "uuid_hex", "_data_": uuid4().hex, "more": 1}},
    "a big integer": {"n": 2**80, "timestamp": WHEN},
    "a list at the top": [WHEN, {"_type_": "uuid_hex", "_data_": uuid4().hex}],
    "a bare value": "just a string",
}


@pytest.mark.parametrize("name", list(CASES))
def test_fast_decoding_equals_the_standard_one(name: str) -> None:
    standard, fast = _transcoders()
    data = standard.encode(CASES[name])
    assert fast.encode(CASES[name]) == data  # writing is unchanged
    assert fast.decode(data) == standard.decode(data)


def test_what_orjson_refuses_is_decoded_by_the_standard_decoder() -> None:
    standard, fast = _transcoders()
    data = standard.encode({"x": math.inf, "timestamp": WHEN})
    assert fast.decode(data) == standard.decode(data) == {"x": math.inf, "timestamp": WHEN}


def test_the_application_reads_its_events_with_it(tmp_path: Any) -> None:
    from infrastructure.settings import Settings

    settings = Settings(data_dir=tmp_path)
    app = Application(settings.event_store_env())
    assert isinstance(app.mapper.transcoder, FastJSONTranscoder)
