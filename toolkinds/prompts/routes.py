"""Prompts' REST routes: every published kind's (`api/published.py`), and a test render of its own."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.deps import Admin, ServicesDep
from api.paths import ADMIN_API
from api.problems import documented
from api.published import PublishedApi, published_routes
from application.context import REST
from application.queries import call_context
from toolkinds.prompts.kind import PromptKind
from toolkinds.prompts.schemas import PromptCreate, PromptUpdate, RenderRequest, public

router = published_routes(APIRouter(prefix=f"{ADMIN_API}/prompts", tags=["prompts"]),
                          PublishedApi(PromptKind, noun="prompt", one="prompt", create=PromptCreate, update=PromptUpdate,
                                       public=public))


@router.post("/{id}/test", responses=documented(400, 404))
async def test_prompt(id: str, body: RenderRequest, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Render the prompt (its draft, or its published version) with `arguments`, as `prompts/get` would; nothing is saved."""
    kind = services.toolbox.kind(PromptKind)
    return await kind.test(principal.tenant, id, body.arguments, call_context(principal, REST), services.toolbox, draft=body.draft)
