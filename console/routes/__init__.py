"""The console's pages, one router per screen. The pages every kind shares are listed here; a kind
of tool's own pages come with it (`api.kinds.KindPlugin.console`, registered in
`entrypoints/kinds.py`): the code modules' list, editor and lifecycle, the plans' pages."""

from console.routes import auth

ROUTERS = (auth.router,)
