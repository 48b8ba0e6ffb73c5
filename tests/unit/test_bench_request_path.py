"""bench.request_path's folding of a profile into the request path's layers (the pure logic of
"where the time goes"): a sample is its innermost matching frame's layer."""

from __future__ import annotations

from types import SimpleNamespace

from bench.request_path import LAYERS, OTHER, Frame, fold, fold_profile, parse_frame

ROOT = "<module> (toolsmith:6);Runner.run (asyncio/runners.py:118);RequestResponseCycle.run_asgi (uvicorn/protocols/http/httptools_impl.py:422)"
CHECKS = ROOT + ";Edge.__call__ (entrypoints/web.py:53);Edge._checked (entrypoints/web.py:96)"


def test_a_frame_is_its_function_and_its_file() -> None:
    assert parse_frame("Request.body (starlette/requests.py:241)") == Frame("Request.body", "starlette/requests.py")
    assert parse_frame("get_request_handler.<locals>.app (fastapi/routing.py:762)") == Frame(
        "get_request_handler.<locals>.app", "fastapi/routing.py")
    assert parse_frame("<module> (toolsmith:6)") == Frame("<module>", "toolsmith")


def test_each_sample_goes_to_the_innermost_layer_on_its_stack() -> None:
    raw = [
        # the JSON body checks run inside the edge: theirs, not the middleware's, and so is the decode under them
        CHECKS + ";body_problem (api/edge.py:101);JSONDecoder.raw_decode (json/decoder.py:353) 7",
        # the edge's own time (the methods table) is the middleware's
        CHECKS + ";methods_of (api/methods.py:60);_MethodsByPath.allowed (api/methods.py:80) 5",
        # the log formatter's JSON encoding is the log's, not the result serialization's
        CHECKS + ";Logger.info (logging/__init__.py:1489);JsonFormatter.format (infrastructure/logs.py:40);"
                 "JSONEncoder.iterencode (json/encoder.py:258) 3",
        # the rate limiter inside the admission inside the dependency solving
        CHECKS + ";solve_dependencies (fastapi/dependencies/utils.py:600);admit (api/admission.py:90);"
                 "RateLimiter.take (infrastructure/ratelimit.py:120) 2",
        CHECKS + ";solve_dependencies (fastapi/dependencies/utils.py:600) 4",
        # a stack of no layer at all: the event loop's own time; blank lines are nothing
        "<module> (toolsmith:6);Runner.run (asyncio/runners.py:118) 6",
        "",
        CHECKS + ";body_problem (api/edge.py:101) 1",
    ]
    samples = fold(raw)
    assert samples == {
        "body parsing and the JSON body checks": 8,
        "the middleware chain": 5,
        "access log and other logging": 3,
        "rate limiter": 2,
        "FastAPI dependency solving": 4,
        OTHER: 6,
    }


def test_every_layer_has_its_own_name() -> None:
    names = [name for name, _ in LAYERS]
    assert len(set(names)) == len(names) and OTHER not in names


def test_the_fallback_puts_a_function_of_no_layer_in_its_callers_layers() -> None:
    body = ("api/edge.py", 96, "body_problem")
    route = ("starlette/routing.py", 700, "Router.app")
    decode = ("json/decoder.py", 353, "JSONDecoder.raw_decode")  # no layer: its callers'
    orphan = ("asyncio/events.py", 80, "Handle._run")
    stats = SimpleNamespace(stats={
        # key: (primitive calls, calls, own time, cumulative time, {caller: (.., .., own, cumulative)})
        body: (1, 1, 1.0, 3.0, {}),
        route: (1, 1, 0.5, 2.0, {}),
        decode: (2, 2, 3.0, 3.0, {body: (1, 1, 2.0, 2.0), route: (1, 1, 1.0, 1.0)}),
        orphan: (1, 1, 0.25, 0.25, {}),
    })
    seconds = fold_profile(stats)  # type: ignore[arg-type]
    assert seconds == {"body parsing and the JSON body checks": 3.0, "routing (route match, dispatch)": 1.5, OTHER: 0.25}


