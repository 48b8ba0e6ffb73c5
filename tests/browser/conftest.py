"""The console in Debian's Chromium, driven by Playwright against a real `toolsmith serve`.

Run on their own (`make test` does: Playwright's sync API and the other suites' event loops don't
mix in one process): `TOOLSMITH_BROWSER_TESTS=1 .venv/bin/python -m pytest tests/browser`.

Every page a test opens is watched: a request to any host other than the server, a console error,
an uncaught exception or a Content-Security-Policy violation fails the test. A screenshot of each
failure, and of each main page a test names with `shot()` (or `shots()`: both themes at 1440 and
390 px), is saved under tests/browser/artifacts/.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from testing.launcher import Server
from tests.upstream import Upstream, running

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).parent / "artifacts"
AXE = ROOT / "console" / "node_modules" / "axe-core" / "axe.min.js"
ADMIN_TOKEN = "tsa_browser-admin-token-0123456789abcdefghij"
OPERATOR_TOKEN = "tso_browser-operator-token-0123456789abcdef"
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        message = "Debian's chromium is not installed: `apt-get install -y chromium` (make test does it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path


def pytest_report_header(config: pytest.Config) -> list[str]:
    from importlib.metadata import version

    path = shutil.which("chromium")
    browser = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout.strip() if path else "missing"
    return [f"playwright {version('playwright')}; browser: {browser} ({path})"]


@pytest.fixture(scope="session")
def upstream_api() -> Iterator[Upstream]:
    """A local HTTP API for the session (tests/upstream.py), which the server's API URL tools may reach."""
    yield from running()


@pytest.fixture(scope="session")
def console_server(tmp_path_factory: pytest.TempPathFactory, upstream_api: Upstream) -> Iterator[Server]:
    """One server for the session, with embedded defaults and known admin and operator tokens; its
    egress allows the local API (`upstream_api`) and nothing else that is not public."""
    base = tmp_path_factory.mktemp("console")
    env = {"TOOLSMITH_ADMIN_TOKEN": ADMIN_TOKEN, "TOOLSMITH_OPERATOR_TOKEN": OPERATOR_TOKEN,
           "TOOLSMITH_EGRESS_ALLOW": upstream_api.allow}
    server = Server(data_dir=base / "data", env=env, inherit_settings=False).start()
    server.token = ADMIN_TOKEN
    yield server
    if server.process and server.process.poll() is None:
        server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--disable-gpu", "--disable-dev-shm-usage"])
        yield launched
        launched.close()


@dataclass
class Watch:
    """What a page did that a test must not allow."""

    origin: str
    problems: list[str] = field(default_factory=list)
    allowed_console: list[re.Pattern[str]] = field(default_factory=list)

    def request(self, request: object) -> None:
        url = request.url  # type: ignore[attr-defined]
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about"):
            return
        if f"{parts.scheme}://{parts.netloc}" != self.origin:
            self.problems.append(f"request to another host: {url}")

    def console(self, message: object) -> None:
        if message.type != "error":  # type: ignore[attr-defined]
            return
        text = message.text  # type: ignore[attr-defined]
        if any(p.search(text) for p in self.allowed_console):
            return
        self.problems.append(f"console error: {text}")

    def page_error(self, error: object) -> None:
        self.problems.append(f"uncaught exception: {error}")


# Reported by the page itself, so that a violation shows even where Chromium logs nothing.
CSP_LISTENER = """
document.addEventListener('securitypolicyviolation', (e) => {
  console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber);
});
"""


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # noqa: ANN201
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:120]


