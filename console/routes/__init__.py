"""The console's pages, one router per screen (the kinds of tool add their own through
`api.kinds.KindPlugin.console`)."""

from console.routes import audit, auth, callers, catalog, modules, playground, tokens

ROUTERS = (auth.router, modules.router, catalog.router, callers.router, tokens.router, audit.router, playground.router)
