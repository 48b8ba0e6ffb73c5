"""Schemathesis over the whole OpenAPI document, with hostile strings (issue 12, family 6).

Schemathesis (4.x, its Python API) generates the requests of every operation of the running
server's /openapi.json, valid and invalid; Hypothesis then rewrites them: string values in the
body, and in the query and path, are replaced by lone surrogates, NUL and other control
characters, and whole bodies or body fields by JSON nested 101 to 10,000 levels deep. Each request
is sent as exact bytes (escaped JSON, so a lone surrogate travels as `\\ud800`). The answer must not
be a 5xx, a 4xx must be problem+json, and the server must answer its health check after each one.
Hypothesis runs derandomized (its seed derives from the test) with a fixed number of examples, so
a CI run is repeatable and bounded (about 30 s).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import schemathesis
from schemathesis.core import NotSet
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.adversarial.conftest import ADMIN_TOKEN, PROBLEM, Probe

EXAMPLES = 500
DEADLINE_SECONDS = 15.0

HOSTILE_STRINGS = st.one_of(
    st.sampled_from(["\ud800", "a\udfff", "\udc00\ud800 text"]),
    st.sampled_from(["\ud800", "\udfff", "a\ud800b", "\udc00\ud800", "\u0000", "a\u0000b", "\u0000\ud800", "\ufeff", "\u202e", "%00", "%ED%A0%80"]),
    st.text(st.characters(categories=["Cs", "Cc"]), min_size=1, max_size=8),
    st.text(st.characters(codec=None), min_size=1, max_size=8),
)
DEPTHS = st.sampled_from([101, 255, 300, 1000, 10000])


def _strings(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Where `value` holds a string or a key: paths, a key's ending in ("key", name)."""
    if isinstance(value, str):
        return [at]
    found: list[tuple[Any, ...]] = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            found += _strings(item, (*at, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            found.append((*at, ("key", key)))
            found += _strings(item, (*at, key))
    return found


def _replace(value: Any, at: tuple[Any, ...], new: str) -> Any:
    if not at:
        return new
    head, rest = at[0], at[1:]
    if isinstance(head, tuple):  # a key
        return {(new if k == head[1] else k): v for k, v in value.items()}
    copy = list(value) if isinstance(value, list) else dict(value)
    copy[head] = _replace(value[head], rest, new)
    return copy


def _swap_strings(value: Any, draw: st.DrawFn) -> Any:
    """`value` with one of its string values (and now and then a key) replaced by a hostile
    string, so that the rest stays as valid as it was generated (generated values are shallow:
    this never recurses deep)."""
    places = _strings(value)
    values = [at for at in places if not (at and isinstance(at[-1], tuple))]
    keys = [at for at in places if at and isinstance(at[-1], tuple)]
    if values:
        value = _replace(value, draw(st.sampled_from(values)), draw(HOSTILE_STRINGS))
    if keys and draw(st.integers(0, 4)) == 0:
        try:
            value = _replace(value, draw(st.sampled_from(keys)), draw(HOSTILE_STRINGS))
        except (KeyError, IndexError, TypeError):
            pass
    return value


@st.composite
def hostile(draw: st.DrawFn, cases: st.SearchStrategy[Any]) -> tuple[Any, str, dict[str, Any], bytes | None]:
    """A generated case, made hostile: (case, path, query, body bytes or None)."""
    case = draw(cases)
    path = case.formatted_path
    query = dict(case.query) if isinstance(case.query, dict) else {}
    body: Any = None if isinstance(case.body, NotSet) else case.body
    mode = draw(st.sampled_from(["strings"] * 4 + ["deep", "deep-field", "path", "as-generated"]))
    raw: bytes | None = None
    if mode == "strings":
        if isinstance(body, dict) and "id" in body:
            # an id that R1 accepts, so that the hostile string reaches the write, not the id rule
            body = {**body, "id": f"fz_{draw(st.integers(0, 10**9))}"}
        body = _swap_strings(body, draw) if body is not None and not isinstance(body, bytes) else body
        query = _swap_strings(query, draw)
    elif mode == "path":
        parameters = dict(case.path_parameters) if isinstance(case.path_parameters, dict) else {}
        if parameters:
            name = draw(st.sampled_from(sorted(parameters)))
            parameters[name] = draw(HOSTILE_STRINGS)
            path = case.operation.path
            for key, value in parameters.items():
                path = path.replace("{" + key + "}", _q(str(value)))
    elif mode == "deep":
        depth = draw(DEPTHS)
        raw = ("[" * depth + "]" * depth).encode()
    elif mode == "deep-field" and isinstance(body, dict):
        depth = draw(DEPTHS)
        key = draw(st.sampled_from(sorted(body))) if body else "x"
        rest = {k: v for k, v in body.items() if k != key}
        prefix = json.dumps(rest)[:-1] + (", " if rest else "")
        raw = (prefix + json.dumps(key) + ": " + "[" * depth + "1" + "]" * depth + "}").encode()
    if raw is None and body is not None and not isinstance(body, bytes | str):
        raw = json.dumps(body).encode()  # ensure_ascii: lone surrogates as \\ud800 escapes
    elif raw is None and isinstance(body, str):
        raw = json.dumps(body).encode()
    elif raw is None and isinstance(body, bytes):
        raw = body
    return case, path, query, raw


def _q(text: str) -> str:
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


@pytest.fixture(scope="module")
def operations(probe: Probe) -> st.SearchStrategy[Any]:
    schema = schemathesis.openapi.from_url(f"{probe.server.url}/openapi.json")
    strategies = []
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            strategies.append(operation.as_strategy(generation_mode=mode))
    assert len(strategies) >= 2 * 40, f"only {len(strategies) // 2} operations in the document"
    return st.one_of(strategies)


def test_schemathesis_with_surrogates_nul_and_deep_json_never_gets_a_server_error(probe: Probe, operations: st.SearchStrategy[Any]) -> None:
    sent: list[str] = []
    http = httpx.Client(base_url=probe.server.url, timeout=DEADLINE_SECONDS + 5)

    @settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck), derandomize=True)
    @given(hostile(operations))
    def one_request(generated: tuple[Any, str, dict[str, Any], bytes | None]) -> None:
        case, path, query, body = generated
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        for name, value in (dict(case.headers) if not isinstance(case.headers, NotSet) and case.headers else {}).items():
            if name.lower() not in ("authorization", "content-type", "content-length", "host") and isinstance(value, str) and value.isascii() and "\n" not in value and "\r" not in value:
                headers[name] = value
        params = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in query.items()}
        # percent-encoded bytes as they are: a lone surrogate becomes the (invalid UTF-8) %ED%A0%80
        encoded = "&".join(f"{_q(k)}={_q(v)}" for k, v in params.items())
        started = time.monotonic()
        answer = http.request(case.method, path + ("?" + encoded if encoded else ""), headers=headers, content=body)
        elapsed = time.monotonic() - started
        sent.append(f"{case.method} {path} {answer.status_code}")
        described = f"{case.method} {path} query={params!r} body={(body or b'')[:200]!r}"
        assert answer.status_code < 500, f"{described}: {answer.status_code} {answer.text[:300]}"
        assert elapsed <= DEADLINE_SECONDS, f"{described}: answered after {elapsed:.1f} s"
        if 400 <= answer.status_code < 500 and case.method != "HEAD":
            assert answer.headers.get("content-type", "").startswith(PROBLEM), f"{described}: {answer.status_code} {answer.headers.get('content-type')}"
        probe.assert_no_secret_in(answer.text, described)
        assert http.get("/healthz").status_code == 200, f"the service stopped answering after {described}"

    try:
        one_request()
    finally:
        http.close()
    assert len(sent) >= EXAMPLES // 2, f"only {len(sent)} requests were sent"
    statuses = sorted({line.rsplit(" ", 1)[1] for line in sent})
    print(f"{len(sent)} requests, statuses {statuses}, {sum(line.endswith(('200', '201', '204')) for line in sent)} accepted")
    probe.assert_alive()


