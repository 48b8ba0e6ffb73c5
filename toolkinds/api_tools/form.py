"""The API URL tool editor's form (docs/kinds/api-url-tools.md, docs/console.md) in both directions: a tool's configuration as
the form's values, the submitted form as the REST API's request body, and each rule a save breaks
as a message tied to the form field it names. No rule is checked here: the kind's `save` checks them
all, as it does for REST; this module only reads what a person typed (a number, JSON) and says where
a message belongs."""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from console.configured import expected_version
from domain.errors import Violation
from domain.rules import PARAMETER_TYPES
from toolkinds.api_tools.model import AUTH_TYPES, CLIENT_AUTH, LOCATIONS, METHODS, ApiTool

# Each auth type's own fields, in the order the form shows them (`secret` fields name a secret by id).
AUTH_FIELDS: dict[str, tuple[str, ...]] = {
    "none": (),
    "apiKey": ("in", "name", "secret"),
    "bearer": ("secret",),
    "basic": ("username", "secret"),
    "oauth2ClientCredentials": ("tokenUrl", "clientId", "clientSecret", "scope", "audience", "clientAuth"),
}
assert set(AUTH_FIELDS) == set(AUTH_TYPES)
AUTH_LABELS = {"none": "None", "apiKey": "API key", "bearer": "Bearer token", "basic": "Basic (user and password)",
               "oauth2ClientCredentials": "OAuth 2 client credentials"}
FIELD_LABELS = {
    "id": "Name", "description": "Description", "tags": "Tags", "method": "Method", "urlTemplate": "URL template",
    "parameters": "Parameters", "fixedQuery": "Fixed query", "fixedBody": "Fixed body", "headers": "Headers",
    "timeoutMillis": "Timeout", "connectTimeoutMillis": "Connect timeout", "maxRedirects": "Redirects followed",
    "exposeInChat": "Callable in chat", "enabled": "Enabled", "response": "Response", "annotations": "Annotations", "icons": "Icons",
    "outputSchema": "Output schema",
    "response.maxBytes": "Response, bytes read at most", "response.jmespath": "Response, JMESPath",
    "response.module": "Response, post-processing module", "response.maxOutputChars": "Response, output characters at most",
    "auth.type": "Auth type", "auth.in": "API key sent in", "auth.name": "API key name", "auth.secret": "Auth secret id",
    "auth.username": "User name", "auth.tokenUrl": "Token URL", "auth.clientId": "Client id",
    "auth.clientSecret": "Client secret", "auth.scope": "Scope", "auth.audience": "Audience",
    "auth.clientAuth": "Client authentication",
}
PARAM_LABELS = {"name": "name", "type": "type", "required": "required", "default": "default", "description": "description",
                "location": "location", "bodyPath": "body path", "header": "header name"}
# What the Playground's arguments start with for a parameter without a default.
EXAMPLES: dict[str, Any] = {"string": "", "integer": 0, "decimal": 0, "date": "2024-05-06", "boolean": False, "array": [], "object": {}}
WHOLE_FIELDS = ("timeoutMillis", "connectTimeoutMillis", "maxRedirects")
RESPONSE_WHOLE = ("maxBytes", "maxOutputChars")

Values = dict[str, Any]


def new_key() -> str:
    """A row's key in the form's field names: unique within a page (rows are added and removed)."""
    return secrets.token_hex(4)


def blank_param() -> dict[str, Any]:
    return {"key": "__i__", "name": "", "type": "string", "required": False, "default": "", "description": "",
            "location": "query", "bodyPath": "", "header": ""}


def blank_pair() -> dict[str, Any]:
    return {"key": "__i__", "name": "", "value": "", "secret": False}


def _auth_values(auth: dict[str, Any]) -> dict[str, Any]:
    chosen = auth.get("type") or "none"
    values: dict[str, Any] = {"type": chosen}
    for kind, fields in AUTH_FIELDS.items():
        values[kind] = {f: (str(auth.get(f) or "") if kind == chosen else "") for f in fields}
    values["apiKey"]["in"] = values["apiKey"]["in"] or "header"
    values["oauth2ClientCredentials"]["clientAuth"] = values["oauth2ClientCredentials"]["clientAuth"] or "clientSecretBasic"
    return values