def test_the_floor_is_the_bare_route_plus_the_bare_context_and_each_goal_is_read_against_its_own_baseline() -> None:
    from bench.request_path import rows_of

    def rounds(rate: float, p95: float = 0.002) -> list[dict[str, float]]:
        return [{"rate": rate, "p50": 0.001, "p95": p95, "requests": rate}] * 3

    runs = {"floor POST ×1": rounds(1000), "floor POST ×4": rounds(1500), "floor GET ×1": rounds(2000),
            "floor in a worker ×1": rounds(800), "REST call ×1": rounds(600), "REST call ×4": rounds(1200, p95=0.0035), "healthz ×1": rounds(1000),
            "MCP session ×1": rounds(570), "MCP stateless ×1": rounds(500), "FastMCP ×1": rounds(250)}
    rows = {row.figure: row for row in rows_of(runs, [0.0005] * 3)}
    # 1 / (1/1000 s + 500 µs) = 666.7 calls/s; REST 600/s is 0.9 of it
    assert rows["floor: 1/(a) + (b)"].ours == "667/s"
    rest = rows["REST POST /api/v1/tools/addOne/call, 1 conn"]
    assert round(rest.ratio, 2) == 0.9 and rest.meets is True
    # the ceiling of an out-of-process sandbox: 800/s is 1.2 × the floor here; REST is 0.75 of it
    assert round(rows["ceiling: (a) asking a bare QuickJS worker process"].ratio, 2) == 1.2
    assert rows["REST call vs the ceiling, 1 conn"].ratio == 0.75
    scaling = rows["REST call, 4 conn vs 1 conn"]
    assert scaling.ratio == 2.0 and scaling.meets is True and "p95 3.50 ms" in scaling.ours
    assert rows["GET /healthz, 1 conn"].ratio == 0.5 and rows["GET /healthz, 1 conn"].meets is False
    assert rows["MCP tools/call, handshake session, 2025-06-18, 1 conn"].meets is True  # 570 / 600 = 0.95
    assert rows["MCP tools/call, stateless, 2026-07-28, 1 conn"].meets is False  # 500 / 600 = 0.83
    assert rows["Toolsmith MCP (stateless) vs FastMCP (stateless, JSON), 1 conn"].ratio == 2.0


def test_each_layers_hottest_frames_are_those_that_put_the_samples_there() -> None:
    from bench.request_path import hottest

    raw = [
        CHECKS + ";methods_of (api/methods.py:60);_MethodsByPath.allowed (api/methods.py:80) 5",
        CHECKS + ";_method_not_answered (api/edge.py:211);_MethodsByPath.allowed (api/methods.py:81);re.match (re/__init__.py:166) 2",
        CHECKS + " 1",
        "<module> (toolsmith:6);Runner.run (asyncio/runners.py:118) 6",
    ]
    hot = hottest(raw, 1)
    assert hot["the middleware chain"] == [("_MethodsByPath.allowed (api/methods.py)", 7)]
    assert hot[OTHER] == [("Runner.run (asyncio/runners.py)", 6)]


def test_a_write_caught_in_the_edges_send_wrappers_is_the_responses_and_their_own_work_the_middlewares() -> None:
    from bench.request_path import send_lines

    respond = "Edge._served.<locals>.respond"
    [awaiting, *_] = sorted(send_lines("entrypoints.web", respond))
    errors = "ServerErrorMiddleware.__call__.<locals>._send"
    [errors_awaiting] = send_lines("starlette.middleware.errors", errors)
    mcp = ROOT + ";Edge.__call__ (entrypoints/web.py:53);FastCalls.answer (api/mcp_direct.py:418)"
    raw = [
        # uvicorn's write seen in progress from the wrapper's line that awaits it (py-spy sees no deeper frame)
        mcp + f";{respond} (entrypoints/web.py:{awaiting}) 4",
        mcp + f";{respond} (entrypoints/web.py:{awaiting});{errors} (starlette/middleware/errors.py:{errors_awaiting}) 2",
        # the write's own frame: the response's, as before
        mcp + f";{respond} (entrypoints/web.py:{awaiting});RequestResponseCycle.send (uvicorn/protocols/http/httptools_impl.py:522) 3",
        # the wrapper's own lines (the status kept for the access log), and the security headers: the middleware's
        mcp + f";{respond} (entrypoints/web.py:{awaiting - 100}) 1",
        mcp + f";{respond} (entrypoints/web.py:{awaiting});secure (console/security.py:71) 1",
    ]
    assert fold(raw) == {"the response (starlette Response, uvicorn send)": 9, "the middleware chain": 2}


def test_the_fallback_leaves_the_in_process_clients_taking_of_the_answer_out_of_the_middleware() -> None:
    respond = ("entrypoints/web.py", 192, "respond")
    client_send = ("httpx/_transports/asgi.py", 160, "send")  # no layer; called by the edge's wrapper of send
    stats = SimpleNamespace(stats={
        respond: (1, 1, 0.5, 2.5, {}),
        client_send: (1, 1, 2.0, 2.0, {respond: (1, 1, 2.0, 2.0)}),
    })
    seconds = fold_profile(stats)  # type: ignore[arg-type]
    assert seconds == {"the middleware chain": 0.5, OTHER: 2.0}
