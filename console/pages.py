"""Rendering: one Jinja2 environment (autoescaping every template), the asset URLs, and the shapes
every page shares (the visitor, the CSRF token, the sidebar's grouped navigation and the section a
page is in, which the default breadcrumbs name)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from console.display import when
from console import language

if TYPE_CHECKING:
    from api.kinds import Nav

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"
STATIC_URL = "/console/static"

# The sidebar's groups, in order: what an admin builds, how callers connect to it, and who did what.
GROUPS = ("Build", "Connect", "Govern")
# Where the console's own links lead, each with its rank among every entry and its group: (path, label,
# rank, group). A kind's pages have an entry of their own (`KindPlugin.navigation`), ranked among these;
# the sidebar shows each group's entries by rank.
NAVIGATION = (
    ("/console/tools", "Tools", 5, "Build"),
    ("/console/playground", "Playground", 50, "Build"),
    ("/console/modules/changeset-history", "Changesets", 55, "Build"),
    ("/console/servers", "MCP servers", 60, "Connect"),
    ("/console/profiles", "Usage profiles", 70, "Connect"),
    ("/console/tokens", "Tokens", 80, "Connect"),
    ("/console/oauth/grants", "Connected apps", 85, "Connect"),
    ("/console/secrets", "Secrets", 90, "Connect"),
    ("/console/agents", "Agents", 100, "Connect"),
    ("/console/plans", "Plans", 110, "Connect"),
    ("/console/audit", "Audit", 120, "Govern"),
    ("/console/calls", "Calls", 118, "Govern"),
    ("/console/users", "People", 115, "Govern"),
)
# The operator's (docs/tenants.md): it manages the organizations and nothing inside them.
OPERATOR_NAVIGATION = (
    ("/console/operator/tenants", "Organizations", 10, "Govern"),
)


def grouped(entries: Iterable[tuple[str, str, int, str]]) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """The sidebar: each group that has entries, in GROUPS' order (another group after them), with
    its (path, label) entries by rank."""
    ranked = sorted(entries, key=lambda e: e[2])
    names = [*GROUPS, *sorted({e[3] for e in ranked} - set(GROUPS))]
    groups = tuple((name, tuple((path, label) for path, label, _, group in ranked if group == name)) for name in names)
    return tuple(group for group in groups if group[1])


def section(path: str, groups: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]) -> tuple[str, str] | None:
    """The sidebar's entry a page is in: the longest entry path that is the page's or a folder of it
    (`/console/modules/changeset-history` is Changesets', not Code modules')."""
    best = None
    for _, entries in groups:
        for href, label in entries:
            if (path == href or path.startswith(href.rstrip("/") + "/")) and (best is None or len(href) > len(best[0])):
                best = (href, label)
    return best


# What a plain dict has as attributes (its methods): `d.items` in a template is the method, as in Jinja.
_DICT_ATTRIBUTES = frozenset(dir(dict))


class _Environment(Environment):
    """Jinja's environment, reading `row.name` of a plain dict as its item at once. Jinja tries the
    attribute first, and for a dict that raises and catches an AttributeError before it reads the
    item: a few hundred exceptions a page, most of the time of an answer such as an attach's
    (servers/_tools.html; bench.console_browser). The result is the same: a name that is one of
    dict's own attributes (`items`, `get`…), a key that is not there, or any other object go
    through Jinja's own `getattr`."""

    def getattr(self, obj: Any, attribute: str) -> Any:  # noqa: A003 - Jinja's method
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


class Pages:
    def __init__(self, templates: Path | tuple[Path, ...] = TEMPLATES, static: Path = STATIC,
                 navigation: Iterable[Nav] = ()) -> None:
        """`templates`: the console's folder of templates, or it and the kinds' folders, searched in order;
        `navigation`: the kinds' entries, shown among the console's own by rank."""
        # Each template compiled once and kept (auto_reload off): the files do not change while the service
        # runs (a new release is a new start), and checking each one's modification time on every render
        # and include cost a page a stat call per template it includes (a save's answer includes nine).
        self.env = _Environment(loader=FileSystemLoader(templates), autoescape=True, undefined=StrictUndefined,
                               trim_blocks=True, lstrip_blocks=True, auto_reload=False, cache_size=-1)
        self.static = static
        self._versions: dict[str, str] = {}
        # The files there are (relative names, as URLs spell them): only these are ever hashed.
        self.static_names = frozenset(p.relative_to(static).as_posix() for p in static.rglob("*") if p.is_file()) \
            if static.is_dir() else frozenset()
        groups = grouped([*NAVIGATION, *((entry.path, entry.label, entry.rank, entry.group) for entry in navigation)])
        self.env.globals.update(asset=self.asset, navigation=groups, operator_navigation=grouped(OPERATOR_NAVIGATION),
                                section=section, tojson=_tojson)
        self.env.filters["tojson"] = _tojson
        # Dates (console.display.when): `{{ moment|when }}`, or `{{ moment|when(absolute_text=True) }}`.
        self.env.filters["when"] = when
        self.env.filters.update(plain=language.plain, rules_in=language.rules_in, rule_refs=language.rule_refs, kind_words=language.kind_words,
                                event_words=language.event_words)  # rule codes as words (console.language)

    def asset(self, name: str) -> str:
        """A static file's URL, with a hash of its bytes so that a new build is fetched anew."""
        return f"{STATIC_URL}/{name}?v={self.version(name)}"

    def version(self, name: str) -> str:
        """The hash of a static file's bytes, read once (the files do not change while the service
        runs: a new build is a new start); "missing" for a file that is not there."""
        version = self._versions.get(name)
        if version is None:
            path = self.static / name
            version = hashlib.sha256(path.read_bytes()).hexdigest()[:12] if path.is_file() else "missing"
            self._versions[name] = version
        return version

    def render(self, request: Request, template: str, status: int = 200, headers: dict[str, str] | None = None,
               **context: Any) -> HTMLResponse:
        visitor = getattr(request.state, "visitor", None)
        html = self.env.get_template(template).render(
            request=request, visitor=visitor, csrf=visitor.session.csrf if visitor else "",
            path=request.url.path, htmx=request.headers.get("hx-request") == "true", **context,
        )
        return HTMLResponse(html, status_code=status, headers=headers)


def _tojson(value: Any) -> str:
    """JSON for an attribute or a `<script type="application/json">`: `<`, `>` and `&` escaped, so
    that module text can never close the element it is in (autoescaping escapes it again for attributes)."""
    text = json.dumps(value, ensure_ascii=False, indent=None, sort_keys=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