def values_of(config: dict[str, Any] | None, tool_id: str = "", version: int | None = None) -> Values:
    """The form's values for a tool's configuration (or a new tool's, when None)."""
    config = config or {}
    response = config.get("response") or {}

    def text(value: Any) -> str:
        return "" if value is None else str(value)

    return {
        "id": tool_id,
        "version": "" if version is None else str(version),
        "description": config.get("description", ""),
        "tags": ", ".join(config.get("tags", [])),
        "method": config.get("method", "GET"),
        "urlTemplate": config.get("urlTemplate") or "",
        "parameters": [
            {"key": new_key(), "name": p["name"], "type": p["type"], "required": p["required"], "description": p["description"],
             "default": _default_text(p.get("default"), p["type"]), "location": p["location"],
             "bodyPath": p.get("bodyPath", ""), "header": p.get("header", "")}
            for p in config.get("parameters", [])
        ],
        "fixedQuery": [{"key": new_key(), "name": k, "value": text(v), "secret": False} for k, v in config.get("fixedQuery", {}).items()],
        "fixedBody": json.dumps(config["fixedBody"], indent=2, ensure_ascii=False) if config.get("fixedBody") is not None else "",
        "headers": [
            {"key": new_key(), "name": k, "value": v["secret"] if isinstance(v, dict) else v, "secret": isinstance(v, dict)}
            for k, v in config.get("headers", {}).items()
        ],
        "auth": _auth_values(config.get("auth") or {"type": "none"}),
        "response": {"maxBytes": text(response.get("maxBytes")), "jmespath": text(response.get("jmespath")),
                     "module": text(response.get("module")), "maxOutputChars": text(response.get("maxOutputChars"))},
        "timeoutMillis": text(config.get("timeoutMillis")),
        "connectTimeoutMillis": text(config.get("connectTimeoutMillis")),
        "maxRedirects": text(config.get("maxRedirects")),
        "exposeInChat": config.get("exposeInChat", True),
        "enabled": config.get("enabled", True),
        # R17: the admin's annotations (a hint: "", "true" or "false") and the icons as JSON.
        "annotations": _annotation_values(config.get("annotations") or {}),
        "icons": json.dumps(config["icons"], indent=2, ensure_ascii=False) if config.get("icons") else "",
        # V6: the output schema as JSON.
        "outputSchema": json.dumps(config["outputSchema"], indent=2, ensure_ascii=False) if config.get("outputSchema") else "",
    }


# R17's hints as the form shows them: the field, its label, what "yes" and "no" mean.
HINTS = (
    ("readOnlyHint", "Read-only", "changes nothing", "may change things"),
    ("destructiveHint", "Destructive", "may delete", "only adds"),
    ("idempotentHint", "Idempotent", "repeatable", "each call adds"),
    ("openWorldHint", "Open world", "outside systems", "a closed domain"),
)
HINT_LABELS = {hint: label for hint, label, *_ in HINTS}


def _annotation_values(given: dict[str, Any]) -> dict[str, str]:
    values = {"title": given.get("title") or ""}
    for hint, *_ in HINTS:
        value = given.get(hint)
        values[hint] = "" if value is None else ("true" if value else "false")
    return values


def _default_text(default: Any, type_: str) -> str:
    if default is None:
        return ""
    return default if type_ in ("string", "date") and isinstance(default, str) else json.dumps(default, ensure_ascii=False)


def _text(form: Any, name: str) -> str:
    value = form.get(name)
    return value.replace("\r\n", "\n") if isinstance(value, str) else ""


def _keys(form: Any, name: str) -> list[str]:
    """The row keys a form sent for one table, in order (a key is letters and digits only)."""
    return [k for k in form.getlist(name) if isinstance(k, str) and re.fullmatch(r"[A-Za-z0-9_]{1,16}", k)]


def form_values(form: Any, tool_id: str | None = None) -> Values:
    """The submitted form, as typed, to show it again."""
    chosen = _text(form, "auth_type") or "none"
    auth: dict[str, Any] = {"type": chosen}
    for kind, fields in AUTH_FIELDS.items():
        auth[kind] = {f: _text(form, f"auth_{kind}_{f}").strip() for f in fields}
    parameters = []
    for key in _keys(form, "param_row"):
        parameters.append({
            "key": key, "name": _text(form, f"param_{key}_name").strip(), "type": _text(form, f"param_{key}_type") or "string",
            "required": form.get(f"param_{key}_required") == "on", "default": _text(form, f"param_{key}_default").strip(),
            "description": _text(form, f"param_{key}_description").strip(),
            "location": _text(form, f"param_{key}_location") or "query",
            "bodyPath": _text(form, f"param_{key}_bodyPath").strip(), "header": _text(form, f"param_{key}_header").strip(),
        })
    return {
        "id": tool_id if tool_id is not None else _text(form, "id").strip(),
        "version": _text(form, "version").strip(),
        "description": _text(form, "description").strip(),
        "tags": _text(form, "tags"),
        "method": _text(form, "method") or "GET",
        "urlTemplate": _text(form, "urlTemplate").strip(),
        "parameters": parameters,
        "fixedQuery": [{"key": k, "name": _text(form, f"query_{k}_name").strip(), "value": _text(form, f"query_{k}_value"),
                        "secret": False} for k in _keys(form, "query_row")],
        "fixedBody": _text(form, "fixedBody"),
        "headers": [{"key": k, "name": _text(form, f"header_{k}_name").strip(), "value": _text(form, f"header_{k}_value").strip(),
                     "secret": _text(form, f"header_{k}_kind") == "secret"} for k in _keys(form, "header_row")],
        "auth": auth,
        "response": {f: _text(form, f"response_{f}").strip() for f in ("maxBytes", "jmespath", "module", "maxOutputChars")},
        **{f: _text(form, f).strip() for f in WHOLE_FIELDS},
        "exposeInChat": form.get("exposeInChat") == "on",
        "enabled": form.get("enabled") == "on",
        "annotations": {"title": _text(form, "annotationTitle").strip(),
                        **{hint: v if (v := _text(form, hint)) in ("true", "false") else "" for hint, *_ in HINTS}},
        "icons": _text(form, "icons"),
        "outputSchema": _text(form, "outputSchema"),
    }


