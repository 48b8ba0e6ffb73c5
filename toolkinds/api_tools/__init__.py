"""API URL tools (callType API_URL): a tool that calls an external HTTP API on the model's behalf.

The kind's package: its model, its `ToolKind` (`kind.py`), its REST routes, its console pages and
templates; `plugin.py` is what the registry (`entrypoints/kinds.py`) lists."""
