"""console.pages: the sidebar's groups (Build, Connect, Govern, in that order, each by rank, a kind's
entry in the group it names) and the section a page is in (the longest entry path that holds it),
as the shell renders them."""

from __future__ import annotations

from api.kinds import Nav
from console.pages import GROUPS, NAVIGATION, Pages, grouped, section


def test_groups_come_in_order_with_their_entries_by_rank() -> None:
    groups = grouped([*NAVIGATION, ("/console/modules", "Code modules", 10, "Build"), ("/console/x", "X", 1, "Later")])
    assert [name for name, _ in groups] == [*GROUPS, "Later"]
    build = dict(groups)["Build"]
    assert [label for _, label in build][:2] == ["Tools", "Code modules"]
    assert grouped([("/console/a", "A", 1, "Govern")]) == (("Govern", (("/console/a", "A"),)),)


def test_the_section_of_a_page_is_the_longest_entry_holding_it() -> None:
    groups = grouped([*NAVIGATION, ("/console/modules", "Code modules", 10, "Build")])
    assert section("/console/modules/weather/history", groups) == ("/console/modules", "Code modules")
    assert section("/console/modules/changeset-history", groups) == ("/console/modules/changeset-history", "Changesets")
    assert section("/console/modulesx", groups) is None
    assert section("/console/servers", groups) == ("/console/servers", "MCP servers")


def test_a_kinds_entry_is_shown_in_its_group() -> None:
    pages = Pages(navigation=(Nav("/console/things", "Things", 15), Nav("/console/audit-ish", "Calls", 130, group="Govern")))
    groups = dict(pages.env.globals["navigation"])
    assert ("/console/things", "Things") in groups["Build"] and groups["Govern"][-1] == ("/console/audit-ish", "Calls")
