"""API URL tools (docs/kinds/index.md, docs/kinds/api-url-tools.md): a tool that calls an external HTTP API on the model's behalf.

An API URL tool is live, not versioned: it has no draft, and every change takes effect at once on
every MCP server it is attached to. Each change is still an event of the tool's own aggregate, with
who and when, in the tenant's hash chain, history and export. The configuration holds secrets by id
only (`{"secret": id}`): no event ever holds a value.

What the model may decide is fenced in here, when the tool is saved:

- the URL template is an RFC 6570 subset: `{var}` in the path, `{?a,b}` and `{&c}` for the query,
  after a literal scheme, host and port (so no parameter can name another host); `{+var}`,
  `{#var}`, `{/var*}`, `{.var}`, `{;var}`, prefixes and explode modifiers are refused;
- every template variable is a declared parameter of the matching location, and every path or query
  parameter appears in the template, once;
- body values go into a JSON object at their `bodyPath`, never into text; none lands on an operator
  constant of `fixedBody`;
- no header the model sets can be one the operator, auth or HTTP itself owns.

`call_violations` checks the values of one call (a path value is one segment, never `.` or `..`;
header values hold no line break) before anything is sent.
"""

from __future__ import annotations

import copy
import re
from typing import Any
from urllib.parse import urlsplit
from uuid import NAMESPACE_URL, UUID, uuid5

from uritemplate import URITemplate

from domain import annotations as tool_hints
from domain.schemas import schema_violations
from domain import jmes
from domain.configured import Configured
from domain.errors import Violation
from domain.rules import (
    MAX_TAG_LENGTH, MAX_TAGS, RESERVED_OBJECT, description_violations, has_reserved_object, parameters_violations,
)
from domain.topics import moved

# Recorded as `domain.api_tools` before the kinds moved into packages of their own.
moved("domain.api_tools", __name__)

API_URL = "API_URL"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
LOCATIONS = ("path", "query", "header", "body")
AUTH_TYPES = ("none", "apiKey", "bearer", "basic", "oauth2ClientCredentials")
CLIENT_AUTH = ("clientSecretBasic", "clientSecretPost")

MAX_TEMPLATE = 2_000
MAX_HEADERS = 30
MAX_HEADER_VALUE = 4_000
MAX_FIXED_BODY = 32_768  # characters of its JSON
MAX_BYTES_DEFAULT, MAX_BYTES_CAP = 1_048_576, 5 * 1_048_576
MAX_OUTPUT_DEFAULT, MAX_OUTPUT_CAP = 20_000, 1_000_000
TIMEOUT_DEFAULT, TIMEOUT_RANGE = 30_000, (100, 120_000)
CONNECT_DEFAULT, CONNECT_RANGE = 5_000, (100, 60_000)
REDIRECTS_DEFAULT, REDIRECTS_CAP = 0, 3

# Headers the model can never set: HTTP's own framing, credentials, and what proxies trust.
FORBIDDEN_HEADERS = frozenset({
    "host", "authorization", "cookie", "set-cookie", "content-length", "transfer-encoding", "connection", "te",
    "upgrade", "trailer", "keep-alive", "expect", "forwarded", "x-real-ip", "content-type",
})  # fmt: skip
FORBIDDEN_PREFIXES = ("proxy-", "x-forwarded-", "sec-")
# The operator's own headers may set Content-Type or a cookie of its own; never these.
OPERATOR_FORBIDDEN = frozenset({"host", "content-length", "transfer-encoding", "connection", "te", "upgrade", "trailer",
                                "keep-alive", "expect"})
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}\Z")
_BODY_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}(\.[A-Za-z_][A-Za-z0-9_-]{0,63}){0,7}\Z")
_SCALARS = ("string", "integer", "decimal", "date", "boolean")

_NAMESPACE = uuid5(NAMESPACE_URL, "https://toolsmith.invalid/aggregates/api-tools")

Config = dict[str, Any]


def api_tool_id(tenant: str, name: str) -> UUID:
    return uuid5(_NAMESPACE, f"api-tool/{tenant}/{name}")


