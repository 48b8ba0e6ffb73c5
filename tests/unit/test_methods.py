"""Which methods a path answers (api/methods.py): the same answer from the kept one as from trying
every route, and no more paths kept than `PATHS_KEPT` (random paths cannot grow the memory)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from api.methods import PATHS_KEPT, _MethodsByPath, allowed_methods, methods_of


def app() -> FastAPI:
    made = FastAPI()
    router = APIRouter(prefix="/api/v1/admin")

    @router.get("/code-modules")
    def listed() -> None: ...

    @router.post("/code-modules")
    def created() -> None: ...

    @router.delete("/code-modules/{id}")
    def deleted(id: str) -> None: ...

    @router.get("/code-modules/{id}")
    def read(id: str) -> None: ...

    made.include_router(router)

    @made.post("/api/v1/tools/{name}/call")
    def called(name: str) -> None: ...

    return made


def test_the_kept_answers_are_the_routes_answers() -> None:
    application = app()
    for _ in range(2):  # asked, then kept
        assert allowed_methods(application, "/api/v1/admin/code-modules") == ["GET", "HEAD", "POST"]
        assert allowed_methods(application, "/api/v1/admin/code-modules/a") == ["GET", "HEAD", "DELETE"]
        assert methods_of(application, "/api/v1/tools/x/call") == frozenset({"POST"})
        assert methods_of(application, "/nothing/here") is None
    scanned = _MethodsByPath(application)
    for path in ("/api/v1/admin/code-modules", "/api/v1/admin/code-modules/b", "/api/v1/tools/y/call", "/x"):
        assert methods_of(application, path) == scanned._scan(path)


def test_no_more_paths_are_kept_than_paths_kept() -> None:
    application = app()
    for number in range(PATHS_KEPT + 1000):
        assert methods_of(application, f"/api/v1/tools/t{number}/call") == frozenset({"POST"})
    assert application.state.methods_by_path.allowed.cache_info().currsize == PATHS_KEPT