def test_no_secret_in_any_log_line_event_export_or_answer(probe: Probe) -> None:
    probe.assert_no_secret_anywhere()


# -- requests the document calls valid (issue 28, finding 9) ------------------------------------------

VALID_EXAMPLES = 500
# The rules the OpenAPI document states (a pattern, an enum, a length, a count): a request the
# document calls valid is never refused for one of them. (field, rule) as the problem's errors name
# them; the rules JSON Schema cannot say (a tool that must exist, parameter names unique, an
# example's input of its tool's types) may still refuse a valid request.
DOCUMENTED = [
    (re.compile(r"(id|nodes\[\d+\]\.toolName|(allowedTools|tools|draftImports)\[\d+\]|tool\.inputParameters\[\d+\]\.name)"), "R1"),
    (re.compile(r"description"), "R3"),
    (re.compile(r"(role|name)"), "docs/security.md"),
    (re.compile(r"nodes(\[\d+\]\.type)?"), "R14"),
    (re.compile(r"(tool\.)?(tags|allowedTags)(\[\d+\])?"), "R4"),
    (re.compile(r"(tool\.)?(tags|allowedTags)(\[\d+\])?"), "R9"),
    (re.compile(r"tool\.(style|timeoutMillis|memoryLimitMb)"), "R9"),
    (re.compile(r"tool\.inputParameters\[\d+\]\.type"), "V1"),
    (re.compile(r"(timeoutMillis|connectTimeoutMillis|maxRedirects)"), "API"),
]


