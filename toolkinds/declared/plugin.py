"""The declared kind as the service mounts it: its tool kind, REST routes and console pages."""

from __future__ import annotations

from api.kinds import KindPlugin
from toolkinds.declared.kind import ExternalMcpKind, NativeKind

EXTERNAL_MCP = KindPlugin(ExternalMcpKind)
NATIVE = KindPlugin(NativeKind)
