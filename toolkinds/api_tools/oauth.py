"""OAuth 2 client credentials for API URL tools (docs/kinds/api-url-tools.md).

Follows Authlib's client behaviour: a token is reused until shortly before it expires (60 s of
leeway, or half its lifetime when that is shorter), one fetch at a time per client, and a 401 from
the API drops the token and retries the call once with a new one. Each token given to a call is
one of its secrets (`Used.tokens`): an API that echoes it is redacted.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

from domain.ports import ExecutionError, OutboundError, OutboundRequest, OutboundResponse
from toolkinds.api_tools.model import Config
from toolkinds.api_tools.request import Failed, Trace, Used, bearer

TOKEN_LEEWAY_SECONDS = 60
TOKEN_DEFAULT_LIFETIME = 3_600  # a token answer without expires_in (RFC 6749 leaves it optional)

# How a request is sent (the kind's one egress path), and how a secret is read for a call.
Send = Callable[[Config, OutboundRequest], OutboundResponse]
ReadSecret = Callable[[str, str, Used], str]


class _Token:
    __slots__ = ("value", "expires_at")

    def __init__(self, value: str, expires_at: float) -> None:
        self.value, self.expires_at = value, expires_at


class Tokens:
    """The access tokens of every client the kind's tools authenticate as, cached by client (the
    client secret's value hashed into the key), each fetched by one thread while others wait."""

    def __init__(self, send: Send, read_secret: ReadSecret) -> None:
        self._send = send
        self._read_secret = read_secret
        self._tokens: dict[tuple[Any, ...], _Token] = {}
        self._token_locks: dict[tuple[Any, ...], threading.Lock] = {}
        self._guard = threading.Lock()

    def send_with_auth(self, tenant: str, config: Config, request: OutboundRequest,
                       secrets: Used, trace: Trace) -> OutboundResponse:
        """Sends `request`; with OAuth, with a token, and once more with a new one after a 401."""
        auth = config["auth"]
        if auth["type"] != "oauth2ClientCredentials":
            trace.attempts = 1
            return self._send(config, request)
        key = self._token_key(tenant, auth, secrets)
        token = self._token(config, key, secrets, stale=None)
        response = self._send(config, bearer(request, token))
        trace.attempts = 1
        if response.status == 401:
            token = self._token(config, key, secrets, stale=token)
            response = self._send(config, bearer(request, token))
            trace.attempts = 2
        return response

    def _token_key(self, tenant: str, auth: dict[str, Any], secrets: Used) -> tuple[Any, ...]:
        client_secret = self._read_secret(tenant, auth["clientSecret"], secrets)
        # The secret's value is part of the key (hashed): a rotated client secret gets a new token.
        digest = hashlib.sha256(client_secret.encode()).hexdigest()
        return (tenant, auth["tokenUrl"], auth["clientId"], auth.get("scope"), auth.get("audience"),
                auth.get("clientAuth", "clientSecretBasic"), digest)

    def _token(self, config: Config, key: tuple[Any, ...], secrets: Used, stale: str | None) -> str:
        """A token for `key`: the cached one while it is fresh (and is not `stale`, the one the API
        just refused), else one fetched by one thread while the others wait for it. Each token
        given to a call is one of its secrets (`Used.tokens`): an API that echoes it is redacted."""
        with self._guard:
            lock = self._token_locks.setdefault(key, threading.Lock())
        with lock:
            cached = self._tokens.get(key)
            if cached is None or cached.value == stale or time.monotonic() >= cached.expires_at:
                cached = self._tokens[key] = self._fetch_token(config, secrets)
        secrets.tokens.append(cached.value)
        return cached.value

    def _fetch_token(self, config: Config, secrets: Used) -> _Token:
        auth = config["auth"]
        client_secret = secrets.secrets[auth["clientSecret"]]
        form = {"grant_type": "client_credentials"}
        for key in ("scope", "audience"):
            if auth.get(key):
                form[key] = auth[key]
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        if auth.get("clientAuth", "clientSecretBasic") == "clientSecretPost":
            form.update(client_id=auth["clientId"], client_secret=client_secret)
        else:
            # RFC 6749 §2.3.1: each part form-encoded before the Basic encoding (as Authlib does).
            pair = f"{quote(auth['clientId'], safe='')}:{quote(client_secret, safe='')}"
            secrets.sent.append(pair)
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        request = OutboundRequest(method="POST", url=auth["tokenUrl"], headers=headers, body=urlencode(form).encode(),
                                  sensitive=frozenset({"authorization"}))
        try:
            response = self._send({**config, "maxRedirects": 0, "response": {**config["response"], "maxBytes": 65_536}}, request)
        except OutboundError as error:
            raise Failed(ExecutionError("auth", f"the token request failed: {error}")) from None
        if not 200 <= response.status < 300:
            raise Failed(ExecutionError("auth", f"the token endpoint answered {response.status}"))
        try:
            answer = json.loads(response.body)
            value = answer["access_token"]
            if not isinstance(value, str) or not value:
                raise ValueError
        except (ValueError, KeyError, TypeError):
            raise Failed(ExecutionError("auth", "the token endpoint's answer has no access_token")) from None
        lifetime = answer.get("expires_in")
        lifetime = float(lifetime) if isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool) and lifetime > 0 else TOKEN_DEFAULT_LIFETIME
        leeway = min(TOKEN_LEEWAY_SECONDS, lifetime / 2)
        return _Token(value, time.monotonic() + lifetime - leeway)
