"""The console's pages, one router per screen. The pages every kind shares are listed here; a kind
of tool's own pages come with it (`api.kinds.KindPlugin.console`, registered in
`entrypoints/kinds.py`): the code modules' list, editor and lifecycle. The operator's pages (the
organizations) are the only ones its token opens."""

from console.routes import audit, auth, callers, calls, catalog, operator, palette, playground, secrets, servers, tokens
from console.routes import users
from console.routes import sso
from console.routes import consent
from console.routes import help as rules_help

ROUTERS = (auth.router, catalog.router, callers.router, servers.router, tokens.router, secrets.router, audit.router, calls.router, playground.router,
           operator.router, palette.router, consent.router, users.router, rules_help.router, sso.router)
