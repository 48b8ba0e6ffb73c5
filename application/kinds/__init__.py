"""Kinds of tool as plug-ins (docs/kinds/index.md): the interface in `base.py`, one module per kind. The one
registry that lists the kinds of a service is `entrypoints/kinds.py`."""
