"""The console's session cookies (console/session.py): a signature is checked once per cookie value
and the verdict kept, so each later request with the same value checks only its age and whether it
was signed out. Whatever is kept, a changed cookie, another key, an old or signed-out session and a
wrong CSRF token are still refused, on the first request and every one after."""

from __future__ import annotations

import time

import pytest

from console import session as sessions_module
from console.session import Session, Sessions

KEY = "a-long-random-session-key-for-the-tests-0123456789"
HOUR = 3600.0


def _tampered(value: str) -> list[str]:
    """The value changed in each of its three parts (payload, timestamp, signature), one character each."""
    payload, stamp, signature = value.rsplit(".", 2)

    def flip(text: str) -> str:
        return ("A" if text[-1] != "A" else "B") + text[1:] if len(text) > 1 else ("A" if text != "A" else "B")

    return [f"{flip(payload)}.{stamp}.{signature}", f"{payload}.{flip(stamp)}.{signature}",
            f"{payload}.{stamp}.{flip(signature)}", value[:-1], value + "x"]


def test_a_session_reads_back_as_it_was_signed_and_again_from_what_was_kept() -> None:
    sessions = Sessions(KEY, HOUR)
    session, value = sessions.start("digest-of-the-token")
    assert sessions.read(value) == session
    assert sessions.read(value) == session  # the second read uses the kept verdict
    person, value = sessions.start_person("acme", "user-7")
    assert sessions.read(value) == person and person.kind == "person" and (person.tenant, person.user_id) == ("acme", "user-7")


def test_a_tampered_cookie_is_refused_even_after_the_genuine_one_was_read() -> None:
    sessions = Sessions(KEY, HOUR)
    _, value = sessions.start("digest")
    assert sessions.read(value) is not None
    for changed in _tampered(value):
        assert sessions.read(changed) is None, changed
    assert sessions.read(value) is not None


def test_a_cookie_signed_with_another_key_is_refused() -> None:
    old = Sessions(KEY, HOUR)
    _, value = old.start("digest")
    assert old.read(value) is not None
    rotated = Sessions(KEY + "-rotated", HOUR)
    assert rotated.read(value) is None
    assert rotated.read(value) is None  # the refusal is not kept as an acceptance either
    # and one signed under the new key is refused by the old
    _, new_value = rotated.start("digest")
    assert old.read(new_value) is None and rotated.read(new_value) is not None


def test_a_session_expires_after_max_age_even_once_its_signature_was_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    sessions = Sessions(KEY, HOUR)
    _, value = sessions.start("digest")
    assert sessions.read(value) is not None  # verified and kept
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + HOUR - 5)
    assert sessions.read(value) is not None
    monkeypatch.setattr(time, "time", lambda: now + HOUR + 5)
    assert sessions.read(value) is None
    # a fresh process (nothing kept) refuses it too: itsdangerous' own check
    assert Sessions(KEY, HOUR).read(value) is None
    # a cookie dated in the future is refused as itsdangerous refuses it
    monkeypatch.setattr(time, "time", lambda: now + 10 * HOUR)
    _, later = sessions.start("digest")
    monkeypatch.setattr(time, "time", lambda: now)
    assert sessions.read(later) is None and Sessions(KEY, HOUR).read(later) is None


def test_a_signed_out_session_is_refused_though_its_signature_was_kept() -> None:
    sessions = Sessions(KEY, HOUR)
    session, value = sessions.start("digest")
    other, other_value = sessions.start("digest")
    assert sessions.read(value) == session
    sessions.end(session)
    assert sessions.read(value) is None
    assert sessions.read(other_value) == other


def test_what_is_kept_is_bounded_and_a_dropped_value_is_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sessions_module, "VERIFIED", 8)
    sessions = Sessions(KEY, HOUR)
    values = [sessions.start(f"digest-{i}") for i in range(20)]
    for session, value in values:
        assert sessions.read(value) == session
    assert len(sessions._verified) <= 8  # noqa: SLF001 - the bound is the point
    for session, value in values:  # the oldest were dropped: verified again, still good
        assert sessions.read(value) == session


def test_only_good_signatures_are_kept() -> None:
    sessions = Sessions(KEY, HOUR)
    _, value = sessions.start("digest")
    for changed in _tampered(value):
        sessions.read(changed)
    sessions.read("not-a-cookie")
    assert sessions._verified == {}  # noqa: SLF001 - a guess fills nothing


def test_the_csrf_token_must_match_exactly() -> None:
    session = Session("sid", "digest", "the-csrf-token")
    assert Sessions.csrf_matches(session, "the-csrf-token")
    for wrong in (None, "", "the-csrf-toke", "the-csrf-token ", "THE-CSRF-TOKEN"):
        assert not Sessions.csrf_matches(session, wrong), wrong
