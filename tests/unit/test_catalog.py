"""R15's resolution order and R14's permissions, without I/O."""

from __future__ import annotations

from toolkinds.code.kind import CODE
from toolkinds.declared.kind import LOCAL, MCP
from toolkinds.plans.kind import PLAN
from domain.catalog import EVERYTHING, NOTHING, Permissions, ToolEntry, resolve
from entrypoints.kinds import DEFAULT_KINDS

ORDER = tuple(plugin.call_type for plugin in DEFAULT_KINDS)


def entry(name: str, call_type: str, tags: tuple[str, ...] = (), **kw: object) -> ToolEntry:
    return ToolEntry(name=name, description="", call_type=call_type, tags=tags, **kw)  # type: ignore[arg-type]


def test_r15_mcp_then_native_then_plan_then_code() -> None:
    resolved = resolve([entry("x", CODE), entry("x", PLAN), entry("x", LOCAL), entry("x", MCP), entry("y", CODE), entry("z", PLAN), entry("z", CODE)], ORDER)
    assert [(e.name, e.call_type, e.shadowed_by) for e in resolved] == [
        ("x", MCP, None), ("x", LOCAL, MCP), ("x", PLAN, MCP), ("x", CODE, MCP),
        ("y", CODE, None),
        ("z", PLAN, None), ("z", CODE, PLAN),
    ]


def test_permissions_by_name_by_tag_and_none() -> None:
    tagged, named, other = entry("a", CODE, ("finance", "code")), entry("b", CODE, ("code",)), entry("c", LOCAL)
    by_tag = Permissions(tags=frozenset({"finance"}))
    assert [by_tag.allow(e) for e in (tagged, named, other)] == [True, False, False]
    by_name = Permissions(tools=frozenset({"b"}))
    assert [by_name.allow(e) for e in (tagged, named, other)] == [False, True, False]
    assert not any(NOTHING.allow(e) for e in (tagged, named, other)) and NOTHING.none
    assert all(EVERYTHING.allow(e) for e in (tagged, named, other)) and not EVERYTHING.none


def test_only_enabled_configured_chat_tools_that_win_are_offered_in_chat() -> None:
    assert entry("a", CODE, expose_in_chat=True).offered_in_chat
    assert not entry("a", CODE).offered_in_chat
    assert not entry("a", CODE, expose_in_chat=True, enabled=False).offered_in_chat
    assert not entry("a", CODE, expose_in_chat=True, configured=False).offered_in_chat
    assert not entry("a", CODE, expose_in_chat=True, shadowed_by=LOCAL).offered_in_chat
