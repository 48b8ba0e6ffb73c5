"""A kind of tool as the service mounts it: its application half (`application/kinds/`) with its
REST routes and its console routes, which the application layer may not hold (FastAPI is the API's).

The web app includes every kind's routers (`entrypoints/web.py`); the registry of kinds is
`entrypoints/kinds.py`. Console routes are the kind's pages in the admin console (docs/console.md), which
`console.web.mount` includes after the pages every kind shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fastapi import APIRouter

from application.kinds.base import ToolKind


@dataclass(frozen=True)
class KindPlugin:
    kind: type[ToolKind]
    routers: tuple[APIRouter, ...] = ()
    console: tuple[APIRouter, ...] = ()
    # The console page of one of this kind's tools (`{}` is its name); None when it has none.
    page: str | None = None
    # The folder of the kind's console templates (named `<kind>/…` inside it), searched after the console's own.
    templates: Path | None = None

    @property
    def call_type(self) -> str:
        return self.kind.call_type