@pytest.fixture
def context(browser: object, console_server: Server, request: pytest.FixtureRequest) -> Iterator[object]:
    """A fresh browser context (no cookies) at 1280×800 on the server."""
    made = browser.new_context(base_url=console_server.url, viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    made.add_init_script(CSP_LISTENER)
    made.set_default_timeout(15_000)
    yield made
    made.close()


@pytest.fixture
def watch(console_server: Server) -> Watch:
    return Watch(origin=console_server.url)


@pytest.fixture
def page(context: object, watch: Watch, request: pytest.FixtureRequest) -> Iterator[object]:
    """A watched page; on failure a screenshot is saved, and after the test nothing it watched may
    have happened (another host, a console error, a CSP violation)."""
    opened = context.new_page()  # type: ignore[attr-defined]
    opened.on("request", watch.request)
    opened.on("console", watch.console)
    opened.on("pageerror", watch.page_error)
    yield opened
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        target = ARTIFACTS / "failures" / f"{slug(request.node.nodeid)}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            opened.screenshot(path=str(target), full_page=True)
        except Exception:  # noqa: BLE001 - a screenshot is a courtesy; the failure is reported anyway
            pass
    assert not watch.problems, "the page did what the console must never do:\n" + "\n".join(watch.problems)


def shot(page: object, name: str) -> Path:
    """Saves a screenshot of a main page for a person to look at."""
    target = ARTIFACTS / "pages" / f"{slug(name)}.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target), full_page=True)  # type: ignore[attr-defined]
    return target


SHOT_WIDTHS = (1440, 390)
SHOT_SCHEMES = ("light", "dark")


def assert_no_horizontal_scroll(page: object, where: str = "the page") -> None:
    """The page does not scroll sideways: a wide table or code block scrolls inside its own box."""
    widths = page.evaluate(  # type: ignore[attr-defined]
        "() => [document.scrollingElement.scrollWidth, window.innerWidth,"
        " [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1"
        " && getComputedStyle(e).position !== 'fixed').slice(0, 5).map(e => e.tagName.toLowerCase()"
        " + (e.id ? '#' + e.id : '') + (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\\s+/).join('.') : ''))]"
    )
    scroll, inner, wide = widths
    assert scroll <= inner, f"{where} scrolls sideways at {inner} px wide (its content is {scroll} px): {wide}"


def shots(page: object, name: str) -> list[Path]:
    """Saves full-page screenshots of the page as it stands in the light and dark theme at 1440 and
    390 px wide (`<name>-light-1440.png`, `-dark-1440`, `-light-390`, `-dark-390`), checking at 390 px
    that nothing scrolls sideways; the page's viewport and colour scheme are restored after."""
    viewport = page.viewport_size or {"width": 1280, "height": 800}  # type: ignore[attr-defined]
    scheme = page.evaluate("() => matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'")  # type: ignore[attr-defined]
    saved = []
    try:
        for width in SHOT_WIDTHS:
            page.set_viewport_size({"width": width, "height": viewport["height"]})  # type: ignore[attr-defined]
            for colours in SHOT_SCHEMES:
                page.emulate_media(color_scheme=colours)  # type: ignore[attr-defined]
                page.wait_for_timeout(50)  # type: ignore[attr-defined]  # a layout and a paint after the switch
                if width == 390 and colours == SHOT_SCHEMES[0]:
                    assert_no_horizontal_scroll(page, name)
                saved.append(shot(page, f"{name}-{colours}-{width}"))
    finally:
        page.set_viewport_size(viewport)  # type: ignore[attr-defined]
        page.emulate_media(color_scheme=scheme)  # type: ignore[attr-defined]
    return saved


def sign_in(page: object, token: str = ADMIN_TOKEN, *, then: str = "/console/modules") -> None:
    page.goto(then)  # type: ignore[attr-defined]
    page.get_by_label("Token", exact=True).fill(token)  # type: ignore[attr-defined]
    page.get_by_role("button", name="Sign in").click()  # type: ignore[attr-defined]
    page.wait_for_url(f"**{then}*")  # type: ignore[attr-defined]


def axe_violations(page: object, *, within: str | None = None) -> list[str]:
    """axe-core's WCAG 2.x A/AA violations on the page as it stands (or within one element)."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):  # type: ignore[attr-defined]
        page.evaluate(AXE.read_text())  # type: ignore[attr-defined]  # evaluated, not inserted: the CSP holds
    found = page.evaluate(  # type: ignore[attr-defined]
        "async ([within, tags]) => (await axe.run(within ? document.querySelector(within) : document,"
        " {runOnly: {type: 'tag', values: tags}})).violations"
        ".map(v => v.id + ' (' + v.impact + '): ' + v.help + ' — ' + v.nodes.map(n => n.target.join(' ')).slice(0, 5).join(', '))",
        [within, WCAG_TAGS],
    )
    return list(found)


def assert_accessible(page: object, where: str, *, within: str | None = None) -> None:
    violations = axe_violations(page, within=within)
    assert not violations, f"axe-core found WCAG violations on {where}:\n" + "\n".join(violations)
