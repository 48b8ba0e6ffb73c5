"""The console's pages, one router per screen (the kinds of tool add their own through
`api.kinds.KindPlugin.console`)."""

from console.routes import auth, editor, modules

ROUTERS = (auth.router, modules.router, editor.router)
