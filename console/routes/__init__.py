"""The console's pages, one router per screen (the kinds of tool add their own through
`api.kinds.KindPlugin.console`)."""

<<<<<<< HEAD
from console.routes import auth, editor, modules

ROUTERS = (auth.router, modules.router, editor.router)
=======
from console.routes import auth, lifecycle, modules, standin_page

ROUTERS = (auth.router, modules.router, lifecycle.router, standin_page.router)
>>>>>>> c-lifecycle
