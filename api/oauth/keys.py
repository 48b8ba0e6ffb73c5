"""The built-in authorization server's signing keys (docs/oauth.md): RSA keys (RS256, what every
OAuth client and resource server verifies), made on the first start and kept in the data dir
(`oauth-keys.json`, mode 0600), the newest signing. A key older than `TOOLSMITH_OAUTH_KEY_DAYS`
is rotated at the next start or signature: a new key signs from then on, the older ones stay in
the JWKS for as long as a token they signed may live, then are dropped. The file is the one copy:
replicas sharing a data dir share it; a resource server that meets a key id it does not know
reads it again (`reload`)."""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

from joserfc.jwk import KeySet, RSAKey

KEY_FILE = "oauth-keys.json"
ALGORITHM = "RS256"


class SigningKeys:
    def __init__(self, data_dir: Path, *, rotate_after_seconds: float, keep_seconds: float) -> None:
        self.path = data_dir / KEY_FILE
        self.rotate_after = rotate_after_seconds
        self.keep = keep_seconds  # how long a retired key still verifies (the longest token's life)
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []  # newest first: {"created": epoch, "retired": epoch|None, "jwk": {...}}
        self._signing: KeySet | None = None
        self._public: KeySet | None = None
        self.reload()
        self.current()

    def reload(self) -> None:
        """Reads the file again (another replica may have rotated)."""
        with self._lock:
            if self.path.exists():
                self._entries = json.loads(self.path.read_text())["keys"]
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
            self._rotate(time.time())
            return self._entries[0]["jwk"]["kid"]

    def _rotate(self, now: float) -> None:
        kid = f"{time.strftime('%Y%m%d', time.gmtime(now))}-{secrets.token_hex(4)}"
        key = RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": ALGORITHM}, private=True)
        for entry in self._entries:
            entry["retired"] = entry.get("retired") or now
        kept = [entry for entry in self._entries if now - entry["retired"] <= self.keep]
        self._entries = [{"created": now, "retired": None, "jwk": key.as_dict(private=True)}, *kept]
        self._write()
        self._derive()

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".tmp")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            json.dump({"keys": self._entries}, file)
        os.replace(partial, self.path)

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
