"""The built-in authorization server's signing keys (docs/oauth.md): RSA keys (RS256, what every
OAuth client and resource server verifies), made on the first start and kept with the grants
(`api/oauth/store.py`: the data dir's `oauth.sqlite`, mode 0600, or the PostgreSQL event store's
schema, which every replica shares), the newest signing. A key older than `TOOLSMITH_OAUTH_KEY_DAYS`
is rotated at the next start or signature: a new key signs from then on, the older ones stay in
the JWKS for as long as a token they signed may live, then are dropped. A write names the document
it replaces, so two replicas rotating at once keep one of the new keys, never lose one; a resource
server that meets a key id it does not know reads the keys again (`reload`)."""

from __future__ import annotations

import json
import secrets
import threading
import time
from typing import Any, Protocol

from joserfc.jwk import KeySet, RSAKey

ALGORITHM = "RS256"


class KeyStore(Protocol):
    def keys_document(self) -> str | None: ...

    def save_keys_document(self, document: str, expected: str | None) -> bool: ...


class SigningKeys:
    def __init__(self, store: KeyStore, *, rotate_after_seconds: float, keep_seconds: float) -> None:
        self.store = store
        self._document: str | None = None
        self.rotate_after = rotate_after_seconds
        self.keep = keep_seconds  # how long a retired key still verifies (the longest token's life)
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []  # newest first: {"created": epoch, "retired": epoch|None, "jwk": {...}}
        self._signing: KeySet | None = None
        self._public: KeySet | None = None
        self.reload()
        self.current()

    def reload(self) -> None:
        """Reads the keys again (another replica may have rotated)."""
        with self._lock:
            self._read()

    def _read(self) -> None:
        self._document = self.store.keys_document()
        if self._document is not None:
            self._entries = json.loads(self._document)["keys"]
        self._derive()

    def _derive(self) -> None:
        if self._entries:
            self._signing = KeySet([RSAKey.import_key(self._entries[0]["jwk"])])
            self._public = KeySet.import_key_set({"keys": [self.public_jwk(entry["jwk"]) for entry in self._entries]})

    @staticmethod
    def public_jwk(jwk: dict[str, Any]) -> dict[str, Any]:
        return RSAKey.import_key(jwk).as_dict(private=False)

    def current(self) -> KeySet:
        """The key set holding the one signing key, rotated first when it is too old."""
        now = time.time()
        with self._lock:
            if not self._entries or now - self._entries[0]["created"] > self.rotate_after:
                self._rotate(now)
            assert self._signing is not None
            return self._signing

    def rotate(self) -> str:
        """A new signing key now (an operator's rotation); its key id."""
        with self._lock:
            self._rotate(time.time(), forced=True)
            return self._entries[0]["jwk"]["kid"]

    def _rotate(self, now: float, *, forced: bool = False) -> None:
        for _ in range(5):
            kid = f"{time.strftime('%Y%m%d', time.gmtime(now))}-{secrets.token_hex(4)}"
            key = RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": ALGORITHM}, private=True)
            older = [{**entry, "retired": entry.get("retired") or now} for entry in self._entries]
            kept = [entry for entry in older if now - entry["retired"] <= self.keep]
            entries = [{"created": now, "retired": None, "jwk": key.as_dict(private=True)}, *kept]
            document = json.dumps({"keys": entries})
            if self.store.save_keys_document(document, self._document):
                self._document, self._entries = document, entries
                self._derive()
                return
            self._read()  # another process wrote first: its keys, unless they too are old
            if not forced and self._entries and now - self._entries[0]["created"] <= self.rotate_after:
                return
        raise RuntimeError("the OAuth signing keys could not be written (other processes kept changing them)")

    def public(self) -> KeySet:
        """Every key that may have signed a token still alive: what verifies."""
        with self._lock:
            assert self._public is not None
            return self._public

    def jwks(self) -> dict[str, Any]:
        """The JWKS document (public parts only)."""
        return self.public().as_dict(private=False)

    def knows(self, kid: str | None) -> bool:
        return kid is not None and any(entry["jwk"].get("kid") == kid for entry in self._entries)
