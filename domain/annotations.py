"""Tool annotations and icons (docs/rules.md R17; MCP's `ToolAnnotations` and `Icon`, 2025-11-25).

Every kind of tool says what it knows of itself (`Facts`): the hints it derives (`derived`: an API
URL tool's GET reads, a code module without `http.fetch` touches nothing outside its call, a File
Search tool reads what the server holds), and the hints whose "safe" value would be false
(`unsafe`: a DELETE deletes, a module that calls `http.fetch` reaches the open world). An admin
may set any hint (`annotations` in a tool's definition, versioned with it), but never the safe
value of a hint the kind knows to be unsafe: marking a tool that deletes as read-only is refused,
naming the field and the reason. A more cautious value than the derived one is always accepted.

The hints shown to a client are the derived ones overlaid by the admin's (`annotations`), with a
`title` when the admin gave one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from domain.errors import Violation

RULE = "R17"
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
KEYS = ("title", *HINTS)
# The value of each hint that makes a tool look safer than its default (MCP's defaults:
# readOnly false, destructive true, idempotent false, openWorld true).
SAFE = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
MAX_TITLE = 200
MAX_ICONS = 8
MAX_ICON_SRC = 65_536
ICON_KEYS = ("src", "mimeType", "sizes", "theme")
ICON_THEMES = ("light", "dark")
_SIZE = re.compile(r"\A(?:any|[1-9][0-9]{0,4}x[1-9][0-9]{0,4})\Z")
_MEDIA_TYPE = re.compile(r"\Aimage/[A-Za-z0-9.+-]{1,100}\Z")


@dataclass(frozen=True)
class Facts:
    """What a kind knows of one tool: hints it derives, and hints whose safe value is false (why)."""

    derived: Mapping[str, bool] = field(default_factory=dict)
    unsafe: Mapping[str, str] = field(default_factory=dict)


# Reads what the server holds, and nothing else (a File Search tool's capabilities).
READS_ITS_OWN = Facts(derived={"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False})
# Knows nothing of itself (a tools file's tool that declares no annotations).
UNKNOWN = Facts()

_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def http_facts(method: str) -> Facts:
    """An API URL tool's, by its HTTP method (RFC 9110: GET is safe; GET, PUT and DELETE are
    idempotent). Its world is the API it calls: open by default, and the admin may say closed."""
    method = method.upper()
    if method in _SAFE_METHODS:
        return Facts(derived={"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": True})
    writes = f"its method is {method}, which changes the resource it is sent to"
    if method == "DELETE":
        return Facts(derived={"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": True},
                     unsafe={"readOnlyHint": "its method is DELETE, which deletes", "destructiveHint": "its method is DELETE, which deletes"})
    if method == "PUT":
        return Facts(derived={"readOnlyHint": False, "idempotentHint": True, "openWorldHint": True}, unsafe={"readOnlyHint": writes})
    return Facts(derived={"readOnlyHint": False, "openWorldHint": True}, unsafe={"readOnlyHint": writes})


# `http` as an identifier (not `https`, not `http:` in a URL, not `x.http`): the only way a module
# reaches anything outside its call. A mention in a comment counts too: that only makes the
# derived hints more cautious.
_HTTP = re.compile(r"(?<![\w$.])http(?![\w$:])")


def uses_http(source: object) -> bool:
    """Whether a module's source names `http`; a source that is not text (refused by its own rule) names nothing."""
    return isinstance(source, str) and _HTTP.search(source) is not None


def module_facts(fetching: str | None) -> Facts:
    """A code module's: `fetching` names the module (itself or one it imports) whose code uses
    `http.fetch`, None when none does. Without it, a module computes and answers, nothing more."""
    if fetching is None:
        return READS_ITS_OWN
    return Facts(derived={"openWorldHint": True},
                 unsafe={"openWorldHint": f"{'its code' if fetching == '' else f'the module {fetching} it imports'} calls http.fetch, "
                         "which reaches the network"})


def violations(given: Any, facts: Facts, where: str) -> list[Violation]:
    """The problems of an `annotations` object an admin gave, each named by its path."""
    if given is None:
        return []
    if not isinstance(given, dict):
        return [Violation(where, RULE, "must be an object of title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint")]
    found: list[Violation] = []
    for key in given:
        if key not in KEYS:
            found.append(Violation(f"{where}.{key}", RULE, f"is not an annotation ({', '.join(KEYS)})"))
    title = given.get("title")
    if title is not None and (not isinstance(title, str) or not title.strip() or len(title) > MAX_TITLE):
        found.append(Violation(f"{where}.title", RULE, f"a title is 1 to {MAX_TITLE} characters, not blank"))
    for hint in HINTS:
        value = given.get(hint)
        if value is None:
            continue
        if not isinstance(value, bool):
            found.append(Violation(f"{where}.{hint}", RULE, "must be true or false"))
        elif value == SAFE[hint] and hint in facts.unsafe:
            found.append(Violation(f"{where}.{hint}", RULE, f"cannot be {str(value).lower()}: {facts.unsafe[hint]}"))
    return found


