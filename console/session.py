"""Console sessions, of two kinds. A token session: a token is presented once at sign-in; the browser
then holds a signed, expiring, HttpOnly, SameSite=Strict cookie carrying the token's SHA-256 digest
(never the token), a session id and the session's CSRF token. Every request asks the authenticator
who holds that digest now, so a revoked token ends its sessions at once. A person session
(docs/users.md: a password or single sign-on): the cookie names the person (their tenant and user
id) instead, and every request asks the people's registry who they are now, so a disabled or
deleted person's sessions end at once. Sign-out ends the session id on this process (and clears
the cookie); the signature's age bounds every session (`TOOLSMITH_SESSION_HOURS`)."""

from __future__ import annotations

import hmac
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from itsdangerous import BadSignature, URLSafeTimedSerializer

from application.principals import Principal

COOKIE = "toolsmith_session"
KEY_FILE = "session.key"


TOKEN_SESSION = "token"
PERSON_SESSION = "person"


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


class Sessions:
    """Signs and reads session cookies; remembers the sessions signed out until they would expire."""

    def __init__(self, key: str, max_age_seconds: float) -> None:
        self._serializer = URLSafeTimedSerializer(key, salt="toolsmith-console-session")
        self.max_age_seconds = max_age_seconds
        self._ended: dict[str, float] = {}
        self._lock = threading.Lock()

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
        if not value:
            return None
        try:
            data = self._serializer.loads(value, max_age=self.max_age_seconds)
        except BadSignature:  # also SignatureExpired
            return None
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("s", "d", "c")):
            return None
        with self._lock:
            if data["s"] in self._ended:
                return None
        if isinstance(data.get("u"), str) and isinstance(data.get("t"), str):
            return Session(data["s"], "", data["c"], data["t"], data["u"])
        return Session(data["s"], data["d"], data["c"])

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
