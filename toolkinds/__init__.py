"""The kinds of tool, one package each (`toolkinds/<kind>/`): its model, its `ToolKind`, its REST routes,
its console pages and templates. The one registry that lists them is `entrypoints/kinds.py`."""