def icon_violations(icons: Any, where: str) -> list[Violation]:
    """MCP's icons (2025-11-25): at most 8, each a `src` (an https: URL or a data: image URI),
    an optional `mimeType` (image/…), `sizes` ("48x48" or "any") and `theme` (light or dark)."""
    if icons is None:
        return []
    if not isinstance(icons, list):
        return [Violation(where, RULE, "must be a list of icons")]
    found: list[Violation] = []
    if len(icons) > MAX_ICONS:
        found.append(Violation(where, RULE, f"at most {MAX_ICONS} icons, got {len(icons)}"))
    for i, icon in enumerate(icons[:MAX_ICONS]):
        at = f"{where}[{i}]"
        if not isinstance(icon, dict):
            found.append(Violation(at, RULE, "must be an object with src, and mimeType, sizes, theme if given"))
            continue
        for key in icon:
            if key not in ICON_KEYS:
                found.append(Violation(f"{at}.{key}", RULE, f"is not a field of an icon ({', '.join(ICON_KEYS)})"))
        src = icon.get("src")
        if not isinstance(src, str) or not (src.startswith("https://") or src.startswith("data:image/")) or len(src) > MAX_ICON_SRC:
            found.append(Violation(f"{at}.src", RULE, f"must be an https: URL or a data:image/… URI of at most {MAX_ICON_SRC} characters"))
        elif any(c.isspace() or ord(c) < 32 for c in src):
            found.append(Violation(f"{at}.src", RULE, "must not contain spaces or control characters"))
        media = icon.get("mimeType")
        if media is not None and (not isinstance(media, str) or not _MEDIA_TYPE.match(media)):
            found.append(Violation(f"{at}.mimeType", RULE, "must be an image media type (image/png, image/svg+xml, …)"))
        sizes = icon.get("sizes")
        if sizes is not None and (not isinstance(sizes, list) or len(sizes) > 20
                                  or not all(isinstance(s, str) and _SIZE.match(s) for s in sizes)):
            found.append(Violation(f"{at}.sizes", RULE, 'must be a list of sizes such as "48x48" or "any"'))
        theme = icon.get("theme")
        if theme is not None and theme not in ICON_THEMES:
            found.append(Violation(f"{at}.theme", RULE, "must be light or dark"))
    return found


def annotations(given: Mapping[str, Any] | None, facts: Facts) -> dict[str, Any] | None:
    """The annotations a client is shown (MCP's wire names): the kind's derived hints, then the
    admin's (checked when given), with the title if one was given. None when there is nothing."""
    shown: dict[str, Any] = {}
    if given and given.get("title"):
        shown["title"] = given["title"]
    for hint in HINTS:
        value = given.get(hint) if given else None
        if value is not None and value == SAFE[hint] and hint in facts.unsafe:
            # A claim that has become false since it was accepted (a library it imports now
            # fetches): the fact is shown, never the claim.
            value = None
        if value is None:
            value = facts.derived.get(hint)
        if value is not None:
            shown[hint] = value
    return shown or None


def icons(given: Any) -> tuple[dict[str, Any], ...]:
    """The icons as they are listed (already checked), None values left out."""
    if not isinstance(given, list):
        return ()
    return tuple({k: v for k, v in icon.items() if v is not None} for icon in given if isinstance(icon, dict))


def combined(steps: list[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """A plan's hints from its steps' (each a tool's shown annotations, None when unknown): it
    reads only if every step does, is idempotent if every step is, destructive if any step may
    be (MCP's default for a tool that writes), and open-world if any step may be. None when a
    step is unknown or there is none: nothing is claimed."""
    if not steps or any(step is None for step in steps):
        return None
    read_only = all(step.get("readOnlyHint") is True for step in steps)  # type: ignore[union-attr]
    shown: dict[str, Any] = {"readOnlyHint": read_only}
    shown["destructiveHint"] = False if read_only else any(
        step.get("readOnlyHint") is not True and step.get("destructiveHint") is not False for step in steps)  # type: ignore[union-attr]
    shown["idempotentHint"] = all(step.get("readOnlyHint") is True or step.get("idempotentHint") is True for step in steps)  # type: ignore[union-attr]
    shown["openWorldHint"] = any(step.get("openWorldHint") is not False for step in steps)  # type: ignore[union-attr]
    return shown
