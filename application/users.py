"""The people of each tenant (docs/users.md): created with a password or invited, listed, changed,
disabled, enabled, deleted; their passwords checked at sign-in, with a lockout; and the principal a
person is when they call.

Each change is an event of the tenant's `UserRegistry` (`domain/users.py`), run by the
`CommandRunner`. A password is never in an event, an export or an answer: its argon2id hash
(argon2-cffi, RFC 9106's parameters) is a **credential**, kept encrypted in the secrets vault
(`domain.ports.SecretVault`: the `toolsmith_secrets` table of the event store's own database, SQLite or
PostgreSQL) under a namespace of its own, `people:<tenant>`, which no tenant's secrets list reads. So
is an invitation's one-time code (its SHA-256 only) and its expiry. The event says only that a
password was set, or that an invitation was issued and until when.

**Sign-in.** `sign_in(tenant, email, password)` gives the same answer, `SignInRefused`, for an
unknown email, a disabled person, a person without a password yet and a wrong password, and takes
the same time for each: an unknown email is verified against a dummy hash. After
`login_failures` wrong answers for one (tenant, email) within 15 minutes, that pair is locked for
15 minutes (`SignInLocked`, with the seconds to wait) whatever is presented, for an unknown email
as for a known one, so a lockout says nothing of who exists. The count is this process's (each
replica of a PostgreSQL store counts its own), bounded in size, and a correct password clears it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from eventsourcing.application import AggregateNotFoundError

from application.commands import Change, CommandRunner
from application.principals import Person, Principal
from application.store import Store
from domain.callers import PROFILE
from domain.errors import InvalidRecord, PreconditionFailed, RecordTaken, UnknownRecord, Violation
from domain.ports import SecretVault
from domain.users import (
    CALLER,
    CONSOLE,
    RULE,
    TOKEN,
    VIA,
    UserRegistry,
    actor,
    canonical_locale,
    email_violations,
    locale_violations,
    name_violations,
    normalized_email,
    password_violations,
    role_violations,
    status,
    users_id,
)

USER = "user"
Record = dict[str, Any]

LOCKOUT_SECONDS = 15 * 60
# At most this many (tenant, email) pairs are counted at once; the oldest go first.
MAX_COUNTED = 100_000
# The vault's "fingerprint" of a credential row: a row holds one credential, read by this name.
_CREDENTIAL = "credential"
INVITATION_PREFIX = "tsi_"


class SignInRefused(Exception):
    """The email and password do not match a person who may sign in (one answer for every reason)."""


class SignInLocked(Exception):
    """Too many wrong passwords for this (tenant, email): `wait` seconds until a new try."""

    def __init__(self, wait: float) -> None:
        super().__init__(f"locked for {wait:.0f} seconds")
        self.wait = wait


class UserDisabled(Exception):
    """A disabled person asked to sign in by single sign-on."""


class InvitationInvalid(Exception):
    """An invitation code that is unknown, used, replaced or expired."""


def credentials_namespace(tenant: str) -> str:
    """The vault's "tenant" under which a tenant's people's credentials are kept: no tenant's id
    holds a ':' (`domain.tenants.TENANT_ID`), so no secrets list ever reads these rows."""
    return f"people:{tenant}"


def public_user(user: Record) -> Record:
    """A person as every answer shows them: never a credential (none is in the record anyway)."""
    shown = {k: v for k, v in user.items() if k != "sso"}
    shown["status"] = status(user)
    shown["singleSignOn"] = user.get("sso") is not None
    return shown


class Users:
    def __init__(self, store: Store, commands: CommandRunner, vault: SecretVault, *, login_failures: int = 5,
                 invitation_hours: float = 72.0, hasher: PasswordHasher | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._commands = commands
        self._vault = vault
        self._hasher = hasher or PasswordHasher()  # argon2id, RFC 9106's low-memory parameters
        # Verified when the email is unknown, so that every refusal costs one verification.
        self._dummy = self._hasher.hash(secrets.token_urlsafe(24))
        self.login_failures = login_failures
        self.invitation_hours = invitation_hours
        self._clock = clock
        self._failures: dict[tuple[str, str], list[float]] = {}
        self._locked: dict[tuple[str, str], float] = {}
        self._counting = threading.Lock()
        self._listeners: list[Callable[[], None]] = []
        store.snapshot((UserRegistry,))  # every sign-in is an event: a cold load replays an interval at most

    def on_change(self, listener: Callable[[], None]) -> None:
        """`listener()` after a person was changed, disabled, enabled or deleted here (the console's
        sessions and the tokens of that person are asked again at once)."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in self._listeners:
            listener()

    # -- queries ------------------------------------------------------------------------------

    def registry(self, tenant: str, *, for_update: bool = False) -> UserRegistry:
        try:
            return self._store.repository.get(users_id(tenant), deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return UserRegistry(tenant=tenant)

    def list(self, tenant: str) -> list[Record]:
        """Every person of the tenant, oldest first."""
        return [public_user(u) for u in self.registry(tenant).all()]

    def page(self, tenant: str, *, after: str | None = None, limit: int = 50) -> tuple[list[Record], str | None]:
        """A page of people by email, after the email `after`; and the next page's cursor (None at the end)."""
        people = sorted(self.registry(tenant).users.values(), key=lambda u: u["email"])
        if after is not None:
            people = [u for u in people if u["email"] > after]
        page = people[:limit]
        return [public_user(u) for u in page], (page[-1]["email"] if len(people) > limit else None)

    def get(self, tenant: str, user_id: str) -> Record:
        user = self.registry(tenant).get(user_id)
        if user is None:
            raise UnknownRecord(USER, user_id)
        return public_user(user)

    def find_email(self, tenant: str, email: str) -> Record | None:
        user = self.registry(tenant).with_email(email) if isinstance(email, str) else None
        return public_user(user) if user is not None else None

    def holdings(self, tenant: str) -> list[str]:
        """What a tenant holds of people, as the operator reads it ("2 people"): a tenant with
        people is not deleted (their admins delete them first, as they do the tenant's tools)."""
        count = len(self.registry(tenant).users)
        return [f"{count} {'person' if count == 1 else 'people'}"] if count else []

    def history(self, tenant: str, user_id: str) -> list[Any]:
        """The registry's events about one person."""
        return [e for e in self._store.stored_events(users_id(tenant)) if getattr(e, "user_id", None) == user_id]

    def principal(self, tenant: str, user_id: str, via: str = CONSOLE, *, token: Record | None = None) -> Principal | None:
        """The principal a person is now, coming `via` (a console session, one of their tokens, an
        OAuth client); None when they are deleted or disabled. A token of theirs (`token`) keeps
        its own id and name, and its role is capped by the person's."""
        user = self.registry(tenant).get(user_id)
        if user is None or user["disabled"]:
            return None
        role, profile = user["role"], user["usageProfile"]
        if token is not None:
            role, profile = capped(token["role"], token.get("usageProfile"), user["role"], user["usageProfile"])
        person = Person(id=user["id"], name=user["name"], email=user["email"], locale=user["locale"])
        return Principal(name=actor(user["id"], user["name"], via), role=role, tenant=tenant, usage_profile=profile,
                         token_id=token["id"] if token is not None else None, user=person, via=via)

    def token_principal(self, issued: Record, plain: Principal) -> Principal | None:
        """Who an issued token stands for: `plain` (its own name and role) for a token no person
        owns; for a person's token, the person coming `via` token, its role capped by theirs; None
        when that person is disabled or deleted (their tokens stop working with them)."""
        registry = self.registry(issued["tenant"])
        owner = registry.token_owners.get(issued["id"])
        if owner is None:
            return plain
        return self.principal(issued["tenant"], owner, TOKEN, token=issued)

    def own_token(self, tenant: str, user_id: str, token_id: str, *, by: str) -> None:
        """Records that a token a person issued is theirs (before its secret is answered: it is
        never presented unowned)."""

        def attempt() -> Change[None]:
            registry = self._registry(tenant, user_id)
            registry.own_token(user_id, token_id, by)
            return Change(None, save=(registry,))

        self._commands.run(attempt, name=token_id)
        self._changed()

    def tokens_of(self, tenant: str, user_id: str) -> list[str]:
        """The ids of the tokens a person issued (revoked ones among them)."""
        return sorted(t for t, u in self.registry(tenant).token_owners.items() if u == user_id)

    # -- commands -----------------------------------------------------------------------------

    def create(self, tenant: str, email: str, name: str, role: str, *, password: str | None = None,
               usage_profile: str | None = None, locale: str = "en", by: str) -> Record:
        """A person who signs in with `password` (12 characters at least)."""
        found = self._violations(tenant, email=email, name=name, role=role, usage_profile=usage_profile, locale=locale)
        found += password_violations(password)
        if found:
            raise InvalidRecord(found)
        user = self._add(tenant, email, name, role, usage_profile, locale, invited=False, by=by)
        self._store_hash(tenant, user["id"], self._hasher.hash(password))  # type: ignore[arg-type]
        return self._record_password(tenant, user["id"], by)

    def invite(self, tenant: str, email: str, name: str, role: str, *, usage_profile: str | None = None,
               locale: str = "en", by: str) -> tuple[Record, Record]:
        """A person without a password yet, and their invitation (`{"code", "expiresAt"}`): the code,
        answered once, lets them set their password once, until it expires."""
        found = self._violations(tenant, email=email, name=name, role=role, usage_profile=usage_profile, locale=locale)
        if found:
            raise InvalidRecord(found)
        user = self._add(tenant, email, name, role, usage_profile, locale, invited=True, by=by)
        return self.reinvite(tenant, user["id"], by=by)

    def reinvite(self, tenant: str, user_id: str, *, by: str) -> tuple[Record, Record]:
        """A new invitation for a person (the one before stops working): to set a password, or a new one."""
        self.get(tenant, user_id)
        secret = secrets.token_urlsafe(32)
        until = (datetime.now(timezone.utc) + timedelta(hours=self.invitation_hours)).isoformat()
        code = f"{INVITATION_PREFIX}{tenant}.{user_id}.{secret}"
        self._put(tenant, user_id, {**self._credential(tenant, user_id), "invitation": _sha256(secret), "until": until})

        def attempt() -> Change[Record]:
            registry = self._registry(tenant, user_id)
            registry.invite(user_id, until, by)
            return Change(public_user(registry.users[user_id]), save=(registry,))

        user, _ = self._commands.run(attempt, name=user_id)
        return user, {"code": code, "expiresAt": until}

    def update(self, tenant: str, user_id: str, changes: Record, *, expected: int | None = None, by: str) -> Record:
        """Changes a person's `name`, `role`, `usageProfile` or `locale` (what is not named stays)."""
        current = self.get(tenant, user_id)
        role = changes.get("role", current["role"])
        profile = changes.get("usageProfile", current["usageProfile"] if role == CALLER else None)
        found = self._violations(tenant, name=changes.get("name", current["name"]), role=role, usage_profile=profile,
                                 locale=changes.get("locale", current["locale"]),
                                 fields=("name", "role", "usageProfile", "locale"))
        if found:
            raise InvalidRecord(found)
        wanted = {k: v for k, v in changes.items() if k in ("name", "role", "usageProfile", "locale")}
        if "locale" in wanted:
            wanted["locale"] = canonical_locale(wanted["locale"])
        if role != CALLER:
            wanted["usageProfile"] = None

        def attempt() -> Change[Record]:
            registry = self._registry(tenant, user_id)
            user = registry.users[user_id]
            if expected is not None and user["version"] != expected:
                raise PreconditionFailed(user_id, expected, user["version"])
            different = {k: v for k, v in wanted.items() if user.get(k) != v}
            if not different:
                return Change(public_user(user))
            registry.change(user_id, different, by)
            return Change(public_user(registry.users[user_id]), save=(registry,))

        user, position = self._commands.run(attempt, name=user_id)
        if position is not None:
            self._changed()
        return user

    def disable(self, tenant: str, user_id: str, *, by: str) -> Record:
        """The person cannot sign in, and their sessions and tokens stop working at once."""
        return self._toggle(tenant, user_id, True, by)

    def enable(self, tenant: str, user_id: str, *, by: str) -> Record:
        return self._toggle(tenant, user_id, False, by)

    def delete(self, tenant: str, user_id: str, *, by: str) -> None:
        def attempt() -> Change[None]:
            registry = self._registry(tenant, user_id)
            registry.delete(user_id, by)
            return Change(None, save=(registry,))

        self._commands.run(attempt, name=user_id)
        self._vault.delete(credentials_namespace(tenant), user_id)
        self._changed()

    def set_password(self, tenant: str, user_id: str, password: str, *, current: str | None = None,
                     check_current: bool = False, by: str) -> Record:
        """A new password; a person changing their own gives the `current` one (`check_current`)."""
        found = password_violations(password)
        if found:
            raise InvalidRecord(found)
        self.get(tenant, user_id)
        if check_current:
            stored = self._credential(tenant, user_id).get("hash")
            if not isinstance(current, str) or not stored or not self._verify(stored, current):
                raise InvalidRecord([Violation("currentPassword", RULE, "is not your current password")])
        self._store_hash(tenant, user_id, self._hasher.hash(password))
        return self._record_password(tenant, user_id, by)

    def accept_invitation(self, code: str, password: str) -> Record:
        """Sets the invited person's password by their invitation code (once; the code then ends)."""
        tenant, user_id, user = self._invited(code)
        found = password_violations(password)
        if found:
            raise InvalidRecord(found)
        self._put(tenant, user_id, {"hash": self._hasher.hash(password)})
        return self._record_password(tenant, user_id, actor(user_id, user["name"], CONSOLE))

    def invitation_of(self, code: str) -> Record:
        """The person an invitation code is for (its page greets them), if it still works."""
        tenant, _, user = self._invited(code)
        return {**public_user(user), "tenant": tenant}

    def _invited(self, code: str) -> tuple[str, str, Record]:
        """The tenant, id and record of the person a working invitation code is for; else
        InvitationInvalid (unknown, used, expired, or the person disabled)."""
        tenant, user_id, secret = parse_invitation(code)
        credential = self._credential(tenant, user_id) if tenant else {}
        invitation, until = credential.get("invitation"), credential.get("until")
        if (not isinstance(invitation, str) or not hmac.compare_digest(invitation, _sha256(secret))
                or not isinstance(until, str) or datetime.fromisoformat(until) < datetime.now(timezone.utc)):
            raise InvitationInvalid()
        user = self.registry(tenant).get(user_id)
        if user is None or user["disabled"]:
            raise InvitationInvalid()
        return tenant, user_id, user

    # -- sign-in ------------------------------------------------------------------------------

    def sign_in(self, tenant: str, email: str, password: str) -> Record:
        """The person whose email and password these are, if they may sign in; `SignInRefused`
        otherwise (one answer, one argon2 verification, whatever the reason), `SignInLocked` past
        `login_failures` wrong tries for this (tenant, email). Records the sign-in."""
        key = (tenant, normalized_email(email) if isinstance(email, str) else "")
        wait = self._lock_wait(key)
        if wait is not None:
            raise SignInLocked(wait)
        user = self.registry(tenant).with_email(key[1]) if key[1] else None
        stored = self._credential(tenant, user["id"]).get("hash") if user is not None else None
        matched = self._verify(stored if isinstance(stored, str) else self._dummy, password if isinstance(password, str) else "")
        if not matched or user is None or stored is None or user["disabled"]:
            self._count_failure(key)
            raise SignInRefused()
        with self._counting:
            self._failures.pop(key, None)
        if self._hasher.check_needs_rehash(stored):
            self._put(tenant, user["id"], {"hash": self._hasher.hash(password)})
        self.record_sign_in(tenant, user["id"], CONSOLE)
        return public_user(self.registry(tenant).users[user["id"]])

    def record_sign_in(self, tenant: str, user_id: str, via: str = CONSOLE) -> None:
        """Notes a person's sign-in (their list shows when they last came)."""
        if via not in VIA:
            raise ValueError(via)

        def attempt() -> Change[None]:
            registry = self.registry(tenant, for_update=True)
            if user_id not in registry.users:
                return Change(None)
            registry.signed_in(user_id, via)
            return Change(None, save=(registry,))

        self._commands.run(attempt, name=user_id)

    def find_or_create(self, tenant: str, email: str, *, name: str, role: str, locale: str = "en",
                       usage_profile: str | None = None, issuer: str | None = None, subject: str | None = None,
                       by: str = "single sign-on", sync: bool = False) -> Record:
        """The person single sign-on signed in (just in time): by (issuer, subject) first, then by
        email (their subject is linked), else a new person with this role and locale and no password.
        With `sync`, a person found takes the role and usage profile given (the provider's mapping
        decides, at every sign-in). `UserDisabled` for a disabled person. The sign-in is recorded."""
        sso = {"issuer": issuer, "subject": subject} if issuer and subject else None
        registry = self.registry(tenant)
        user = (registry.with_subject(issuer, subject) if sso else None) or registry.with_email(email)  # type: ignore[arg-type]
        if user is None:
            found = self._violations(tenant, email=email, name=name, role=role, usage_profile=usage_profile, locale=locale)
            if found:
                raise InvalidRecord(found)
            try:
                user = self._add(tenant, email, name, role, usage_profile, locale, invited=False, by=by, sso=sso)
            except RecordTaken:  # another sign-in of the same person raced this one
                user = self.registry(tenant).with_email(email)
                if user is None:
                    raise
        elif sso is not None and user.get("sso") != sso:
            def attempt() -> Change[None]:
                fresh = self._registry(tenant, user["id"])  # type: ignore[index]
                fresh.link(user["id"], sso, by)  # type: ignore[index]
                return Change(None, save=(fresh,))

            self._commands.run(attempt, name=user["id"])
        if self.registry(tenant).users[user["id"]]["disabled"]:
            raise UserDisabled()
        current = self.registry(tenant).users[user["id"]]
        if sync and (current["role"], current["usageProfile"]) != (role, usage_profile if role == CALLER else None):
            self.update(tenant, user["id"], {"role": role, "usageProfile": usage_profile}, by=by)
        self.record_sign_in(tenant, user["id"], CONSOLE)
        return public_user(self.registry(tenant).users[user["id"]])

    # -- the lockout --------------------------------------------------------------------------

    def _lock_wait(self, key: tuple[str, str]) -> float | None:
        now = self._clock()
        with self._counting:
            until = self._locked.get(key)
            if until is None:
                return None
            if until <= now:
                del self._locked[key]
                self._failures.pop(key, None)
                return None
            return until - now

    def _count_failure(self, key: tuple[str, str]) -> None:
        now = self._clock()
        with self._counting:
            recent = [t for t in self._failures.pop(key, []) if now - t < LOCKOUT_SECONDS] + [now]
            if len(recent) >= self.login_failures:
                self._locked[key] = now + LOCKOUT_SECONDS
                recent = []
            else:
                self._failures[key] = recent  # re-inserted: the dict's order is the last failure's
            while len(self._failures) > MAX_COUNTED:
                del self._failures[next(iter(self._failures))]
            while len(self._locked) > MAX_COUNTED:
                del self._locked[next(iter(self._locked))]

    # -- inside -------------------------------------------------------------------------------

    def _violations(self, tenant: str, *, email: Any = None, name: Any = None, role: Any = None,
                    usage_profile: Any = None, locale: Any = None,
                    fields: tuple[str, ...] = ("email", "name", "role", "usageProfile", "locale")) -> list[Violation]:
        found: list[Violation] = []
        if "email" in fields:
            found += email_violations(email)
        if "name" in fields:
            found += name_violations(name)
        if "role" in fields:
            found += role_violations(role)
        if "locale" in fields:
            found += locale_violations(locale)
        if "usageProfile" in fields and usage_profile is not None:
            if role != CALLER:
                found.append(Violation("usageProfile", RULE, "only a caller has a usage profile"))
            elif not isinstance(usage_profile, str) or self._store.registry(tenant).get(PROFILE, usage_profile) is None:
                found.append(Violation("usageProfile", RULE, f"no usage profile {usage_profile!r} in this organization"))
        return found

    def _add(self, tenant: str, email: str, name: str, role: str, usage_profile: str | None, locale: str, *,
             invited: bool, by: str, sso: Record | None = None) -> Record:
        user_id = secrets.token_hex(8)
        profile = usage_profile if role == CALLER else None

        def attempt() -> Change[Record]:
            registry = self.registry(tenant, for_update=True)
            if registry.with_email(email) is not None:
                raise RecordTaken(USER, normalized_email(email))
            registry.add(user_id, email, name.strip(), role, profile, canonical_locale(locale), invited, by, sso)
            return Change(public_user(registry.users[user_id]), save=(registry,))

        user, _ = self._commands.run(attempt, name=user_id)
        return user

    def _registry(self, tenant: str, user_id: str) -> UserRegistry:
        """The registry for update, holding `user_id` (404 otherwise)."""
        registry = self.registry(tenant, for_update=True)
        if user_id not in registry.users:
            raise UnknownRecord(USER, user_id)
        return registry

    def _toggle(self, tenant: str, user_id: str, disabled: bool, by: str) -> Record:
        def attempt() -> Change[Record]:
            registry = self._registry(tenant, user_id)
            if registry.users[user_id]["disabled"] == disabled:
                return Change(public_user(registry.users[user_id]))
            (registry.disable if disabled else registry.enable)(user_id, by)
            return Change(public_user(registry.users[user_id]), save=(registry,))

        user, position = self._commands.run(attempt, name=user_id)
        if position is not None:
            self._changed()
        return user

    def _record_password(self, tenant: str, user_id: str, by: str) -> Record:
        def attempt() -> Change[Record]:
            registry = self._registry(tenant, user_id)
            registry.password_set(user_id, by)
            return Change(public_user(registry.users[user_id]), save=(registry,))

        user, _ = self._commands.run(attempt, name=user_id)
        return user

    def _verify(self, stored: str, password: str) -> bool:
        try:
            return self._hasher.verify(stored, password)
        except (VerificationError, InvalidHashError):
            return False

    def _credential(self, tenant: str, user_id: str) -> Record:
        stored = self._vault.read(credentials_namespace(tenant), user_id, _CREDENTIAL)
        if stored is None:
            return {}
        try:
            found = json.loads(stored)
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}

    def _put(self, tenant: str, user_id: str, credential: Record) -> None:
        self._vault.put(credentials_namespace(tenant), user_id, json.dumps(credential), _CREDENTIAL, keeping=None)

    def _store_hash(self, tenant: str, user_id: str, hashed: str) -> None:
        # A password set ends any invitation: the row holds only the hash.
        self._put(tenant, user_id, {"hash": hashed})


def capped(token_role: str, token_profile: str | None, user_role: str, user_profile: str | None) -> tuple[str, str | None]:
    """A person's token may do at most what the person may: admin > auditor > caller (a caller's
    usage profile is the person's when the token has none of its own or the person is a caller)."""
    order = {"caller": 0, "auditor": 1, "admin": 2}
    if order.get(token_role, 0) <= order.get(user_role, 0):
        role = token_role
    else:
        role = user_role
    if role != CALLER:
        return role, None
    if user_role == CALLER:
        return role, user_profile
    return role, token_profile


def parse_invitation(code: Any) -> tuple[str, str, str]:
    """(tenant, user id, secret) of an invitation code; empty strings for one that is not one."""
    if not isinstance(code, str) or not code.startswith(INVITATION_PREFIX):
        return "", "", ""
    parts = code[len(INVITATION_PREFIX):].split(".", 2)
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 and all(parts) else ("", "", "")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
