"""The console's shell in a browser (issue 31): the grouped sidebar and the current page, its
"Menu" disclosure at 390 px, breadcrumbs, the theme switch, toasts after an action, and screenshots
of the main pages in both themes at 1440 and 390 px."""

from __future__ import annotations

from tests.browser.conftest import assert_accessible, shots, sign_in

MAIN_PAGES = (("/console/modules", "modules"), ("/console/tools", "tools"), ("/console/servers", "servers"),
              ("/console/tokens", "tokens"), ("/console/audit", "audit"), ("/console/secrets", "secrets"))


def test_the_main_pages_in_both_themes(page) -> None:
    sign_in(page)
    for path, name in MAIN_PAGES:
        page.goto(path)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            assert_accessible(page, f"{name} ({scheme})")
        shots(page, f"shell-{name}")
