"""The event store's JSON transcoder, with a faster decoder: decoding stored events is most of
what a replay or a read-model rebuild spends its time on.

Encoding is eventsourcing's own, so stored events stay byte for byte what `JSONTranscoder` writes.
Decoding parses with orjson, then applies the registered transcodings (`{"_type_": …, "_data_": …}`
objects: datetimes, UUIDs, decimals) exactly where `JSONTranscoder`'s `object_hook` would:

- Inside a JSON string every `"` is escaped, so the bytes `"_type_":` occur only where an object
  has a `_type_` key. Counting them tells whether every such object is a value of the top-level
  object (an event's own attributes, as in every event of ours); those are revived directly.
- Otherwise (user data shaped like a transcoding, say) the whole tree is walked, innermost first.
- What orjson refuses and Python's `json` accepts (integers beyond 64 bits, `NaN`, `Infinity`)
  is decoded by the standard decoder.
"""

from __future__ import annotations

from typing import Any

import orjson
from eventsourcing.persistence import JSONTranscoder

_TYPE_KEY = b'"_type_":'


class FastJSONTranscoder(JSONTranscoder):
    def decode(self, data: bytes) -> Any:
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError:
            return super().decode(data)
        typed = data.count(_TYPE_KEY)
        if typed == 0:
            return parsed
        if type(parsed) is dict:
            top = [key for key, value in parsed.items() if type(value) is dict and "_type_" in value]
            if len(top) == typed:
                for key in top:
                    parsed[key] = self._decode_obj(parsed[key])
                return parsed
        return self._revive(parsed)

    def _revive(self, value: Any) -> Any:
        """What `object_hook` does: every object, innermost first."""
        if type(value) is dict:
            for key, item in value.items():
                if type(item) in (dict, list):
                    value[key] = self._revive(item)
            return self._decode_obj(value)
        if type(value) is list:
            for index, item in enumerate(value):
                if type(item) in (dict, list):
                    value[index] = self._revive(item)
        return value
