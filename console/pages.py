"""Rendering: one Jinja2 environment (autoescaping every template), the asset URLs, and the shapes
every page shares (the visitor, the CSRF token, the navigation)."""

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

# Where the console's own links lead, each with its rank among every entry: (path, label, rank). A kind's
# pages have an entry of their own (`KindPlugin.navigation`), ranked among these; the navigation shows
# them all by rank.
NAVIGATION = (
    ("/console/tools", "Tool catalog", 20),
    ("/console/playground", "Playground", 50),
    ("/console/plans", "Plans", 60),
    ("/console/agents", "Agents", 70),
    ("/console/profiles", "Usage profiles", 80),
    ("/console/servers", "MCP servers", 90),
    ("/console/tokens", "Tokens", 100),
    ("/console/secrets", "Secrets", 110),
    ("/console/audit", "Audit", 120),
)
# The operator's (docs/tenants.md): it manages the organizations and nothing inside them.
OPERATOR_NAVIGATION = (
    ("/console/operator/tenants", "Organizations"),
)


class Pages:
    def __init__(self, templates: Path | tuple[Path, ...] = TEMPLATES, static: Path = STATIC,
                 navigation: Iterable[Nav] = ()) -> None:
        """`templates`: the console's folder of templates, or it and the kinds' folders, searched in order;
        `navigation`: the kinds' entries, shown among the console's own by rank."""
        self.env = Environment(loader=FileSystemLoader(templates), autoescape=True, undefined=StrictUndefined,
                               trim_blocks=True, lstrip_blocks=True)
        self.static = static
        self._versions: dict[str, str] = {}
        # The files there are (relative names, as URLs spell them): only these are ever hashed.
        self.static_names = frozenset(p.relative_to(static).as_posix() for p in static.rglob("*") if p.is_file()) \
            if static.is_dir() else frozenset()
        entries = sorted([*NAVIGATION, *((entry.path, entry.label, entry.rank) for entry in navigation)], key=lambda e: e[2])
        self.env.globals.update(asset=self.asset, navigation=tuple((path, label) for path, label, _ in entries),
                                operator_navigation=OPERATOR_NAVIGATION,
                                tojson=_tojson)
        self.env.filters["tojson"] = _tojson
        # Dates (console.display.when): `{{ moment|when }}`, or `{{ moment|when(absolute_text=True) }}`.
        self.env.filters["when"] = when
        self.env.filters.update(plain=language.plain, rules_in=language.rules_in, kind_words=language.kind_words)  # rule codes as words (console.language)

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
