"""File Search tools (callType FILE_SEARCH): documents uploaded to the server, searched by the model.

The kind's package: its model, its `ToolKind` (`kind.py`), its REST routes, its console pages and
templates; `plugin.py` is what the registry (`entrypoints/kinds.py`) lists."""