# -- the aggregate ------------------------------------------------------------------------------


class ApiTool(Configured):
    """One API URL tool of one tenant, through all its lives (deleted and created again on the same
    aggregate, as a module is). `config` is the whole normalised configuration; its lifecycle
    (created, changed, deleted, created again) is `Configured`'s."""

    @staticmethod
    def create_id(tenant: str, tool_id: str) -> UUID:  # type: ignore[override]
        return api_tool_id(tenant, tool_id)


# -- the configuration --------------------------------------------------------------------------


def normalise(given: dict[str, Any]) -> Config:
    """The configuration with every default filled in (what is stored and shown back). Shapes are
    the API's to check; values that are not what they should be are left for `violations`."""
    response = given.get("response") or {}
    auth = given.get("auth") or {"type": "none"}
    params = [
        {
            "name": p.get("name"),
            "description": p.get("description") or "",
            "type": p.get("type") or "string",
            "required": bool(p.get("required", False)),
            "location": p.get("location") or "query",
            **({"default": p["default"]} if p.get("default") is not None else {}),
            **({"bodyPath": p.get("bodyPath") or p.get("name")} if (p.get("location") == "body") else {}),
            **({"header": p.get("header") or p.get("name")} if (p.get("location") == "header") else {}),
        }
        for p in given.get("parameters") or []
    ]
    return {
        "description": given.get("description") or "",
        "tags": list(dict.fromkeys(given.get("tags") or [])),
        "exposeInChat": bool(given.get("exposeInChat", True)),
        "enabled": given.get("enabled", True) is not False,
        "method": (given.get("method") or "GET").upper() if isinstance(given.get("method") or "GET", str) else given.get("method"),
        "urlTemplate": given.get("urlTemplate"),
        "parameters": params,
        "fixedQuery": dict(given.get("fixedQuery") or {}),
        "fixedBody": copy.deepcopy(given.get("fixedBody")) if given.get("fixedBody") is not None else None,
        "headers": dict(given.get("headers") or {}),
        "auth": dict(auth),
        "response": {
            "maxBytes": _or(response.get("maxBytes"), MAX_BYTES_DEFAULT),
            "jmespath": response.get("jmespath") or None,
            "module": response.get("module") or None,
            "maxOutputChars": _or(response.get("maxOutputChars"), MAX_OUTPUT_DEFAULT),
        },
        "timeoutMillis": _or(given.get("timeoutMillis"), TIMEOUT_DEFAULT),
        "connectTimeoutMillis": _or(given.get("connectTimeoutMillis"), CONNECT_DEFAULT),
        "maxRedirects": _or(given.get("maxRedirects"), REDIRECTS_DEFAULT),
        # R17: only when given, so that a configuration stored before them compares equal to itself.
        **{key: given[key] for key in ("annotations", "icons", "outputSchema") if given.get(key) is not None},
    }


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def secret_ids(config: Config) -> list[str]:
    """Every secret the configuration refers to, in order, once each."""
    found = [value["secret"] for value in config["headers"].values() if isinstance(value, dict)]
    auth = config["auth"]
    for key in ("secret", "clientSecret"):
        if isinstance(auth.get(key), str):
            found.append(auth[key])
    return list(dict.fromkeys(found))


def violations(config: Config) -> list[Violation]:
    """Every rule of docs/kinds/api-url-tools.md the (normalised) configuration breaks, each naming its field.
    Secrets and post-processing modules are the kind's to look up (`secret_ids`, `response.module`)."""
    found = description_violations(config["description"])
    found += _tag_violations(config["tags"])
    if config["method"] not in METHODS:
        found.append(Violation("method", "API", f"must be one of {', '.join(METHODS)}"))
    template_vars, template_found = template_violations(config["urlTemplate"])
    found += template_found
    found += _parameter_violations(config, template_vars if not template_found else None)
    found += _fixed_violations(config)
    found += _header_violations(config)
    found += _auth_violations(config["auth"])
    found += _response_violations(config["response"])
    found += _range("timeoutMillis", config["timeoutMillis"], TIMEOUT_RANGE)
    found += _range("connectTimeoutMillis", config["connectTimeoutMillis"], CONNECT_RANGE)
    found += _range("maxRedirects", config["maxRedirects"], (0, REDIRECTS_CAP))
    # R17: the hints within what the method says (a DELETE is never read-only), and the icons.
    if isinstance(config["method"], str):
        found += tool_hints.violations(config.get("annotations"), tool_hints.http_facts(config["method"]), "annotations")
    found += tool_hints.icon_violations(config.get("icons"), "icons")
    if config.get("outputSchema") is not None:
        found += schema_violations(config["outputSchema"], "outputSchema")  # V6
    return found


