"""An API URL tool's request, built from its configuration and a call's arguments (docs/kinds/api-url-tools.md).

The URL from the template (each path value one encoded segment), the operator's fixed query,
headers and body, the model's header values and body values placed into a JSON object at their
`bodyPath`, and the auth (an API key, a bearer token, basic credentials; an OAuth token is
`oauth`'s). Secrets are read by id for the request that needs them and nowhere else (`secret`),
each kept in the call's `Used` so that the redaction knows every form it was sent in; the request
shown back (the Playground's `Trace`) has them replaced.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import functools
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from uritemplate import URITemplate

from domain.redaction import Redactor
from domain.errors import UnknownRecord
from domain.ports import ExecutionError, OutboundRequest
from toolkinds.api_tools.model import Config, as_text

# The request as shown back: method, URL, headers and body, every secret replaced.
Shown = tuple[str, str, dict[str, str], Any]


class Failed(Exception):
    """A call that ends in an error result (not a refusal): `error` is what the caller sees."""

    def __init__(self, error: ExecutionError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass
class Trace:
    """What one call did, as the Playground shows it: the request with every secret replaced, the
    answer's status and size, and the time."""

    method: str = ""
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    status: int | None = None
    bytes: int = 0
    millis: float = 0.0
    attempts: int = 0
    # The raw answer as it came back (its headers, its body decoded as UTF-8 and cut at
    # RAW_BODY_CHARS), redacted like the request: what the console's test panels show.
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"request": {"method": self.method, "url": self.url, "headers": self.headers, "body": self.body},
                "status": self.status, "bytes": self.bytes, "durationMillis": round(self.millis, 3)}

    def with_response(self) -> dict[str, Any]:
        """`as_dict` and the raw response (the console's: REST's test answers `as_dict` alone)."""
        return {**self.as_dict(), "response": {"headers": self.response_headers, "body": self.response_body}}


# What a trace keeps of a raw response body at most (characters): the console shows up to 128 KB.
RAW_BODY_CHARS = 131_072


@dataclass
class Used:
    """What one call read or obtained that must not come back out of it: the secrets by id, the
    OAuth access tokens it was given, and the strings it sent encoded around them (`user:pass`)."""

    secrets: dict[str, str] = field(default_factory=dict)
    tokens: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)

    def redactor(self) -> Redactor:
        return Redactor([*self.secrets.values(), *self.tokens], sent=self.sent)


def secret(secrets: Any, tenant: str, secret_id: str, used: Used) -> str:
    """The value of the tenant's secret `secret_id` for this call (kept in `used`), from `secrets`
    (the kind's secret store, None when not configured)."""
    if secrets is None:
        raise Failed(ExecutionError("config", f"the secret {secret_id!r} cannot be read: secrets are not configured"))
    try:
        value = secrets.value(tenant, secret_id)
    except UnknownRecord:
        raise Failed(ExecutionError("config", f"the secret {secret_id!r} no longer exists")) from None
    used.secrets[secret_id] = value
    return value


def build(secrets: Any, tenant: str, config: Config, arguments: dict[str, Any],
          used: Used) -> tuple[OutboundRequest, Shown]:
    """The request a call sends, and the request as shown back."""
    params = config["parameters"]
    variables = {p["name"]: _url_value(arguments[p["name"]]) for p in params
                 if p["location"] in ("path", "query") and arguments.get(p["name"]) is not None}
    url = _template(config["urlTemplate"]).expand(variables)
    query: list[tuple[str, str]] = [(k, as_text(v)) for k, v in config["fixedQuery"].items()]
    shown_query = list(query)
    auth = config["auth"]
    headers: dict[str, str] = {}
    shown_headers: dict[str, str] = {}
    sensitive: set[str] = set()
    for header, value in config["headers"].items():
        if isinstance(value, dict):
            headers[header] = secret(secrets, tenant, value["secret"], used)
            shown_headers[header] = f"[secret {value['secret']}]"
            sensitive.add(header.lower())
        else:
            headers[header] = value
            shown_headers[header] = value
    for p in params:
        if p["location"] == "header" and arguments.get(p["name"]) is not None:
            headers[p["header"]] = shown_headers[p["header"]] = as_text(arguments[p["name"]])
    if auth["type"] == "apiKey":
        key = secret(secrets, tenant, auth["secret"], used)
        if auth["in"] == "header":
            headers[auth["name"]] = key
            shown_headers[auth["name"]] = f"[secret {auth['secret']}]"
            sensitive.add(auth["name"].lower())
        else:
            query.append((auth["name"], key))
            shown_query.append((auth["name"], f"[secret {auth['secret']}]"))
    elif auth["type"] == "bearer":
        headers["Authorization"] = "Bearer " + secret(secrets, tenant, auth["secret"], used)
        shown_headers["Authorization"] = f"Bearer [secret {auth['secret']}]"
    elif auth["type"] == "basic":
        password = secret(secrets, tenant, auth["secret"], used)
        pair = f"{auth['username']}:{password}"
        used.sent.append(pair)
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        shown_headers["Authorization"] = f"Basic {auth['username']}:[secret {auth['secret']}]"
    elif auth["type"] == "oauth2ClientCredentials":
        shown_headers["Authorization"] = "Bearer [token from " + auth["tokenUrl"] + "]"
    body: Any = None
    body_params = [p for p in params if p["location"] == "body"]
    if config["fixedBody"] is not None or body_params:
        body = copy.deepcopy(config["fixedBody"]) if config["fixedBody"] is not None else {}
        for p in body_params:
            if arguments.get(p["name"]) is not None:
                _place(body, p["bodyPath"].split("."), arguments[p["name"]])
        headers.setdefault("Content-Type", "application/json")
        shown_headers.setdefault("Content-Type", "application/json")
    for name, value in (("Accept", "application/json, text/plain;q=0.9, */*;q=0.5"), ("User-Agent", "toolsmith-api-tool")):
        if name.lower() not in {h.lower() for h in headers}:
            headers[name] = shown_headers[name] = value
    full_url = _with_query(url, query)
    request = OutboundRequest(
        method=config["method"], url=full_url, headers=headers,
        body=None if body is None else json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(),
        sensitive=frozenset(sensitive | ({"authorization"} if "Authorization" in headers else set())),
    )
    return request, (config["method"], _with_query(url, shown_query, safe="[] "), shown_headers, body)


def bearer(request: OutboundRequest, token: str) -> OutboundRequest:
    """`request` with `token` as its bearer token (a sensitive header)."""
    return dataclasses.replace(request, headers={**request.headers, "Authorization": f"Bearer {token}"},
                   sensitive=request.sensitive | {"authorization"})


@functools.lru_cache(maxsize=1_024)
def _template(text: str) -> URITemplate:
    """A URL template, parsed once (it is checked when the tool is saved, and immutable)."""
    return URITemplate(text)


def _url_value(value: Any) -> Any:
    if isinstance(value, list):
        return [as_text(v) if not isinstance(v, (dict, list)) else json.dumps(v, separators=(",", ":")) for v in value]
    return as_text(value)


def _with_query(url: str, query: list[tuple[str, str]], safe: str = "") -> str:
    """`url` with `query` appended, each name and value percent-encoded (`safe` left as is: the
    placeholders of a URL shown back)."""
    if not query:
        return url
    joiner = "&" if "?" in url else "?"
    return url + joiner + "&".join(f"{quote(k, safe=safe)}={quote(v, safe=safe)}" for k, v in query)


def _place(body: dict[str, Any], path: list[str], value: Any) -> None:
    node = body
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
