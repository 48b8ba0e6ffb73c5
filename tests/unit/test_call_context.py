"""A call's typed context (issue 29, 4): who calls, in which tenant, by which way in, under which
request, within which plan run; what the tool's code sees of it is the same shape as ever, and
never says the way in, the request or a token (V2)."""

from __future__ import annotations

import pytest

from application.context import CONSOLE, MCP, REST, CallContext, for_code
from application.principals import Principal
from application.queries import call_context

ALICE = Principal(name="alice", role="caller", tenant="acme", usage_profile="support", token_id="t1")


def test_the_code_sees_who_calls_in_which_tenant_with_which_profile() -> None:
    assert call_context(ALICE, REST).for_code() == {
        "user": {"id": "alice", "roles": ["caller"], "locale": "en"},
        "tenant": "acme",
        "provider": None,
        "usageProfile": "support",
        "conversation": None,
        "request": None,
        "planRun": None,
    }


def test_the_way_in_and_the_request_are_the_services_not_the_codes() -> None:
    by_mcp = call_context(ALICE, MCP, trace="42")
    assert (by_mcp.way_in, by_mcp.trace, by_mcp.tenant) == (MCP, "42", "acme")
    assert by_mcp.for_code() == call_context(ALICE, CONSOLE).for_code()
    assert "t1" not in repr(by_mcp.for_code())


def test_a_plan_node_is_named_in_its_own_context_and_the_callers_is_unchanged() -> None:
    caller = call_context(ALICE, REST)
    node = caller.in_plan("nightly", 2, "countLines")
    assert node.for_code()["planRun"] == {"plan": "nightly", "node": 2, "toolName": "countLines"}
    assert caller.for_code()["planRun"] is None
    assert node.in_plan("inner", 1, "echo").for_code()["planRun"] == {"plan": "inner", "node": 1, "toolName": "echo"}


def test_a_way_in_the_service_does_not_have_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="not 'email'"):
        CallContext(ALICE, "email")


def test_a_run_no_caller_asked_for_sees_an_empty_context() -> None:
    assert for_code(None) == {}