# Under R1 still, but no schema can say it: a PUT's body `id` must be its path's.
UNSAYABLE = ("must be the path's id",)


def _documented(error: dict[str, Any]) -> bool:
    if any(words in error.get("message", "") for words in UNSAYABLE):
        return False
    return any(pattern.fullmatch(error.get("field", "")) and error.get("rule") == rule for pattern, rule in DOCUMENTED)


@pytest.fixture(scope="module")
def valid_operations(probe: Probe) -> st.SearchStrategy[Any]:
    schema = schemathesis.openapi.from_url(f"{probe.server.url}/openapi.json")
    return st.one_of([result.ok().as_strategy(generation_mode=schemathesis.GenerationMode.POSITIVE)
                      for result in schema.get_all_operations()])


def test_a_request_the_document_calls_valid_is_never_refused_for_a_rule_the_document_states(
        probe: Probe, valid_operations: st.SearchStrategy[Any]) -> None:
    refused: list[str] = []
    sent: list[int] = []
    http = httpx.Client(base_url=probe.server.url, timeout=DEADLINE_SECONDS + 5)

    @settings(max_examples=VALID_EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck), derandomize=True)
    @given(valid_operations)
    def one_request(case: Any) -> None:
        body = None if isinstance(case.body, NotSet) else json.dumps(case.body).encode()
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", **({"Content-Type": "application/json"} if body is not None else {})}
        query = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in (case.query or {}).items()} if isinstance(case.query, dict) else {}
        answer = http.request(case.method, case.formatted_path, params=query, headers=headers, content=body)
        sent.append(answer.status_code)
        described = f"{case.method} {case.formatted_path} body={(body or b'')[:300]!r}"
        assert answer.status_code < 500, f"{described}: {answer.status_code} {answer.text[:300]}"
        if answer.status_code == 400 and case.method != "HEAD":
            problem = answer.json()
            if any(_documented(e) for e in problem.get("errors") or []):
                refused.append(f"{described}: {problem['detail'][:300]}")

    try:
        one_request()
    finally:
        http.close()
    assert len(sent) >= VALID_EXAMPLES // 2, f"only {len(sent)} requests were sent"
    print(f"{len(sent)} valid requests, statuses {sorted(set(sent))}, {sum(s < 300 for s in sent)} accepted, {len(refused)} refused for a documented rule")
    assert not refused, f"{len(refused)} of {len(sent)} valid requests refused for a documented rule:\n" + "\n".join(refused[:20])
    probe.assert_alive()