def body_of(values: Values) -> tuple[dict[str, Any], list[Violation]]:
    """The REST API's request body (`ApiToolBody`'s fields) from the form's values, and what could not
    be read as typed (a number that is not one, JSON that is not JSON), each naming its field."""
    found: list[Violation] = []

    def whole(text: str, field: str) -> int | None:
        if not text:
            return None
        if not re.fullmatch(r"-?[0-9]{1,12}", text.replace(",", "").replace("_", "")):
            found.append(Violation(field, "API", "must be a whole number"))
            return None
        return int(text.replace(",", "").replace("_", ""))

    fixed_body = None
    if values["fixedBody"].strip():
        try:
            fixed_body = json.loads(values["fixedBody"])
        except ValueError as error:
            found.append(Violation("fixedBody", "API", f"is not JSON: {_json_error(error)}"))
        else:
            if not isinstance(fixed_body, dict):
                found.append(Violation("fixedBody", "API", "must be a JSON object ({...})"))
                fixed_body = None
    parameters = []
    for index, p in enumerate(r for r in values["parameters"] if _filled(r)):
        param: dict[str, Any] = {"name": p["name"], "type": p["type"], "required": p["required"], "description": p["description"],
                                 "location": p["location"]}
        if p["default"]:
            param["default"] = _default(p["default"], p["type"], f"parameters[{index}].default", found)
        if p["location"] == "body" and p["bodyPath"]:
            param["bodyPath"] = p["bodyPath"]
        if p["location"] == "header" and p["header"]:
            param["header"] = p["header"]
        parameters.append(param)
    auth = values["auth"]
    chosen = auth["type"]
    auth_body: dict[str, Any] = {"type": chosen}
    for f in AUTH_FIELDS.get(chosen, ()):
        if auth[chosen].get(f):
            auth_body[f] = auth[chosen][f]
    response = values["response"]
    body = {
        "description": values["description"],
        "tags": [t.strip() for t in values["tags"].split(",") if t.strip()],
        "method": values["method"],
        "urlTemplate": values["urlTemplate"],
        "parameters": parameters,
        "fixedQuery": {q["name"]: q["value"] for q in values["fixedQuery"] if q["name"] or q["value"]},
        "fixedBody": fixed_body,
        "headers": {h["name"]: ({"secret": h["value"]} if h["secret"] else h["value"])
                    for h in values["headers"] if h["name"] or h["value"]},
        "auth": auth_body,
        "response": {"maxBytes": whole(response["maxBytes"], "response.maxBytes"),
                     "jmespath": response["jmespath"] or None, "module": response["module"] or None,
                     "maxOutputChars": whole(response["maxOutputChars"], "response.maxOutputChars")},
        **{f: whole(values[f], f) for f in WHOLE_FIELDS},
        "exposeInChat": values["exposeInChat"],
        "enabled": values["enabled"],
    }
    given = values["annotations"]
    annotations: dict[str, Any] = {"title": given["title"]} if given["title"] else {}
    annotations.update({hint: given[hint] == "true" for hint, *_ in HINTS if given[hint]})
    if annotations:
        body["annotations"] = annotations
    if values["icons"].strip():
        try:
            body["icons"] = json.loads(values["icons"])
        except ValueError as error:
            found.append(Violation("icons", "R17", f"is not JSON: {_json_error(error)}"))
    if values.get("outputSchema", "").strip():
        try:
            body["outputSchema"] = json.loads(values["outputSchema"])
        except ValueError as error:
            found.append(Violation("outputSchema", "V6", f"is not JSON: {_json_error(error)}"))
    return body, found


