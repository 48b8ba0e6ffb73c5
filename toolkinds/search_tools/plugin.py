"""The search tools kind as the service mounts it: its tool kind, REST routes and console pages, and
what the core asks of it (its quotas, snapshots, errors, adapters, rebuild and navigation entry)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

from api.kinds import KindPlugin, Nav, New, Rebuild
from api.paths import ADMIN_API
from api.schemas import IDENTIFIER
from application.kinds.base import Counted, ToolKind
from domain.errors import DocumentsUnavailable, UploadTooLarge
from domain.tenants import DOCUMENTS, STORED_BYTES, TOOLS
from toolkinds.search_tools import pages, routes
from toolkinds.search_tools.kind import SearchToolKind
from toolkinds.search_tools.model import MAX_NAME, SearchTool
from toolkinds.search_tools.resources import build_files

TEMPLATES = Path(__file__).parent / "templates"


def _held(tool: SearchTool) -> Mapping[str, int]:
    """What a live File Search tool holds of a tenant's quotas besides itself: its documents and their bytes."""
    return {DOCUMENTS: len(tool.documents), STORED_BYTES: sum(int(document["size"]) for document in tool.documents.values())}


def _rebuild(kind: ToolKind, progress: Callable[[int, int], None]) -> str:
    assert isinstance(kind, SearchToolKind)
    return f"the chunk index holds {kind.rebuild(progress=progress)} chunks again, from the events and the blobs"


PLUGIN = KindPlugin(SearchToolKind, routers=(routes.router,), console=(pages.router,), page="/console/search-tools/{}",
                    templates=TEMPLATES, navigation=Nav("/console/search-tools", "File Search tools", 40),
                    words="File Search tool",
                    new=New("/console/search-tools/new",
                            "Let the AI search documents you upload to this server, and answer from the passages it finds."),
                    quotas=(Counted(SearchTool, TOOLS, contents=_held, holds=(DOCUMENTS, STORED_BYTES)),),
                    # A File Search tool's documents are events of the tool: thousands, for a large collection.
                    snapshotted=(SearchTool,),
                    statuses={UploadTooLarge: 413, DocumentsUnavailable: 503},
                    resources=build_files,
                    rebuild=Rebuild("the chunk index", "events", _rebuild),
                    path_rules=((re.compile(re.escape(ADMIN_API) + r"/search-tools/\{id\}"), "id", {**IDENTIFIER, "maxLength": MAX_NAME}),),
                    # Document uploads (docs/kinds/file-search-tools.md), over REST and from the console.
                    uploads=(re.escape(ADMIN_API) + r"/search-tools/[^/]+/documents", r"/console/search-tools/[^/]+/documents"))
