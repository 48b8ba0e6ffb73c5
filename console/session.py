"""Console sessions, of two kinds. A token session: a token is presented once at sign-in; the browser
then holds a signed, expiring, HttpOnly, SameSite=Strict cookie carrying the token's SHA-256 digest
(never the token), a session id and the session's CSRF token. Every request asks the authenticator
who holds that digest now, so a revoked token ends its sessions at once. A person session
(docs/users.md: a password or single sign-on): the cookie names the person (their tenant and user
id) instead, and every request asks the people's registry who they are now, so a disabled or
deleted person's sessions end at once. Sign-out ends the session id on this process (and clears
the cookie); the signature's age bounds every session (`TOOLSMITH_SESSION_HOURS`).

A cookie's signature is checked once per process: `Sessions` keeps what a cookie value it verified
said (bounded, `VERIFIED`), and each later request with the very same value checks its age and
whether it was signed out, as the first did. A value changed by one character is another value,
checked in full; another key (a rotated secret) is another `Sessions`, which has verified nothing."""

from __future__ import annotations

import hmac
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from itsdangerous import BadSignature, TimestampSigner, URLSafeTimedSerializer
from itsdangerous.encoding import want_bytes

from application.principals import Principal

COOKIE = "toolsmith_session"
KEY_FILE = "session.key"


TOKEN_SESSION = "token"
PERSON_SESSION = "person"
SALT = "toolsmith-console-session"
# How many verified cookie values a process keeps (one a session in use; the oldest half is dropped
# past it). Only values whose signature was good are kept, so no visitor can fill it with guesses.
VERIFIED = 4096


@dataclass(frozen=True)
class Session:
    session_id: str
    digest: str  # a token session's token digest; empty for a person's
    csrf: str
    # A person session's tenant and user id (docs/users.md); None for a token session.
    tenant: str | None = None
    user_id: str | None = None

    @property
    def kind(self) -> str:
        return PERSON_SESSION if self.user_id is not None else TOKEN_SESSION


def session_key(data_dir: Path, configured: str | None) -> str:
    """The signing key: the configured one, else the data dir's (made on first use, mode 0600)."""
    if configured:
        return configured
    path = data_dir / KEY_FILE
    if path.exists():
        return path.read_text().strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(48)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return path.read_text().strip()
    with os.fdopen(descriptor, "w") as file:
        file.write(key + "\n")
    return key


class _Signer(TimestampSigner):
    """itsdangerous' signer with the signing key derived once per secret: it derives it again (a
    hash of the salt and the secret) on every signature it makes or checks."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._derived: dict[bytes, bytes] = {}

    def derive_key(self, secret_key: str | bytes | None = None) -> bytes:
        secret = self.secret_keys[-1] if secret_key is None else want_bytes(secret_key)
        derived = self._derived.get(secret)
        if derived is None:
            derived = self._derived[secret] = super().derive_key(secret)
        return derived


class _Serializer(URLSafeTimedSerializer):
    """The session cookie's serializer (itsdangerous' format, unchanged) with one signer per salt,
    made once: itsdangerous makes a new one, key derivation included, for each dumps and loads."""

    default_signer = _Signer

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._signers: dict[object, TimestampSigner] = {}

    def make_signer(self, salt: str | bytes | None = None) -> TimestampSigner:
        signer = self._signers.get(salt)
        if signer is None:
            signer = self._signers[salt] = super().make_signer(salt)  # type: ignore[assignment]
        return signer  # type: ignore[return-value]


class Sessions:
    """Signs and reads session cookies; remembers the sessions signed out until they would expire."""

    def __init__(self, key: str, max_age_seconds: float) -> None:
        self._serializer = _Serializer(key, salt=SALT)
        self.max_age_seconds = max_age_seconds
        self._ended: dict[str, float] = {}
        self._lock = threading.Lock()
        # A cookie value whose signature was good: its session and when it was signed (epoch seconds).
        self._verified: dict[str, tuple[Session, int]] = {}

    def start(self, digest: str) -> tuple[Session, str]:
        """A new session for the token with this digest, and its cookie value."""
        session = Session(secrets.token_urlsafe(16), digest, secrets.token_urlsafe(24))
        value = self._serializer.dumps({"s": session.session_id, "d": session.digest, "c": session.csrf})
        return session, value

    def start_person(self, tenant: str, user_id: str) -> tuple[Session, str]:
        """A new session for a person of `tenant`, and its cookie value."""
        session = Session(secrets.token_urlsafe(16), "", secrets.token_urlsafe(24), tenant, user_id)
        value = self._serializer.dumps({"s": session.session_id, "d": "", "c": session.csrf, "t": tenant, "u": user_id})
        return session, value

    def read(self, value: str | None) -> Session | None:
        """The session a cookie value carries, if its signature is good, it is not older than the
        sessions' age (nor dated in the future) and it was not signed out; None otherwise."""
        if not value:
            return None
        known = self._verified.get(value)
        if known is None:
            known = self._verify(value)
            if known is None:
                return None
        session, signed = known
        # What itsdangerous checks of the signature's age, on every request (the verdict on the signature is kept).
        age = int(time.time()) - signed
        if age > self.max_age_seconds or age < 0:
            return None
        with self._lock:
            if session.session_id in self._ended:
                return None
        return session

    def _verify(self, value: str) -> tuple[Session, int] | None:
        try:
            data, signed_at = self._serializer.loads(value, max_age=self.max_age_seconds, return_timestamp=True)
        except BadSignature:  # also SignatureExpired
            return None
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("s", "d", "c")):
            return None
        if isinstance(data.get("u"), str) and isinstance(data.get("t"), str):
            session = Session(data["s"], "", data["c"], data["t"], data["u"])
        else:
            session = Session(data["s"], data["d"], data["c"])
        known = (session, int(signed_at.timestamp()))
        with self._lock:
            if len(self._verified) >= VERIFIED:  # the oldest half goes (dicts keep their insertion order)
                for stale in list(self._verified)[: VERIFIED // 2]:
                    del self._verified[stale]
            self._verified[value] = known
        return known

    def end(self, session: Session) -> None:
        now = time.monotonic()
        with self._lock:
            self._ended = {sid: until for sid, until in self._ended.items() if until > now}
            self._ended[session.session_id] = now + self.max_age_seconds

    @staticmethod
    def csrf_matches(session: Session, presented: str | None) -> bool:
        return bool(presented) and hmac.compare_digest(session.csrf.encode(), presented.encode())


@dataclass(frozen=True)
class Visitor:
    """Who is signed in to the console, and their session."""

    principal: Principal
    session: Session

    @property
    def can_write(self) -> bool:
        return self.principal.role == "admin"