def _range(field: str, value: Any, bounds: tuple[int, int]) -> list[Violation]:
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return [Violation(field, "API", f"must be an integer from {low} to {high}, got {value!r}")]
    return []


def _tag_violations(tags: Any) -> list[Violation]:
    if not isinstance(tags, list):
        return [Violation("tags", "R9", "must be a list of strings")]
    found = []
    if len(tags) > MAX_TAGS:
        found.append(Violation("tags", "R4", f"at most {MAX_TAGS} tags, got {len(tags)}"))
    for i, tag in enumerate(tags):
        if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_TAG_LENGTH:
            found.append(Violation(f"tags[{i}]", "R9", f"a tag is 1 to {MAX_TAG_LENGTH} visible characters"))
    return found


# -- the URL template ---------------------------------------------------------------------------


def template_violations(template: Any) -> tuple[dict[str, str], list[Violation]]:
    """The template's variables (name -> `path` or `query`) and what is wrong with it."""
    field = "urlTemplate"
    if not isinstance(template, str) or not template:
        return {}, [Violation(field, "API", "must be an http or https URL template")]
    if len(template) > MAX_TEMPLATE:
        return {}, [Violation(field, "API", f"must be at most {MAX_TEMPLATE} characters")]
    if any(c.isspace() or ord(c) < 0x20 for c in template):
        return {}, [Violation(field, "API", "must not contain spaces or control characters")]
    if template.count("{") != template.count("}") or re.search(r"\{[^}]*\{|\}[^{]*\}", template):
        return {}, [Violation(field, "API", "has unbalanced braces")]
    first = template.find("{")
    literal = template if first < 0 else template[:first]
    scheme, sep, rest = literal.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        return {}, [Violation(field, "API", "must start with a literal http:// or https:// (no other scheme)")]
    authority_end = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=-1)
    if authority_end < 0:
        return {}, [Violation(field, "API", "scheme, host and port must be literal: the host must be followed by a "
                                            "'/' before any {variable}")]
    authority = rest[:authority_end]
    if "@" in authority:
        return {}, [Violation(field, "API", "must not contain user info (user@host)")]
    try:
        parts = urlsplit(f"{scheme}://{authority}/")
        port = parts.port
    except ValueError as e:
        return {}, [Violation(field, "API", f"has a bad host or port: {e}")]
    host = parts.hostname or ""
    if not host or not re.fullmatch(r"[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]", authority.rsplit(":", 1)[0] if port is not None else authority):
        return {}, [Violation(field, "API", f"has a bad host: {authority!r}")]
    if port is not None and not 1 <= port <= 65535:
        return {}, [Violation(field, "API", f"has a bad port: {port}")]
    if "#" in template:
        return {}, [Violation(field, "API", "must not have a fragment (#)")]
    try:
        parsed = URITemplate(template)
    except Exception as e:  # noqa: BLE001 - the library's own words about a bad template
        return {}, [Violation(field, "API", f"is not a valid URI template: {e}")]
    found: list[Violation] = []
    variables: dict[str, str] = {}
    in_query = "?" in literal[len(scheme) + 3:]
    position = 0
    for expression in parsed.variables:
        text = "{" + expression.original + "}"
        at = template.find(text, position)
        position = at + len(text)
        in_query = in_query or "?" in template[:at][len(scheme) + 3:]
        operator = expression.operator.value if hasattr(expression.operator, "value") else str(expression.operator)
        if operator not in ("", "?", "&"):
            found.append(Violation(field, "API", f"{text} is refused: only {{var}} in the path and {{?a,b}} or {{&c}} "
                                                 "for the query are allowed"))
            continue
        if operator == "" and in_query:
            found.append(Violation(field, "API", f"{text} is in the query: write the query as {{?name}} or {{&name}}"))
            continue
        if operator in ("?", "&"):
            in_query = True
        for name, modifiers in expression.variables:
            if modifiers.get("explode") or modifiers.get("prefix"):
                found.append(Violation(field, "API", f"{text}: explode (*) and prefix (:n) modifiers are refused"))
            elif name in variables:
                found.append(Violation(field, "API", f"the variable {name!r} appears twice"))
            else:
                variables[name] = "query" if operator in ("?", "&") else "path"
    return variables, found


