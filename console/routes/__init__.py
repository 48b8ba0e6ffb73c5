"""The console's pages, one router per screen (the kinds of tool add their own through
`api.kinds.KindPlugin.console`)."""

from console.routes import auth, lifecycle, modules, standin_page

ROUTERS = (auth.router, modules.router, lifecycle.router, standin_page.router)
