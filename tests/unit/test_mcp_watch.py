"""The MCP change watch (api/mcp_watch.py): who is told that its tool list changed, and who is not."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from api.mcp_watch import ToolWatch, take_offer
from domain.catalog import EVERYTHING, NOTHING, Permissions, ToolEntry
from domain.errors import UnknownRecord
from infrastructure.auth import Principal

ADMIN = Principal(name="admin", role="admin", tenant="t")
CALLER = Principal(name="c", role="caller", tenant="t", usage_profile="p")


@dataclass
class FakeToolbox:
    """Tools per server id (None: the default server); `generation` moves with every change."""

    tools: dict[str | None, list[ToolEntry]] = field(default_factory=dict)
    position: int = 1

    def generation(self) -> int:
        return self.position

    def permissions(self, tenant: str, role: str, usage_profile: str | None) -> Permissions:
        return EVERYTHING if role == "admin" else NOTHING

    def offered(self, tenant: str, permissions: Permissions, server_id: str | None = None) -> list[ToolEntry]:
        if server_id not in self.tools:
            raise UnknownRecord("MCP server", server_id or "")
        return [t for t in self.tools[server_id] if permissions.allow(t)]

    def change(self, server_id: str | None, tools: list[ToolEntry]) -> None:
        self.tools[server_id] = tools
        self.position += 1


@dataclass
class FakeServices:
    toolbox: FakeToolbox


def tool(name: str, **changes: Any) -> ToolEntry:
    return replace(ToolEntry(name=name, description=name, call_type="CODE", expose_in_chat=True), **changes)


def scenario(body: Any) -> None:
    anyio.run(body)


def test_only_the_sessions_whose_list_changed_are_told() -> None:
    async def body() -> None:
        toolbox = FakeToolbox({None: [tool("a")], "s": [tool("a")]})
        services = FakeServices(toolbox)
        watch = ToolWatch(services)  # type: ignore[arg-type]
        told: list[str] = []

        def teller(label: str) -> Any:
            async def tell() -> None:
                told.append(label)
            return tell

        watch.watch("admin-default", take_offer(services, ADMIN, None), teller("admin-default"))  # type: ignore[arg-type]
        watch.watch("admin-s", take_offer(services, ADMIN, "s"), teller("admin-s"))  # type: ignore[arg-type]
        watch.watch("caller-default", take_offer(services, CALLER, None), teller("caller-default"))  # type: ignore[arg-type]
        # nothing changed
        await watch.check()
        assert told == []
        # a new schema on the default server: its admin session hears it; the caller, offered nothing, does not
        toolbox.change(None, [tool("a", input_schema={"type": "object", "properties": {"x": {"type": "string"}}})])
        await watch.check()
        assert told == ["admin-default"]
        # a move of the store that changes nothing offered tells no one
        toolbox.position += 1
        await watch.check()
        assert told == ["admin-default"]
        # the server is deleted: its sessions hear that their list emptied
        del toolbox.tools["s"]
        toolbox.position += 1
        await watch.check()
        assert told == ["admin-default", "admin-s"]
        # a forgotten session is told nothing more
        watch.forget("admin-default")
        toolbox.change(None, [])
        await watch.check()
        assert told == ["admin-default", "admin-s"] and len(watch) == 2

    scenario(body)


def test_an_offer_taken_before_a_change_is_checked_again() -> None:
    async def body() -> None:
        toolbox = FakeToolbox({None: [tool("a")]})
        services = FakeServices(toolbox)
        watch = ToolWatch(services)  # type: ignore[arg-type]
        told: list[int] = []
        stale = take_offer(services, ADMIN, None)  # type: ignore[arg-type]
        toolbox.change(None, [tool("a"), tool("b")])
        await watch.check()  # the loop saw the new generation before the session was watched

        async def tell() -> None:
            told.append(1)

        watch.watch("late", stale, tell)
        await watch.check()
        assert told == [1]

    scenario(body)
