"""console.display.when: one date format on every page, a relative time in a <time> whose title is
the absolute time in UTC; any input shape accepted, none an error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from console.display import when
from console.pages import Pages

NOW = datetime(2026, 12, 2, 4, 34, 7, tzinfo=UTC)
THEN = datetime(2026, 12, 2, 4, 31, 7, tzinfo=UTC)
SHOWN = '<time datetime="2026-12-02T04:31:07Z" title="2 Dec 2026, 04:31 UTC">3 minutes ago</time>'


def test_every_shape_of_a_moment_is_the_same_time_element() -> None:
    for value in (THEN, THEN.replace(tzinfo=None), "2026-12-02T04:31:07Z", "2026-12-02T05:31:07+01:00",
                  THEN.timestamp(), int(THEN.timestamp() * 1000), THEN.astimezone(timezone(timedelta(hours=-5)))):
        assert str(when(value, now=NOW)) == SHOWN, value


def test_relative_words_both_ways_and_the_absolute_text() -> None:
    assert ">just now<" in when(NOW - timedelta(seconds=4), now=NOW)
    assert ">in 2 days<" in when(NOW + timedelta(days=2), now=NOW)
    assert ">2 Dec 2026, 04:31 UTC<" in when(THEN, absolute_text=True)


def test_no_date_is_a_dash_and_a_non_date_is_shown_escaped() -> None:
    assert when(None) == "—" and when("") == "—"
    assert str(when("<soon>")) == "&lt;soon&gt;"


def test_templates_have_the_filter() -> None:
    env = Pages().env
    assert 'datetime="2026-12-02T04:31:07Z"' in env.from_string("{{ t|when }}").render(t=THEN)