def _filled(row: dict[str, Any]) -> bool:
    """A parameter row with something typed in it (an added row left empty is not a parameter)."""
    return bool(row["name"] or row["description"] or row["default"])


def _default(text: str, type_: str, field: str, found: list[Violation]) -> Any:
    """A default as typed: a string or a date as it is, any other type as JSON."""
    if type_ in ("string", "date"):
        return text
    try:
        return json.loads(text)
    except ValueError:
        found.append(Violation(field, "V1", f"is not a valid {type_} (write it as JSON: 5, 2.5, true, [\"a\"])"))
        return None


def _json_error(error: ValueError) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} (line {error.lineno}, column {error.colno})"
    return str(error)


# -- where each message goes --------------------------------------------------------------------


def anchor_of(field: str, values: Values) -> tuple[str, str]:
    """The id of the form field a rule's field path names, and the label a person reads for it."""
    match = re.match(r"parameters\[(\d+)\](?:\.(\w+))?", field)
    if match:
        rows = [r for r in values["parameters"] if _filled(r)]
        index = int(match.group(1))
        part = match.group(2) if match.group(2) in PARAM_LABELS else "name"
        if index < len(rows):
            return f"param-{rows[index]['key']}-{part}", f"Parameter {index + 1}, {PARAM_LABELS[part]}"
        return "parameters", "Parameters"
    for table, prefix, label in (("fixedQuery", "query", "Fixed query"), ("headers", "header", "Header")):
        if field.startswith(table + "."):
            name = field[len(table) + 1:]
            row = next((r for r in values[table] if r["name"] == name), None)
            if row is not None:
                return f"{prefix}-{row['key']}-name", f"{label} {name}"
            return table, FIELD_LABELS[table]
    if field.startswith("auth."):
        part = field[len("auth."):]
        chosen = values["auth"]["type"]
        label = FIELD_LABELS.get(field, "Auth")
        if part in AUTH_FIELDS.get(chosen, ()):
            return f"auth-{chosen}-{part}", label
        return "auth-type", label
    if field.startswith("response"):
        part = field[len("response."):] if field.startswith("response.") else "jmespath"
        return f"response-{part}", FIELD_LABELS.get(field, "Response")
    if field.startswith("annotations."):
        part = field[len("annotations."):]
        if part in HINT_LABELS:
            return f"hint-{part}", f"Annotations, {HINT_LABELS[part]}"
        return ("annotation-title", "Annotations, Title") if part == "title" else ("annotations", "Annotations")
    if field.startswith("icons"):
        return "icons", "Icons"
    if field.startswith("outputSchema"):
        return "outputSchema", "Output schema"
    root = re.match(r"[A-Za-z]+", field)
    name = root.group(0) if root else ""
    if name in FIELD_LABELS:
        return name, FIELD_LABELS[name]
    return "form", field or "The form"


def messages_of(found: list[Violation], values: Values) -> dict[str, list[str]]:
    """Messages by the id of the form field each is about, each naming that field."""
    fields: dict[str, list[str]] = {}
    for violation in found:
        anchor, label = anchor_of(violation.field, values)
        fields.setdefault(anchor, []).append(f"{label}: {violation.message}")
    return fields


def example_arguments(parameters: list[dict[str, Any]]) -> str:
    """The Playground's arguments to start from: each parameter's default, or an example of its type."""
    return json.dumps({p["name"]: p.get("default", EXAMPLES.get(p["type"])) for p in parameters}, indent=2, ensure_ascii=False)


CHOICES = {"methods": METHODS, "types": PARAMETER_TYPES, "locations": LOCATIONS, "auth_types": AUTH_TYPES,
           "auth_labels": AUTH_LABELS, "client_auth": CLIENT_AUTH}


class ApiToolForm:
    """The editor's form as the pages every configured kind shares use it (`console/configured.py: Form`)."""

    def values_of(self, tool: ApiTool | None) -> Values:
        return values_of(None) if tool is None else values_of(tool.config, tool.tool_id, tool.version)

    def form_values(self, form: Any, tool_id: str | None) -> Values:
        return form_values(form, tool_id)

    def body_of(self, values: Values) -> tuple[dict[str, Any], list[Violation]]:
        return body_of(values)

    def messages_of(self, found: list[Violation], values: Values) -> dict[str, list[str]]:
        return messages_of(found, values)

    def expected(self, kind: Any, tenant: str, name: str, values: Values, config: dict[str, Any]) -> int | None:
        # The version the form was opened with: a save after someone else's is refused (B7).
        return expected_version(values)
