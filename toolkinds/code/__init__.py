"""Code modules as tools (callType CODE): a published module with a tool section is a tool.

The kind's package: its model, its `ToolKind` (`kind.py`), its REST routes, its console pages and
templates; `plugin.py` is what the registry (`entrypoints/kinds.py`) lists."""