# -- parameters ---------------------------------------------------------------------------------


def _parameter_violations(config: Config, template_vars: dict[str, str] | None) -> list[Violation]:
    params = config["parameters"]
    found = parameters_violations(params, "parameters")  # names, types and defaults, as a code tool's
    seen = {p["name"] for p in params}
    body_paths: list[tuple[str, str]] = []
    headers: set[str] = set()
    for i, p in enumerate(params):
        where = f"parameters[{i}]"
        location = p["location"]
        if location not in LOCATIONS:
            found.append(Violation(f"{where}.location", "API", f"must be one of {', '.join(LOCATIONS)}"))
            continue
        if template_vars is not None and location in ("path", "query") and template_vars.get(p["name"]) != location:
            if p["name"] in template_vars:
                found.append(Violation(f"{where}.location", "API",
                                       f"{p['name']!r} is a {template_vars[p['name']]} variable of urlTemplate"))
            else:
                found.append(Violation(f"{where}.name", "API", f"the {location} parameter {p['name']!r} is missing from urlTemplate"))
        if location == "path" and p["type"] not in _SCALARS:
            found.append(Violation(f"{where}.type", "API", "a path value is one segment: string, integer, decimal, date or boolean"))
        if location == "query" and p["type"] == "object":
            found.append(Violation(f"{where}.type", "API", "a query value is a scalar or an array"))
        if location == "header":
            name = p["header"]
            found += _model_header_violations(f"{where}.header", name, config)
            if isinstance(name, str) and name.lower() in headers:
                found.append(Violation(f"{where}.header", "API", f"the header {name!r} is set by two parameters"))
            headers.add(str(name).lower())
            if p["type"] not in _SCALARS:
                found.append(Violation(f"{where}.type", "API", "a header value is a string, integer, decimal, date or boolean"))
        if location == "body":
            if config["method"] == "GET":
                found.append(Violation(f"{where}.location", "API", "a GET request has no body"))
            path = p["bodyPath"]
            if not isinstance(path, str) or not _BODY_PATH.fullmatch(path):
                found.append(Violation(f"{where}.bodyPath", "API", "must be a dotted path of names (filters.status)"))
            else:
                body_paths.append((where, path))
    for i, (where, path) in enumerate(body_paths):
        for _, other in body_paths[:i]:
            if path == other or path.startswith(other + ".") or other.startswith(path + "."):
                found.append(Violation(f"{where}.bodyPath", "API", f"{path!r} overlaps the bodyPath {other!r}"))
        fixed = config["fixedBody"]
        if isinstance(fixed, dict) and _lands_on(fixed, path.split(".")):
            found.append(Violation(f"{where}.bodyPath", "API", f"{path!r} would override fixedBody, which the model cannot change"))
    if template_vars is not None:
        for name in template_vars:
            if name not in seen:
                found.append(Violation("urlTemplate", "API", f"the variable {name!r} is not a declared parameter"))
    return found


def _lands_on(fixed: dict[str, Any], path: list[str]) -> bool:
    """Whether setting `path` in a copy of `fixed` would replace or descend into one of its values."""
    node: Any = fixed
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return not isinstance(node, dict)  # a non-object on the way: the value could not be placed
        node = node[key]
    return True


