"""The MCP SDK's private names `api/mcp_sdk.py` relies on are where it reads them, on the pinned SDK:
an upgrade that moves one fails here, naming it, instead of quietly sending every call the slow way
or leaving a suspended tenant's sessions open."""

from __future__ import annotations

import inspect

import pytest
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from api import mcp_sdk


def instance_of(cls: type) -> object:
    if cls is StreamableHTTPSessionManager:
        return StreamableHTTPSessionManager(app=Server("probe"))
    if cls is StreamableHTTPServerTransport:
        return StreamableHTTPServerTransport(mcp_session_id="probe", idle_timeout=30.0)
    raise AssertionError(f"no probe instance for {cls.__name__}")


@pytest.mark.parametrize(("cls", "name"), [(cls, name) for cls, names in mcp_sdk.RELIED_ON.items() for name in names],
                         ids=lambda value: getattr(value, "__name__", value))
def test_the_sdk_has_what_the_workaround_reads(cls: type, name: str) -> None:
    assert hasattr(instance_of(cls), name), f"{cls.__name__}.{name} moved: change api/mcp_sdk.py"


def test_the_manager_keeps_sessions_and_owners_by_id_and_ends_one_by_id_and_transport() -> None:
    manager = instance_of(StreamableHTTPSessionManager)
    assert manager._server_instances == {} and manager._session_owners == {}  # noqa: SLF001
    assert mcp_sdk.session_owners(manager) == {}
    assert mcp_sdk.transport_of(manager, "nobody") is None
    discard = StreamableHTTPSessionManager._discard_session  # noqa: SLF001
    assert inspect.iscoroutinefunction(discard)
    assert list(inspect.signature(discard).parameters) == ["self", "session_id", "transport"]


def test_a_transport_counts_its_requests_in_flight_from_none_and_has_its_idle_timeout() -> None:
    transport = instance_of(StreamableHTTPServerTransport)
    assert transport._requests_in_flight == 0 and transport._idle_timeout == 30.0  # noqa: SLF001
    assert mcp_sdk.keeps_idle_clock(transport)


def test_a_server_session_keeps_the_connection_it_was_made_with() -> None:
    source = inspect.getsource(ServerSession.__init__)
    assert f"self.{mcp_sdk.CONNECTION} = connection" in source, "ServerSession moved its connection: change api/mcp_sdk.py"
    assert "connection" in inspect.signature(ServerSession.__init__).parameters


def test_the_sdks_walk_finds_a_declared_header_and_none_in_a_plain_schema() -> None:
    from mcp.shared import inbound

    assert hasattr(inbound, "_annotated_positions"), "the SDK moved its x-mcp-header walk: change api/mcp_sdk.py"
    declared = {"type": "object", "properties": {"region": {"type": "string", inbound.X_MCP_HEADER_KEY: "Region"}}}
    plain = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert [token for _, token, _ in mcp_sdk.header_positions(declared)] == ["Region"]
    assert list(mcp_sdk.header_positions(plain)) == []


def test_a_tracer_provider_is_seen_set_once_opentelemetry_has_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """`api.mcp_direct.tracer_provider_set` reads OpenTelemetry's global (no tracer is asked here:
    one would keep the provider it found)."""
    from opentelemetry import trace

    from api.mcp_direct import tracer_provider_set

    assert hasattr(trace, "_TRACER_PROVIDER"), "opentelemetry.trace._TRACER_PROVIDER moved: change api/mcp_direct.py"
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    assert not tracer_provider_set() and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", trace.NoOpTracerProvider())
    assert tracer_provider_set() and not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
