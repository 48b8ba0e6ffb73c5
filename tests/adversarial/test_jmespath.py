"""JMESPath against the real service (issue 28, family: jmespath; findings 2 and 4).

An API URL tool's `response.jmespath` is the operator's, but the answer it runs on is the API's,
and an API that echoes what it is sent lets any caller of an exposed tool shape it. The hostile
shapes are refused when the tool is saved (a 400 naming `response.jmespath`, never a 500); the
accepted expressions that a caller's answer makes huge (16 copies of each of 20 000 elements, a
text doubled ten times, a join whose separator the caller chose) end in a `response` error or a
cut output, within seconds, while another caller's tool answers as usual, and the server's
memory peak stays far below what writing those results out would take.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import Probe, start_probe
from tests.upstream import Upstream, running

TOOLS = "/api/v1/admin/api-tools"
# What the server may add to its memory peak during the hostile calls (their answers are at most
# 2.4 MB); writing out any of their results whole would take 100 MB to 2 GB.
ALLOWANCE_MB = 96

HOSTILE_AT_SAVE = {
    "30 doubling steps (185 characters)": "current" + ".[@,@]" * 30,
    "doubling objects": "current" + ".{l: @, r: @}" * 12,
    "a slice step of 0": "days[::0]",
    "500 nested parentheses": "(" * 500 + "days" + ")" * 500,
    "200 nested pipes": "days" + " | @" * 200,
    "200 nested lists": "[" * 200 + "days" + "]" * 200,
    "does not compile": "days[?",
}

# Accepted at save; the caller's arguments make the answer they run on.
HOSTILE_AT_CALL = {
    "16 copies of 20 000 elements": ("body.items[*].[" + ",".join(["@"] * 16) + "][]", {"items": list(range(20_000))}, "error"),
    "a join with the caller's separator": ("join(body.text, body.items)", {"text": "s" * 100_000, "items": [""] * 20_000}, "error"),
    "a 200 KB text doubled ten times": ("body.text" + ".[@,@]" * 10, {"text": "t" * 200_000}, "cut"),
    "a to_string of references": ("to_string(body.items" + ".[@,@]" * 10 + ")", {"items": list(range(20_000))}, "error"),
    "a comparison of references": ("body.items" + ".[@,@]" * 10 + " == body.items" + ".[@,@]" * 10,
                                   {"items": list(range(20_000))}, "error"),
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    yield from running()


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory, upstream: Upstream) -> Iterator[Probe]:
    started = start_probe(tmp_path_factory.mktemp("jmespath") / "data", TOOLSMITH_EGRESS_ALLOW=upstream.allow)
    yield started
    started.close()


def weather(upstream: Upstream, name: str, expression: str | None) -> dict[str, Any]:
    return {"id": name, "description": "Current weather", "urlTemplate": upstream.url + "/v1/weather/{city}",
            "parameters": [{"name": "city", "type": "string", "required": True, "location": "path"}],
            "response": {"jmespath": expression}}


def echo(upstream: Upstream, name: str, expression: str) -> dict[str, Any]:
    return {"id": name, "description": "Echoes its body", "method": "POST", "urlTemplate": upstream.url + "/echo",
            "parameters": [{"name": "items", "type": "array", "location": "body"}, {"name": "text", "type": "string", "location": "body"}],
            "response": {"jmespath": expression, "maxBytes": 5 * 1_048_576, "maxOutputChars": 2_000}}


def made(answer: Any, status: int) -> Any:
    assert answer.status_code == status, answer.text[:500]
    return answer.json()


def peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize("case", list(HOSTILE_AT_SAVE))
def test_a_hostile_expression_is_refused_at_save_naming_the_field(probe: Probe, upstream: Upstream, case: str) -> None:
    name = "save_" + str(list(HOSTILE_AT_SAVE).index(case))
    refused = probe.send("POST", TOOLS, json=weather(upstream, name, HOSTILE_AT_SAVE[case]), deadline=10)
    assert refused.status_code == 400, refused.text[:500]
    assert [e["field"] for e in refused.json()["errors"]] == ["response.jmespath"]
    made(probe.send("POST", TOOLS, json=weather(upstream, name, "current.temp")), 201)
    refused = probe.send("PUT", f"{TOOLS}/{name}", json=weather(upstream, name, HOSTILE_AT_SAVE[case]), deadline=10)
    assert refused.status_code == 400 and [e["field"] for e in refused.json()["errors"]] == ["response.jmespath"]
    assert made(probe.send("POST", f"/api/v1/tools/{name}/call", json={"city": "Oslo"}), 200)["output"] == 21.5
    probe.assert_alive()


def test_answers_a_caller_made_huge_are_stopped_quickly_while_others_are_served(probe: Probe, upstream: Upstream) -> None:
    assert probe.server.process is not None
    pid = probe.server.process.pid
    made(probe.send("POST", TOOLS, json=weather(upstream, "ordinary", "current")), 201)
    for i, (expression, _, _) in enumerate(HOSTILE_AT_CALL.values()):
        made(probe.send("POST", TOOLS, json=echo(upstream, f"hostile_{i}", expression)), 201)
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # the memory peak counts from here
    baseline = peak_kb(pid)

    others: list[float] = []
    done = threading.Event()

    def another_caller() -> None:  # an ordinary tool, called all along
        while not done.is_set():
            started = time.monotonic()
            answer = probe.send("POST", "/api/v1/tools/ordinary/call", json={"city": "Bern"}, deadline=10)
            assert answer.status_code == 200 and answer.json()["output"] == {"temp": 21.5, "wind": 3}
            others.append(time.monotonic() - started)

    beside = threading.Thread(target=another_caller, daemon=True)
    beside.start()
    try:
        for i, (case, (_, arguments, expected)) in enumerate(HOSTILE_AT_CALL.items()):
            result = made(probe.send("POST", f"/api/v1/tools/hostile_{i}/call", json=arguments, deadline=20), 200)
            if expected == "error":
                assert result["output"] is None and result["error"]["type"] == "response", (case, result)
                assert result["error"]["message"].startswith("jmespath stopped"), (case, result)
            else:
                assert result["error"] is None and result["output"].endswith("characters shown (maxOutputChars)]"), case
                assert len(result["output"]) < 2_100, case
    finally:
        done.set()
        beside.join(30)
    assert others, "the other caller was never answered"
    grown_mb = (peak_kb(pid) - baseline) / 1024
    assert grown_mb < ALLOWANCE_MB, f"the server's memory peak grew {grown_mb:.0f} MB"
    probe.assert_alive()
