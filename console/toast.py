"""Toasts: the short note the console shows after an action (published, restored, attached, saved,
deleted), with an Undo button where undoing is cheap. A route asks for one on its response; the
browser's toast.js (console/assets/toast.js) shows it in the shell's toast region.

How it travels depends on what the browser does with the response:
- an htmx request answered in place (a fragment swap): an `HX-Trigger` header
  `{"toast": {"text", "kind", "undo"?}}`, merged with any trigger the response already carries;
- anything that leads to another page (a 303 after a form, an htmx answer with `HX-Redirect`,
  `HX-Location` or `HX-Refresh`, a full page): a cookie `toolsmith_toast` (60 s, Path=/console,
  SameSite=Strict, JSON percent-encoded) that toast.js reads once on the next page and deletes.
  It holds only the toast's words and the Undo's form: never a secret (nothing a route puts in a
  toast may be one), so it need not be HttpOnly.

The Undo is a POST of `fields` (plus the session's CSRF token) to `url`, sent by toast.js; the page
then follows the answer's redirect or, if it has none, reloads (docs/console.md, "Toasts")."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import quote, unquote

from fastapi import Request
from starlette.responses import Response

COOKIE = "toolsmith_toast"
COOKIE_PATH = "/console"
COOKIE_SECONDS = 60
KINDS = ("success", "info", "warning", "error")
Kind = Literal["success", "info", "warning", "error"]
# A toast is a sentence, not a report: longer text is cut so that the cookie stays far below the
# browsers' 4 KB limit.
MAX_TEXT = 300
# htmx answers that make the browser leave the page: a header trigger would fire on the page left behind.
_LEAVING = ("hx-redirect", "hx-location", "hx-refresh")


@dataclass(frozen=True)
class Undo:
    """What the toast's Undo button sends: a POST of `fields` to `url` (a console path), labelled `label`."""

    url: str
    label: str = "Undo"
    fields: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Only the console's own paths: the button must never send the CSRF token elsewhere.
        if not self.url.startswith("/console/") or "//" in self.url or "\\" in self.url:
            raise ValueError(f"an Undo posts to a console path (/console/...), not {self.url!r}")

    def as_json(self) -> dict[str, object]:
        return {"url": self.url, "label": self.label, "fields": {str(k): str(v) for k, v in self.fields.items()}}


def toast(request: Request, response: Response, text: str, *, undo: Undo | None = None,
          kind: Kind = "success") -> Response:
    """Asks the browser to show `text` as a toast once `response` arrives (see the module's note on how);
    returns `response`, so a route may `return toast(request, answer, "Saved")`."""
    if kind not in KINDS:
        raise ValueError(f"a toast's kind is one of {', '.join(KINDS)}, not {kind!r}")
    body: dict[str, object] = {"text": text[:MAX_TEXT], "kind": kind}
    if undo is not None:
        body["undo"] = undo.as_json()
    in_place = (request.headers.get("hx-request") == "true" and not 300 <= response.status_code < 400
                and not any(name in response.headers for name in _LEAVING))
    if in_place:
        response.headers["HX-Trigger"] = _merged(response.headers.get("HX-Trigger"), body)
    else:
        response.set_cookie(COOKIE, quote(json.dumps(body, ensure_ascii=False, separators=(",", ":")), safe=""),
                            max_age=COOKIE_SECONDS, path=COOKIE_PATH, samesite="strict", httponly=False,
                            secure=request.url.scheme == "https")
    return response


def _merged(existing: str | None, body: dict[str, object]) -> str:
    """An `HX-Trigger` value with the toast added: a JSON object's keys kept, a plain list of event
    names (`a, b`) turned into keys with no detail, as htmx reads either."""
    triggers: dict[str, object] = {}
    if existing:
        try:
            parsed = json.loads(existing)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            triggers.update(parsed)
        else:
            triggers.update({name.strip(): None for name in existing.split(",") if name.strip()})
    triggers["toast"] = body
    # ASCII only: a header's value is Latin-1 on the wire; json escapes the rest (htmx parses it back).
    return json.dumps(triggers, ensure_ascii=True, separators=(",", ":"))


def read_cookie(value: str) -> dict[str, object] | None:
    """The toast a cookie holds (what toast.js reads), or None if it is not one: for tests."""
    try:
        body = json.loads(unquote(value))
    except ValueError:
        return None
    return body if isinstance(body, dict) and isinstance(body.get("text"), str) else None
