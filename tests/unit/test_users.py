"""People's rules and credentials (docs/users.md, application/users.py): emails, locales and
passwords; the lockout's 15 minutes, counted per (tenant, email); and that a password or its hash
is never in an event."""

from __future__ import annotations

import pytest

from application.commands import CommandRunner
from application.store import Store
from application.users import InvitationInvalid, SignInLocked, SignInRefused, UserDisabled, Users, capped
from domain.users import actor, actor_of, canonical_locale, email_violations, locale_violations, users_id
from infrastructure.secret_vault import ephemeral_vault

PASSWORD = "correct horse battery staple"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _users(clock: Clock | None = None) -> tuple[Users, Store]:
    store = Store({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    return Users(store, CommandRunner(store), ephemeral_vault(store), clock=clock or Clock()), store


@pytest.mark.parametrize("email", ["ada@example.com", "a.b+c@sub.example.org", "ADA@Example.COM", "zoë@exämple.de"])
def test_good_emails(email: str) -> None:
    assert email_violations(email) == []


@pytest.mark.parametrize("email", ["", "ada", "ada@", "@example.com", "ada@example", "a b@example.com", "ada@@example.com", 3])
def test_bad_emails(email: object) -> None:
    assert [v.field for v in email_violations(email)] == ["email"]


def test_locales_are_bcp47_tags_babel_knows() -> None:
    for good in ("en", "fr", "de-CH", "zh-Hant-TW", "pt-BR"):
        assert locale_violations(good) == [], good
    for bad in ("", "english", "en_US", "xx-YY", "12"):
        assert locale_violations(bad), bad
    assert canonical_locale("de-ch") == "de-CH" and canonical_locale("zh-hant-tw") == "zh-Hant-TW"


def test_actor_names_the_person_and_reads_back() -> None:
    by = actor("0123456789abcdef", "Ada (the first) Lovelace", "console")
    assert actor_of(by) == {"user": "0123456789abcdef", "name": "Ada (the first) Lovelace", "via": "console"}
    assert actor_of("admin") is None and actor_of(None) is None


def test_a_token_is_capped_by_its_persons_role() -> None:
    assert capped("admin", None, "auditor", None) == ("auditor", None)
    assert capped("auditor", None, "admin", None) == ("auditor", None)
    assert capped("admin", None, "caller", "support") == ("caller", "support")
    assert capped("caller", "ops", "admin", None) == ("caller", "ops")


def test_the_lockout_lasts_15_minutes_and_a_good_password_clears_the_count() -> None:
    clock = Clock()
    users, _ = _users(clock)
    users.create("acme", "ada@example.com", "Ada", "admin", password=PASSWORD, by="admin")
    for _ in range(4):
        with pytest.raises(SignInRefused):
            users.sign_in("acme", "ada@example.com", "wrong")
    users.sign_in("acme", "ada@example.com", PASSWORD)  # clears the four
    for _ in range(4):
        with pytest.raises(SignInRefused):
            users.sign_in("acme", "ada@example.com", "wrong")
    with pytest.raises(SignInRefused):
        users.sign_in("acme", "ada@example.com", "wrong")  # the fifth locks
    with pytest.raises(SignInLocked) as locked:
        users.sign_in("acme", "Ada@Example.com", PASSWORD)
    assert locked.value.wait == pytest.approx(900)
    # Another tenant's same email is another key.
    with pytest.raises(SignInRefused):
        users.sign_in("globex", "ada@example.com", PASSWORD)
    clock.now += 899
    with pytest.raises(SignInLocked):
        users.sign_in("acme", "ada@example.com", PASSWORD)
    clock.now += 2
    assert users.sign_in("acme", "ada@example.com", PASSWORD)["email"] == "ada@example.com"


def test_failures_older_than_the_window_do_not_count() -> None:
    clock = Clock()
    users, _ = _users(clock)
    users.create("acme", "ada@example.com", "Ada", "admin", password=PASSWORD, by="admin")
    for _ in range(4):
        with pytest.raises(SignInRefused):
            users.sign_in("acme", "ada@example.com", "wrong")
        clock.now += 300
    # The first of the four is more than 15 minutes old: this is the fourth in the window.
    with pytest.raises(SignInRefused):
        users.sign_in("acme", "ada@example.com", "wrong")
    assert users.sign_in("acme", "ada@example.com", PASSWORD)


def test_a_disabled_or_invited_person_is_refused_like_anyone() -> None:
    users, _ = _users()
    ada = users.create("acme", "ada@example.com", "Ada", "admin", password=PASSWORD, by="admin")
    users.disable("acme", ada["id"], by="admin")
    with pytest.raises(SignInRefused):
        users.sign_in("acme", "ada@example.com", PASSWORD)
    users.invite("acme", "bob@example.com", "Bob", "auditor", by="admin")
    with pytest.raises(SignInRefused):
        users.sign_in("acme", "bob@example.com", "")


def test_an_expired_or_forged_invitation_is_refused() -> None:
    users, _ = _users()
    _, invitation = users.invite("acme", "bob@example.com", "Bob", "auditor", by="admin")
    code = invitation["code"]
    for forged in ("", "tsi_", code[:-2] + "xx", code.replace("tsi_acme", "tsi_globex"), "tsi_acme.nobody.secret"):
        with pytest.raises(InvitationInvalid):
            users.accept_invitation(forged, PASSWORD)
    users.invitation_hours = -1  # a new invitation that expired already
    user = users.find_email("acme", "bob@example.com")
    _, expired = users.reinvite("acme", user["id"], by="admin")
    with pytest.raises(InvitationInvalid):
        users.accept_invitation(expired["code"], PASSWORD)
    with pytest.raises(InvitationInvalid):
        users.accept_invitation(code, PASSWORD)  # replaced by the newer one


def test_no_event_holds_a_password_its_hash_or_an_invitation_code() -> None:
    users, store = _users()
    ada = users.create("acme", "ada@example.com", "Ada", "admin", password=PASSWORD, by="admin")
    users.set_password("acme", ada["id"], "another long password", current=PASSWORD, check_current=True, by="ada")
    _, invitation = users.invite("acme", "bob@example.com", "Bob", "auditor", by="admin")
    users.accept_invitation(invitation["code"], "bobs own password!")
    users.sign_in("acme", "bob@example.com", "bobs own password!")
    stored = " ".join(repr(vars(e)) for e in store.stored_events(users_id("acme")))
    secret = invitation["code"].rsplit(".", 1)[1]
    for needle in (PASSWORD, "another long password", "bobs own password!", "$argon2", secret):
        assert needle not in stored
    assert "PasswordSet" in " ".join(type(e).__name__ for e in store.stored_events(users_id("acme")))


def test_single_sign_on_finds_or_creates_the_person_just_in_time() -> None:
    users, _ = _users()
    first = users.find_or_create("acme", "Ada@Example.com", name="Ada", role="auditor", locale="fr",
                                 issuer="https://idp.example", subject="s-1")
    assert first["role"] == "auditor" and first["singleSignOn"] and first["status"] == "active" and first["lastSignInAt"]
    # The same subject under a new email is the same person; the role follows the provider with `sync`.
    again = users.find_or_create("acme", "ada.new@example.com", name="Ada", role="admin",
                                 issuer="https://idp.example", subject="s-1", sync=True)
    assert again["id"] == first["id"] and again["role"] == "admin"
    # A person an admin added is linked by email.
    bob = users.create("acme", "bob@example.com", "Bob", "caller", password=PASSWORD, by="admin")
    linked = users.find_or_create("acme", "bob@example.com", name="Bob", role="caller", issuer="https://idp.example", subject="s-2")
    assert linked["id"] == bob["id"] and linked["singleSignOn"] and linked["hasPassword"]
    users.disable("acme", bob["id"], by="admin")
    with pytest.raises(UserDisabled):
        users.find_or_create("acme", "bob@example.com", name="Bob", role="caller", issuer="https://idp.example", subject="s-2")