def _model_header_violations(field: str, name: Any, config: Config) -> list[Violation]:
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        return [Violation(field, "API", "must be a header name (letters, digits and - only)")]
    lower = name.lower()
    if lower in FORBIDDEN_HEADERS or lower.startswith(FORBIDDEN_PREFIXES):
        return [Violation(field, "API", f"the model may not set the header {name!r}")]
    if lower in {h.lower() for h in config["headers"]} or lower in auth_headers(config["auth"]):
        return [Violation(field, "API", f"the header {name!r} is set by the operator or by auth: the model may not set it")]
    return []


def auth_headers(auth: dict[str, Any]) -> set[str]:
    """The (lower-case) headers auth sets."""
    kind = auth.get("type")
    if kind in ("bearer", "basic", "oauth2ClientCredentials"):
        return {"authorization"}
    if kind == "apiKey" and auth.get("in") == "header" and isinstance(auth.get("name"), str):
        return {auth["name"].lower()}
    return set()


def _fixed_violations(config: Config) -> list[Violation]:
    found = []
    query_params = {p["name"] for p in config["parameters"] if p["location"] == "query"}
    auth = config["auth"]
    for key, value in config["fixedQuery"].items():
        if not isinstance(key, str) or not key or len(key) > 200 or not isinstance(value, (str, int, float, bool)):
            found.append(Violation(f"fixedQuery.{key}", "API", "must map names to strings, numbers or booleans"))
        elif key in query_params:
            found.append(Violation(f"fixedQuery.{key}", "API", f"{key!r} is also a query parameter of the model"))
        elif auth.get("type") == "apiKey" and auth.get("in") == "query" and auth.get("name") == key:
            found.append(Violation(f"fixedQuery.{key}", "API", f"{key!r} is the API key's query name"))
    fixed = config["fixedBody"]
    if fixed is not None:
        if not isinstance(fixed, dict):
            found.append(Violation("fixedBody", "API", "must be a JSON object"))
        elif config["method"] == "GET":
            found.append(Violation("fixedBody", "API", "a GET request has no body"))
        elif has_reserved_object(fixed):
            found.append(Violation("fixedBody", "API", RESERVED_OBJECT))
        elif len(repr(fixed)) > MAX_FIXED_BODY:
            found.append(Violation("fixedBody", "API", f"must be at most {MAX_FIXED_BODY} characters"))
    return found


def _header_violations(config: Config) -> list[Violation]:
    headers = config["headers"]
    found = []
    if len(headers) > MAX_HEADERS:
        found.append(Violation("headers", "API", f"at most {MAX_HEADERS} headers"))
    lower = {name.lower() for name in headers if isinstance(name, str)}
    for name, value in headers.items():
        field = f"headers.{name}"
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            found.append(Violation(field, "API", "must be a header name (letters, digits and - only)"))
            continue
        if name.lower() in OPERATOR_FORBIDDEN or name.lower().startswith("proxy-"):
            found.append(Violation(field, "API", f"the header {name!r} is HTTP's own and cannot be set"))
        if name.lower() in auth_headers(config["auth"]):
            found.append(Violation(field, "API", f"the header {name!r} is set by auth"))
        if isinstance(value, dict):
            if set(value) != {"secret"} or not isinstance(value["secret"], str) or not value["secret"]:
                found.append(Violation(field, "API", 'a secret header value is {"secret": "<secret id>"}'))
        elif not isinstance(value, str) or len(value) > MAX_HEADER_VALUE:
            found.append(Violation(field, "API", f"must be a string of at most {MAX_HEADER_VALUE} characters or "
                                                 '{"secret": "<secret id>"}'))
        elif any(c in value for c in "\r\n\0"):
            found.append(Violation(field, "API", "must not contain a line break"))
    if len(lower) != len(headers):
        found.append(Violation("headers", "API", "a header is named twice (names are case-insensitive)"))
    return found


