"""The people of a tenant (docs/users.md): who they are (email, display name, locale), what they may
do (a role, and a caller's usage profile), whether they may sign in (disabled or not), and the
rules their fields follow.

Each tenant's people live in one `UserRegistry` aggregate: a tenant has tens or hundreds of them,
an email is taken once per tenant (one aggregate checks it exactly), and an auditor reads each
change as an event of its own. Its events never hold a password, a password's hash or an
invitation's secret: those are credentials, kept outside the log (`application/users.py`); an
event says only that a password was set, or that an invitation was issued and until when.

`by` (who did a change, on every event of every aggregate) is a string, as it always was: for a
person it is `actor(...)`, "Ada Lovelace (user 3f2a9c1e0b7d4a65, via console)", which names the
user's id and how they came (`console`, `token`, `oauth`); `actor_of` reads it back. An event a
token without a person recorded keeps the token's name, as before.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from functools import lru_cache
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import event

from domain.chain import Chained
from domain.errors import Violation

Record = dict[str, Any]

_NAMESPACE = uuid5(NAMESPACE_URL, "https://toolsmith.invalid/aggregates")

ADMIN = "admin"
AUDITOR = "auditor"
CALLER = "caller"
USER_ROLES = (ADMIN, AUDITOR, CALLER)
# How a person came: a console session (password or single sign-on), one of their tokens, an OAuth client.
CONSOLE = "console"
TOKEN = "token"
OAUTH = "oauth"
VIA = (CONSOLE, TOKEN, OAUTH)

ACTIVE = "active"
INVITED = "invited"
DISABLED = "disabled"

MIN_PASSWORD = 12
MAX_PASSWORD = 1_024
MAX_NAME = 200
MAX_EMAIL = 254
# The rule the violations name: the page that says how people are managed.
RULE = "docs/users.md"

# A pragmatic address: one '@', a local part without spaces, a domain of dot-separated labels.
_EMAIL = re.compile(r"[^@\s]{1,64}@(?=.{1,253}\Z)(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+[^\W\d_]{2,63}\Z")
# BCP 47 when Babel cannot say (a language, then script, region and variants).
_LOCALE = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z]{4})?(?:-(?:[A-Za-z]{2}|\d{3}))?(?:-(?:[A-Za-z\d]{5,8}|\d[A-Za-z\d]{3}))*\Z")
_ACTOR = re.compile(r"(?P<name>.*) \(user (?P<user>[0-9a-f]{16}), via (?P<via>[a-z]+)\)\Z", re.DOTALL)


@lru_cache(maxsize=1_024)
def users_id(tenant: str) -> UUID:
    return uuid5(_NAMESPACE, f"users/{tenant}")


def normalized_email(email: str) -> str:
    """An email as it is compared and kept: NFKC, trimmed, lower case (one person, however typed)."""
    return unicodedata.normalize("NFKC", email).strip().lower()


def actor(user_id: str, name: str, via: str) -> str:
    """What `by` records for a person: their display name, their id and how they came."""
    return f"{name} (user {user_id}, via {via})"


def actor_of(by: str | None) -> Record | None:
    """`{"user", "name", "via"}` of a `by` that names a person; None for a token's name (older
    events, scripts' tokens) or nothing."""
    found = _ACTOR.match(by) if isinstance(by, str) else None
    return {"user": found["user"], "name": found["name"], "via": found["via"]} if found else None


