"""V5: the console shows at most 128 KB of any output or log text, and says so when it cut more
(the live call applies no such cap). One rule for the Test window, the Playground and plan runs."""

from __future__ import annotations

import math
from typing import Any

SHOWN_BYTES = 128 * 1024


def shown(text: str | None) -> dict[str, Any] | None:
    """At most SHOWN_BYTES of `text` (UTF-8, never a broken character), whether it was cut, and
    the whole size in KB."""
    if text is None:
        return None
    encoded = text.encode("utf-8", errors="replace")
    cut = len(encoded) > SHOWN_BYTES
    if cut:
        text = encoded[:SHOWN_BYTES].decode("utf-8", errors="ignore")
    return {"text": text, "cut": cut, "bytes": len(encoded), "total_kb": math.ceil(len(encoded) / 1024)}