def _auth_violations(auth: dict[str, Any]) -> list[Violation]:
    kind = auth.get("type")
    if kind not in AUTH_TYPES:
        return [Violation("auth.type", "API", f"must be one of {', '.join(AUTH_TYPES)}")]
    allowed = {
        "none": {"type"},
        "apiKey": {"type", "in", "name", "secret"},
        "bearer": {"type", "secret"},
        "basic": {"type", "username", "secret"},
        "oauth2ClientCredentials": {"type", "tokenUrl", "clientId", "clientSecret", "scope", "audience", "clientAuth"},
    }[kind]
    found = [Violation(f"auth.{key}", "API", f"is not a field of {kind} auth") for key in auth if key not in allowed]
    for key in ("secret",) if kind in ("apiKey", "bearer", "basic") else ("clientSecret",) if kind != "none" else ():
        if not isinstance(auth.get(key), str) or not auth[key]:
            found.append(Violation(f"auth.{key}", "API", "must name a secret by its id"))
    if kind == "apiKey":
        if auth.get("in") not in ("header", "query"):
            found.append(Violation("auth.in", "API", "must be header or query"))
        name = auth.get("name")
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            found.append(Violation("auth.name", "API", "must be a header or query parameter name"))
        elif auth.get("in") == "header" and (name.lower() in OPERATOR_FORBIDDEN or name.lower() in ("authorization", "cookie")):
            found.append(Violation("auth.name", "API", f"{name!r} cannot carry an API key"))
    if kind == "basic" and (not isinstance(auth.get("username"), str) or not auth["username"] or ":" in auth["username"]):
        found.append(Violation("auth.username", "API", "must be a user name without ':'"))
    if kind == "oauth2ClientCredentials":
        token_url = auth.get("tokenUrl")
        if not isinstance(token_url, str) or "{" in token_url or template_violations(token_url)[1]:
            found.append(Violation("auth.tokenUrl", "API", "must be an http or https URL with a literal host"))
        if not isinstance(auth.get("clientId"), str) or not auth["clientId"]:
            found.append(Violation("auth.clientId", "API", "must be the client's id"))
        for key in ("scope", "audience"):
            if auth.get(key) is not None and not isinstance(auth[key], str):
                found.append(Violation(f"auth.{key}", "API", "must be a string"))
        if auth.get("clientAuth", "clientSecretBasic") not in CLIENT_AUTH:
            found.append(Violation("auth.clientAuth", "API", f"must be one of {', '.join(CLIENT_AUTH)}"))
    return found


def _response_violations(response: dict[str, Any]) -> list[Violation]:
    found = _range("response.maxBytes", response["maxBytes"], (1, MAX_BYTES_CAP))
    found += _range("response.maxOutputChars", response["maxOutputChars"], (100, MAX_OUTPUT_CAP))
    expression, module = response["jmespath"], response["module"]
    if expression is not None and module is not None:
        found.append(Violation("response", "API", "at most one of jmespath and module"))
    if expression is not None:
        if not isinstance(expression, str) or len(expression) > 2_000:
            found.append(Violation("response.jmespath", "API", "must be a JMESPath expression"))
        else:
            problem = jmes.expression_problem(expression)
            if problem is not None:
                found.append(Violation("response.jmespath", "API", problem))
    if module is not None and not isinstance(module, str):
        found.append(Violation("response.module", "API", "must name a published tool module"))
    return found


# -- one call -------------------------------------------------------------------------------------


def call_violations(config: Config, arguments: dict[str, Any]) -> list[Violation]:
    """What a call's (already typed) values break before anything is sent: a path value is one
    segment and never `.` or `..` (nor empty); no header value holds a line break."""
    found = []
    for p in config["parameters"]:
        value = arguments.get(p["name"])
        if value is None:
            continue
        text = as_text(value)
        if p["location"] == "path" and text in ("", ".", ".."):
            found.append(Violation(f"input.{p['name']}", "API", f"a path value cannot be {text!r}"))
        if p["location"] == "header" and any(c in text for c in "\r\n\0"):
            found.append(Violation(f"input.{p['name']}", "API", "a header value cannot contain a line break"))
    return found


def as_text(value: Any) -> str:
    """A scalar as it goes into a URL or a header: booleans as JSON writes them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
