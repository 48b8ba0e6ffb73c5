"""Every named SSRF case (tests/ssrf_cases.py) through an API URL tool's whole call path (issue 16):
the tool is saved with the case's URL, called, and the call ends in an `egress` error result
before any connection is attempted — or the URL is refused when the tool is saved. Redirect cases
are answered by a local API that `TOOLSMITH_EGRESS_ALLOW` names: the only connection made is to it.

The egress module's own tests (test_api_egress.py) show the same cases under `http.fetch`'s policy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from toolkinds.api_tools.kind import ApiToolKind
from application.store import Store
from domain.errors import InvalidDefinition
from entrypoints.compose import ApplicationServices, build_application
from infrastructure.egress.outbound import ApiOutbound
from infrastructure.egress.policy import ApiPolicy, EgressAllow
from infrastructure.settings import Settings
from tests.integration.test_api_egress import Connections, resolver
from tests.ssrf_cases import CASES, SsrfCase
from tests.upstream import Upstream, running

TENANT = "default"
DIRECT = [case for case in CASES if not case.redirect]
REDIRECTS = [case for case in CASES if case.redirect]


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    yield from running()


def application(tmp_path: Path, outbound: ApiOutbound) -> ApplicationServices:
    env = Settings(data_dir=tmp_path).event_store_env()
    return build_application(Store(env), sandbox=lambda: None, outbound=outbound)  # type: ignore[arg-type,return-value]


def outcome(app: ApplicationServices, url: str, **config: Any) -> dict[str, Any] | str:
    """The call's error, or "refused at save" when the URL cannot be saved as a tool."""
    kind = app.toolbox.kind(ApiToolKind)
    try:
        kind.save(TENANT, "probe", {"description": "probe", "urlTemplate": url, **config}, by="t", create=True)
    except InvalidDefinition as refused:
        assert [v.field for v in refused.violations] == ["urlTemplate"], refused
        return "refused at save"
    result, _ = kind.test(TENANT, "probe", {}, {})
    assert result.error is not None, f"{url} answered {result.output!r}"
    return result.error.as_dict()


@pytest.mark.parametrize("case", DIRECT, ids=str)
def test_each_ssrf_case_is_refused_before_any_connection_by_an_api_url_tool(case: SsrfCase, tmp_path: Path) -> None:
    connections = Connections(real=False)
    dns = resolver(case.answers)
    app = application(tmp_path, ApiOutbound(ApiPolicy(EgressAllow.parse("")), resolve=dns, network_backend=connections))
    try:
        found = outcome(app, case.url)
    finally:
        app.store.close()
    assert connections.attempts == [], f"{case.what}: a connection was attempted"
    if found != "refused at save":
        assert found["type"] == "egress", f"{case.what}: {found}"


@pytest.mark.parametrize("case", REDIRECTS, ids=str)
def test_each_redirect_case_is_refused_before_connecting_to_its_target(case: SsrfCase, tmp_path: Path, upstream: Upstream) -> None:
    connections = Connections(real=True)
    policy = ApiPolicy(EgressAllow.parse(upstream.allow))
    app = application(tmp_path, ApiOutbound(policy, resolve=resolver(case.answers), network_backend=connections))
    try:
        found = outcome(app, f"{upstream.url}/redirect?to={quote(case.url, safe='')}", maxRedirects=3)
    finally:
        app.store.close()
    assert found != "refused at save"
    assert found["type"] == "egress", f"{case.what}: {found}"
    assert connections.attempts == [("127.0.0.1", upstream.port)], f"{case.what}: connected to {connections.attempts}"
    assert [s.path.split("?")[0] for s in upstream.seen] == ["/redirect"]