class UserRegistry(Chained):
    """One tenant's people, by id; an email index keeps an address taken once."""

    @staticmethod
    def create_id(tenant: str) -> UUID:  # type: ignore[override]
        return users_id(tenant)

    @event("Started")
    def __init__(self, tenant: str, previous_hash: str = "") -> None:
        self.tenant = tenant
        self.users: dict[str, Record] = {}
        self.by_email: dict[str, str] = {}
        # Which person each of their tokens belongs to; kept after the person is deleted, so that
        # their tokens stay refused (a token whose owner is gone is no one's).
        self.token_owners: dict[str, str] = {}

    # -- queries -----------------------------------------------------------------------------

    def get(self, user_id: str) -> Record | None:
        return self.users.get(user_id) if isinstance(user_id, str) else None

    def with_email(self, email: str) -> Record | None:
        user_id = self.by_email.get(normalized_email(email))
        return self.users.get(user_id) if user_id is not None else None

    def with_subject(self, issuer: str, subject: str) -> Record | None:
        return next((u for u in self.users.values() if u.get("sso") == {"issuer": issuer, "subject": subject}), None)

    def all(self) -> list[Record]:
        return sorted(self.users.values(), key=lambda u: (u["createdAt"] or "", u["id"]))

    # -- commands ----------------------------------------------------------------------------

    def add(self, user_id: str, email: str, name: str, role: str, usage_profile: str | None, locale: str,
            invited: bool, by: str, sso: Record | None = None) -> None:
        self._added(user_id=user_id, email=normalized_email(email), name=name, role=role, usage_profile=usage_profile,
                    locale=locale, invited=invited, sso=sso, by=by)

    def change(self, user_id: str, changes: Record, by: str) -> None:
        self._changed(user_id=user_id, changes=changes, by=by)

    def disable(self, user_id: str, by: str) -> None:
        self._disabled(user_id=user_id, by=by)

    def enable(self, user_id: str, by: str) -> None:
        self._enabled(user_id=user_id, by=by)

    def delete(self, user_id: str, by: str) -> None:
        self._deleted(user_id=user_id, by=by)

    def password_set(self, user_id: str, by: str) -> None:
        self._password_set(user_id=user_id, by=by)

    def invite(self, user_id: str, until: str, by: str) -> None:
        self._invited(user_id=user_id, until=until, by=by)

    def signed_in(self, user_id: str, via: str) -> None:
        self._signed_in(user_id=user_id, via=via)

    def link(self, user_id: str, sso: Record, by: str) -> None:
        self._linked(user_id=user_id, sso=sso, by=by)

    def own_token(self, user_id: str, token_id: str, by: str) -> None:
        self._token_owned(user_id=user_id, token_id=token_id, by=by)

    @event("UserAdded")
    def _added(self, user_id: str, email: str, name: str, role: str, usage_profile: str | None, locale: str,
               invited: bool, sso: Record | None, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        at = _iso(timestamp)
        self.users[user_id] = {
            "id": user_id, "email": email, "name": name, "role": role, "usageProfile": usage_profile,
            "locale": locale, "disabled": False, "hasPassword": False, "invitedUntil": None, "sso": sso,
            "lastSignInAt": None, "version": 1, "createdAt": at, "createdBy": by, "updatedAt": at, "updatedBy": by,
        }
        self.by_email[email] = user_id

    @event("UserChanged")
    def _changed(self, user_id: str, changes: Record, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        user = self.users[user_id]
        for field, key in (("name", "name"), ("role", "role"), ("usageProfile", "usageProfile"), ("locale", "locale")):
            if field in changes:
                user[key] = changes[field]
        if user["role"] != CALLER:
            user["usageProfile"] = None
        _touched(user, by, timestamp)

    @event("UserDisabled")
    def _disabled(self, user_id: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        _touched(self.users[user_id], by, timestamp)["disabled"] = True

    @event("UserEnabled")
    def _enabled(self, user_id: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        _touched(self.users[user_id], by, timestamp)["disabled"] = False

    @event("UserDeleted")
    def _deleted(self, user_id: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        user = self.users.pop(user_id, None)
        if user is not None:
            self.by_email.pop(user["email"], None)

    @event("PasswordSet")
    def _password_set(self, user_id: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        user = _touched(self.users[user_id], by, timestamp)
        user["hasPassword"] = True
        user["invitedUntil"] = None

    @event("InvitationIssued")
    def _invited(self, user_id: str, until: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        _touched(self.users[user_id], by, timestamp)["invitedUntil"] = until

    @event("SignedIn")
    def _signed_in(self, user_id: str, via: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        # Not a change of the person: their version (the ETag) stays.
        self.users[user_id]["lastSignInAt"] = _iso(timestamp)

    @event("SingleSignOnLinked")
    def _linked(self, user_id: str, sso: Record, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        _touched(self.users[user_id], by, timestamp)["sso"] = sso


    @event("TokenOwned")
    def _token_owned(self, user_id: str, token_id: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.token_owners[token_id] = user_id


def status(user: Record) -> str:
    """`disabled`, `invited` (no password yet, no single sign-on) or `active`."""
    if user["disabled"]:
        return DISABLED
    if not user["hasPassword"] and user.get("sso") is None:
        return INVITED
    return ACTIVE


def _iso(timestamp: datetime | None) -> str | None:
    return timestamp.isoformat() if timestamp is not None else None


def _touched(user: Record, by: str, timestamp: datetime | None) -> Record:
    user["updatedAt"] = _iso(timestamp)
    user["updatedBy"] = by
    user["version"] = user.get("version", 1) + 1
    return user


# -- rules -------------------------------------------------------------------------------------


def email_violations(email: Any, field: str = "email") -> list[Violation]:
    if not isinstance(email, str) or len(normalized_email(email)) > MAX_EMAIL or not _EMAIL.match(normalized_email(email)):
        return [Violation(field, RULE, "must be an email address, such as ada@example.com")]
    return []


def name_violations(name: Any, field: str = "name") -> list[Violation]:
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        return [Violation(field, RULE, f"a display name has 1 to {MAX_NAME} characters")]
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in name):
        return [Violation(field, RULE, "a display name has no control characters")]
    return []


def role_violations(role: Any, field: str = "role") -> list[Violation]:
    if role not in USER_ROLES:
        return [Violation(field, RULE, f"must be one of {', '.join(USER_ROLES)}")]
    return []


def password_violations(password: Any, field: str = "password") -> list[Violation]:
    """At least `MIN_PASSWORD` characters (NIST SP 800-63B: length, no composition rules)."""
    if not isinstance(password, str) or len(password) < MIN_PASSWORD:
        return [Violation(field, RULE, f"a password has at least {MIN_PASSWORD} characters")]
    if len(password) > MAX_PASSWORD:
        return [Violation(field, RULE, f"a password has at most {MAX_PASSWORD} characters")]
    return []


def locale_violations(locale: Any, field: str = "locale") -> list[Violation]:
    """A BCP 47 language tag that Babel knows (`en`, `de-CH`, `zh-Hant-TW`); the tag's pattern when
    Babel is not installed."""
    message = [Violation(field, RULE, "must be a BCP 47 language tag that names a known locale, such as en, fr or de-CH")]
    if not isinstance(locale, str) or not _LOCALE.match(locale):
        return message
    try:
        from babel import Locale, UnknownLocaleError
    except ImportError:  # pragma: no cover - Babel is a dependency; the pattern is the fallback
        return []
    try:
        Locale.parse(locale, sep="-")
    except (UnknownLocaleError, ValueError):
        return message
    return []


def canonical_locale(locale: str) -> str:
    """A tag in its usual case: `de-ch` → `de-CH`, `zh-hant-tw` → `zh-Hant-TW`."""
    parts = locale.split("-")
    out = [parts[0].lower()]
    for part in parts[1:]:
        out.append(part.title() if len(part) == 4 and part.isalpha() else part.upper() if len(part) in (2, 3) else part.lower())
    return "-".join(out)
