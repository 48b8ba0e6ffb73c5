"""Tools declared by the deployment: external MCP servers' tools and native tools.

The kind's package: its model, its `ToolKind` (`kind.py`), its REST routes, its console pages and
templates; `plugin.py` is what the registry (`entrypoints/kinds.py`) lists."""
