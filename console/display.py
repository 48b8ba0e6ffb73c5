"""How the console shows values. V5: at most 128 KB of any output or log text, saying so when it cut
more (the live call applies no such cap), one rule for the Test window, the Playground and plan runs.
Dates: one format on every page (`when`, the `when` filter of every template): a relative time
("3 minutes ago") in a `<time>` whose `datetime` is the ISO instant and whose title is the absolute
time, always in UTC ("2 Dec 2026, 04:31 UTC")."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from babel.dates import format_timedelta
from markupsafe import Markup, escape

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


NO_DATE = "—"


def instant(value: datetime | str | float | None) -> datetime | None:
    """A datetime in UTC from a datetime (naive ones are UTC), an ISO 8601 string or a Unix time in
    seconds (or milliseconds, for the browser's numbers); None for None, "" and what is none of these."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, (int, float)):
        seconds = value / 1000 if abs(value) > 1e11 else value  # after 5138 AD in seconds: milliseconds
        try:
            moment = datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    else:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def absolute(moment: datetime) -> str:
    """The one absolute format: "2 Dec 2026, 04:31 UTC"."""
    return f"{moment.day} {moment:%b %Y, %H:%M} UTC"


def relative(moment: datetime, now: datetime | None = None) -> str:
    """"3 minutes ago", "in 2 days"; "just now" within ten seconds either way."""
    delta = moment - (now or datetime.now(UTC))
    if abs(delta.total_seconds()) < 10:
        return "just now"
    return format_timedelta(delta, add_direction=True, locale="en")


def when(value: datetime | str | float | None, *, absolute_text: bool = False, now: datetime | None = None) -> Markup:
    """`<time datetime="2026-12-02T04:31:07Z" title="2 Dec 2026, 04:31 UTC">3 minutes ago</time>`;
    with `absolute_text` the text is the absolute time too (a log, where the exact minute is read);
    "—" when there is no date. A string that is no date is shown as it is (escaped), never an error."""
    moment = instant(value)
    if moment is None:
        return Markup(NO_DATE) if value in (None, "") else Markup(escape(str(value)))
    iso = moment.isoformat(timespec="seconds").replace("+00:00", "Z")
    exact = absolute(moment)
    text = exact if absolute_text else relative(moment, now)
    return Markup('<time datetime="{}" title="{}">{}</time>').format(iso, exact, text)
