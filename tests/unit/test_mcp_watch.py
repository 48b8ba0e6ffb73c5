"""The MCP change watch (api/mcp_watch.py): who is told that its tool list changed, and who is not."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import anyio
import anyio.to_thread
import pytest

from api.mcp_watch import ToolWatch, take_offer
from application.toolbox import Change
from domain.catalog import EVERYTHING, NOTHING, Permissions, ToolEntry
from domain.errors import UnknownRecord
from application.principals import Principal

ADMIN = Principal(name="admin", role="admin", tenant="t")
CALLER = Principal(name="c", role="caller", tenant="t", usage_profile="p")


@dataclass
class FakeToolbox:
    """One tenant's winners by name and its servers' attached tools; every change moves the
    position and is kept as the real catalog keeps it (`Change`)."""

    tools: dict[str, ToolEntry] = field(default_factory=dict)
    servers: dict[str, frozenset[str]] = field(default_factory=dict)
    at: int = 1
    changes: list[Change] = field(default_factory=list)
    floor: int = 0

    def generation(self) -> int:
        return self.at

    def position(self, tenant: str) -> int:
        return self.at

    def permissions(self, tenant: str, role: str, usage_profile: str | None) -> Permissions:
        return EVERYTHING if role == "admin" else NOTHING

    def attached(self, tenant: str, server_id: str | None) -> frozenset[str] | None:
        if server_id is None:
            return None
        if server_id not in self.servers:
            raise UnknownRecord("MCP server", server_id)
        return self.servers[server_id]

    def offers(self, entry: ToolEntry, permissions: Permissions, attached: frozenset[str] | None) -> bool:
        return entry.offered_in_chat and (attached is None or entry.name in attached) and permissions.allow(entry)

    def changes_since(self, tenant: str, position: int) -> tuple[list[Change] | None, int]:
        if position < self.floor:
            return None, self.at
        return [c for c in self.changes if c.position > position], self.at

    def put(self, entry: ToolEntry | None, name: str = "") -> None:
        name = entry.name if entry is not None else name
        self.at += 1
        self.changes.append(Change(self.at, name, self.tools.get(name), entry))
        if entry is None:
            self.tools.pop(name, None)
        else:
            self.tools[name] = entry

    def server(self, server_id: str, tools: frozenset[str] | None) -> None:
        if tools is None:
            del self.servers[server_id]
        else:
            self.servers[server_id] = tools
        self.at += 1
        self.changes.append(Change(self.at, None))


class _NoRecords:
    """A caller registry without server records (whose tool search would be read: none is on)."""

    def get(self, kind: str, record_id: str) -> None:
        return None


@dataclass
class FakeStore:
    # True: the store keeps its position from its own saves (SQLite, one process); False: others
    # write it too (PostgreSQL), and the position is read in a thread.
    owns_its_writes: bool = True

    def registry(self, tenant: str) -> _NoRecords:
        return _NoRecords()


@dataclass
class FakeSettings:
    mcp_tool_search: str = "off"


@dataclass
class FakeServices:
    toolbox: FakeToolbox
    store: FakeStore = field(default_factory=FakeStore)
    settings: FakeSettings = field(default_factory=FakeSettings)


def tool(name: str, **changes: Any) -> ToolEntry:
    return replace(ToolEntry(name=name, description=name, call_type="CODE", expose_in_chat=True), **changes)


def scenario(body: Any) -> None:
    anyio.run(body)


def watched(watch: ToolWatch, services: FakeServices, told: list[str], *who: tuple[str, Principal, str | None]) -> None:
    for label, principal, server_id in who:
        async def tell(label: str = label) -> None:
            told.append(label)
        watch.watch(label, take_offer(services, principal, server_id), tell)  # type: ignore[arg-type]


def test_only_the_sessions_that_can_see_a_changed_tool_are_told() -> None:
    async def body() -> None:
        toolbox = FakeToolbox({"a": tool("a"), "b": tool("b")}, {"s": frozenset({"a"})})
        services = FakeServices(toolbox)
        watch = ToolWatch(services)  # type: ignore[arg-type]
        told: list[str] = []
        watched(watch, services, told, ("admin-default", ADMIN, None), ("admin-s", ADMIN, "s"), ("caller-default", CALLER, None))
        # nothing changed
        await watch.check()
        assert told == []
        # a new schema of `b`, which server `s` does not offer: the default server's admin hears it
        toolbox.put(tool("b", input_schema={"type": "object", "properties": {"x": {"type": "string"}}}))
        await watch.check()
        assert told == ["admin-default"]
        # a move of the store that changes nothing offered tells no one
        toolbox.at += 1
        await watch.check()
        assert told == ["admin-default"]
        # `a` leaves the chat: both admin sessions see it go; the caller, offered nothing, does not
        toolbox.put(tool("a", expose_in_chat=False))
        await watch.check()
        assert sorted(told) == ["admin-default", "admin-default", "admin-s"]
        # the server is deleted: its sessions hear that their list emptied, once
        told.clear()
        toolbox.put(tool("a"))
        toolbox.server("s", None)
        await watch.check()
        assert sorted(told) == ["admin-default", "admin-s"]
        told.clear()
        toolbox.put(tool("a", description="new words"))
        await watch.check()
        assert told == ["admin-default"]
        # a forgotten session is told nothing more
        watch.forget("admin-default")
        toolbox.put(None, "b")
        await watch.check()
        assert told == ["admin-default"] and len(watch) == 2

    scenario(body)


def test_a_tool_attached_to_a_server_tells_that_servers_sessions_only() -> None:
    async def body() -> None:
        toolbox = FakeToolbox({"a": tool("a")}, {"s": frozenset(), "t": frozenset()})
        services = FakeServices(toolbox)
        watch = ToolWatch(services)  # type: ignore[arg-type]
        told: list[str] = []
        watched(watch, services, told, ("on-s", ADMIN, "s"), ("on-t", ADMIN, "t"))
        toolbox.server("s", frozenset({"a"}))
        await watch.check()
        assert told == ["on-s"]

    scenario(body)


def test_an_offer_taken_before_a_change_is_checked_again() -> None:
    async def body() -> None:
        toolbox = FakeToolbox({"a": tool("a")})
        services = FakeServices(toolbox)
        watch = ToolWatch(services)  # type: ignore[arg-type]
        told: list[int] = []
        stale = take_offer(services, ADMIN, None)  # type: ignore[arg-type]
        toolbox.put(tool("b"))
        await watch.check()  # the loop saw the new generation before the session was watched

        async def tell() -> None:
            told.append(1)

        watch.watch("late", stale, tell)
        await watch.check()
        assert told == [1]

    scenario(body)


def test_a_watcher_older_than_the_changes_kept_is_told() -> None:
    async def body() -> None:
        toolbox = FakeToolbox({"a": tool("a")})
        services = FakeServices(toolbox)
        watch = ToolWatch(services)  # type: ignore[arg-type]
        told: list[str] = []
        watched(watch, services, told, ("old", ADMIN, None))
        toolbox.at += 5
        toolbox.floor = toolbox.at  # the catalog was built afresh: what changed is not known name by name
        await watch.check()
        assert told == ["old"]

    scenario(body)


@pytest.mark.parametrize("owns_its_writes", [True, False], ids=["store-owns-its-writes", "shared-store"])
def test_a_round_with_nothing_new_hops_to_no_thread_when_the_store_owns_its_writes(
        owns_its_writes: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    hops: list[Any] = []
    hop = anyio.to_thread.run_sync

    async def counted(function: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(function)
        return await hop(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)

    async def body() -> None:
        toolbox = FakeToolbox({"a": tool("a")})
        services = FakeServices(toolbox, FakeStore(owns_its_writes))
        watch = ToolWatch(services)  # type: ignore[arg-type]
        told: list[str] = []
        watched(watch, services, told, ("admin", ADMIN, None))
        for _ in range(3):
            await watch.check()
        assert told == []
        # The position is read on the loop when the store keeps it; in a thread per round otherwise.
        assert len(hops) == (0 if owns_its_writes else 3)
        # A change is still heard at the next round, either way.
        toolbox.put(tool("a", description="new words"))
        await watch.check()
        assert told == ["admin"]

    scenario(body)


@pytest.mark.parametrize("owns_its_writes", [True, False], ids=["store-owns-its-writes", "shared-store"])
def test_a_resource_watch_round_with_nothing_new_hops_to_no_thread_when_the_store_owns_its_writes(
        owns_its_writes: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from api.mcp_resources import ResourceWatch

    hops: list[Any] = []
    hop = anyio.to_thread.run_sync

    async def counted(function: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(function)
        return await hop(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)

    async def body() -> None:
        toolbox = FakeToolbox({"a": tool("a")})
        watch = ResourceWatch(FakeServices(toolbox, FakeStore(owns_its_writes)))  # type: ignore[arg-type]
        watch._generation = toolbox.generation()  # as after a first round
        for _ in range(3):
            await watch.check()
        assert len(hops) == (0 if owns_its_writes else 3)

    scenario(body)
