"""The edge's JSON depth scan and the MCP gate's Host/Origin patterns (issue 12)."""

from __future__ import annotations

import json
import time

import pytest

from api.edge import body_problem, nested_deeper_than
from api.mcp import AllowedNames
from domain.values import MAX_DEPTH


def deep(levels: int, open_: str = "[", close: str = "]") -> bytes:
    return (open_ * levels + close * levels).encode()


@pytest.mark.parametrize(
    ("body", "deeper"),
    [
        (deep(MAX_DEPTH), False),
        (deep(MAX_DEPTH + 1), True),
        (b'{"a": ' * MAX_DEPTH + b"1" + b"}" * MAX_DEPTH, False),
        (b'{"a": ' * (MAX_DEPTH + 1) + b"1" + b"}" * (MAX_DEPTH + 1), True),
        # brackets in strings, escaped quotes and backslashes before a quote are text
        (json.dumps({"s": "[" * 500, "t": '\\"[[[' * 200, "u": "\\" * 3 + "[" * 300}).encode(), False),
        # many brackets side by side are not deep
        (json.dumps([[0]] * 10_000).encode(), False),
        # a mixture, and the limit reached only in the last element
        (b"[" + b"[1]," * 300 + deep(MAX_DEPTH) + b"]", True),
        # malformed: measured as it stands
        (b"[" * (MAX_DEPTH + 1), True),
        (b'"' + b"[" * 500, False),  # an unterminated string runs to the end
    ],
)
def test_the_depth_scan(body: bytes, deeper: bool) -> None:
    assert nested_deeper_than(body) is deeper


def test_the_depth_scan_is_linear_and_never_recurses() -> None:
    huge = deep(1_000_000)
    started = time.perf_counter()
    assert nested_deeper_than(huge)
    assert body_problem(huge) is not None
    flat = json.dumps({"items": [{"n": i, "s": "x" * 20} for i in range(50_000)]}).encode()
    assert not nested_deeper_than(flat) and body_problem(flat) is None
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("127.0.0.1:8000", True), ("LOCALHOST:8000", True), ("Localhost:1", True), ("[::1]:65535", True),
        ("127.0.0.1:8000.evil", False), ("127.0.0.1:8000evil", False), ("127.0.0.1:", False), ("127.0.0.1", False),
        ("127.0.0.1:80:80", False), ("127.0.0.1:123456", False), ("localhost.evil:80", False), ("xlocalhost:80", False),
        ("tools.example", True), ("TOOLS.EXAMPLE", True), ("tools.example:443", False), ("tools.examplex", False),
        ("127.0.0.1:８０", False),  # full-width digits are not a port
    ],
)
def test_host_patterns(value: str, allowed: bool) -> None:
    names = AllowedNames(["127.0.0.1:*", "localhost:*", "[::1]:*", "tools.example"])
    assert names.allow(value) is allowed


def test_no_pattern_allows_nothing() -> None:
    assert not AllowedNames([]).allow("localhost:80")
