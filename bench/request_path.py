"""Benchmark: the request path (issue 30, "a call costs what its work costs"): one small tool call
through `toolsmith serve` against the floor of the same work, measured in the same run, and where
the API process's time goes.

Processes, all on this machine (ports in 8810–8829): one `toolsmith serve` with the settings `make
run` uses (embedded defaults: SQLite, the embedded sandbox; the log level and access log as they
come), except that the token and tenant rate limiters are ON with limits far above the load (a
limit of 0 would turn them off, and skip their work); fair share runs as always. It serves the
published tool `addOne` (`exports.run = function (input) { return input.n + 1; };`, one integer
parameter `n`, exposed in chat). Beside it, the floor (`bench/peers/floor.py`: bare FastAPI routes
on uvicorn with the product's uvicorn options) and the FastMCP peer (`bench/peers/fastmcp_peer.py`,
the same tool on FastMCP, stateless HTTP with JSON responses, in its own virtualenv `.venv-peers`,
made from `bench/peers/requirements.txt` when missing, or by `make bench-peers`).

wrk (keep-alive, one thread) loads each variant for a fixed time per round; the variants run in a
rotated order each round and a figure is the median of its rounds. wrk's Lua script checks every
answer (status 200 and the tool's output in the body); a wrong answer fails the bench.

- The floor: (a) the bare FastAPI `POST /call` (`{"n":41}` → `{"output":42}`, a pydantic model) at 1
  and 4 connections, and its `GET /healthz`; (b) a bare QuickJS fresh context + `eval` of the tool
  as a plain script, in this process, µs per call. floor time = 1 / (a's rate at 1 connection) +
  (b); floor rate = 1 / floor time. Beside it, the ceiling of a sandbox out of the API's process:
  (a)'s route asking a bare QuickJS worker process of its own over a Unix socket (a fresh context
  and an `eval` per call), at 1 connection. Toolsmith runs its tools in worker processes (a crash,
  a runaway or a memory-hungry script takes its worker down, never the API), so what its REST call
  can reach is that ceiling, not the in-process floor.
- Toolsmith: `POST /api/v1/tools/addOne/call` at 1 connection (goal ≥ 0.8 × the floor rate) and 4
  (goal ≥ 1.5 × 1 connection; its p95 printed); `GET /healthz` at 1 connection (goal ≥ 0.6 × the
  bare GET); MCP `tools/call` at 1 connection in a handshake-era session (2025-06-18: initialize,
  notifications/initialized, then POSTs with Mcp-Session-Id) and stateless (2026-07-28: no session,
  the version in the Mcp-Protocol-Version header and the request's `_meta`), each ≥ 0.9 × REST;
  and ≥ 2 × the FastMCP peer's `tools/call` at 1 connection.
- Where the time goes: py-spy (`record --gil -f raw`) samples the server while wrk loads the REST
  call at 1 connection; each sample is put in the innermost layer of `LAYERS` that a frame of its
  stack matches, and a layer's CPU per request is its share of the samples × the process's CPU
  seconds in the window (/proc/PID/stat) ÷ the requests served in it. The sandbox's worker
  processes (where QuickJS runs) are counted apart, from their own /proc CPU. If py-spy cannot
  attach (ptrace refused), the bench says so and profiles the same app in this process instead
  (cProfile over an in-process ASGI run: each function's own time in its layer, a function of no
  layer in its callers').
- With `--in-process-cpu`, the CPU per request of the REST call and of MCP's `tools/call` in both
  eras, the same app in this process, each request handed straight to the ASGI app (the event loop
  thread's CPU, the paths interleaved): the figure that holds on a loaded machine, where wrk's
  rates do not (`cpu_in_process`).
- API URL tools against httpx directly at 8 concurrent callers: `bench.api_tools`'s own
  measurement, called as it is (`--skip-api-tools` leaves it out).

The rest of issue 30's "nothing falls back" is checked with the benchmarks that already measure it:
`python -m bench.scale`, `python -m bench.tenants` and `python -m bench --only publish` (or
`python -m bench.compare OLD NEW` for the same figures on two commits).

Run: `python -m bench.request_path [--quick]` (about 2 minutes quick, 5 in full).
"""

from __future__ import annotations

import argparse
import ast
import cProfile
import importlib.util
import json
import os
import pstats
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import httpx

from bench._common import Progress, Row, format_table, machine_line, median, quartiles, rotated
from testing.launcher import Server, launch, stop

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "tsa_bench-admin-token"
TOOL = "addOne"
SOURCE = "exports.run = function (input) { return input.n + 1; };"
# The same tool as a plain script, for the bare QuickJS floor (bench/tool_call.py does the same).
BARE_SCRIPT = "var exports = {}; exports.run = function (input) { return input.n + 1; }; exports.run({n: 41});"
ARGUMENTS = '{"n":41}'
EXPECTED = 42
PORTS = range(8810, 8830)
# Far above anything wrk reaches on two cores, and not 0 (which turns a limiter off).
UNREACHED_RATE = "1000000"
UNREACHED_BURST = "2000000"
HANDSHAKE_VERSION = "2025-06-18"
STATELESS_VERSION = "2026-07-28"
PEERS_VENV = ROOT / ".venv-peers"
PEERS_REQUIREMENTS = ROOT / "bench" / "peers" / "requirements.txt"

GOAL_REST = 0.8
GOAL_SCALING = 1.5
GOAL_HEALTHZ = 0.6
GOAL_MCP = 0.9
GOAL_FASTMCP = 2.0

TITLE = "Benchmark — the request path (issue 30): one small tool call against the floor of its work, one run; medians"


# -- where the time goes: the layers ---------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """One frame of a sampled stack: the function's (qualified) name and its file, as py-spy prints it
    (`package/module.py`, relative to its sys.path entry), and the line it was at (None: not known,
    as in a cProfile; not part of a frame's identity)."""

    function: str
    file: str
    line: int | None = field(default=None, compare=False)


def files(*prefixes: str) -> Callable[[Frame], bool]:
    """Frames in a file that starts with one of `prefixes` (`api/edge.py`, `starlette/middleware/`)."""
    return lambda frame: frame.file.startswith(prefixes)


def named(file_prefix: str, *functions: str) -> Callable[[Frame], bool]:
    """Frames of one of `functions` (exact names, or `Class.` for any method of it) in such a file."""
    return lambda frame: frame.file.startswith(file_prefix) and any(
        frame.function == f or (f.endswith(".") and frame.function.startswith(f)) for f in functions)


def any_of(*predicates: Callable[[Frame], bool]) -> Callable[[Frame], bool]:
    return lambda frame: any(p(frame) for p in predicates)


# The wrappers of the server's `send` between the app and uvicorn: the edge's `respond`
# (entrypoints/web.py), Starlette's ServerErrorMiddleware and exception handler. A sample whose
# innermost frame (of any layer) is one of them at a line awaiting `send` is the server's write in
# progress (py-spy catches the call between frames: the wrapper's line is the last it sees), the
# response's; the wrapper's other lines (the security headers, the status kept for the log) are
# the middleware's.
SEND_WRAPPERS = (
    ("entrypoints/web.py", "Edge._served.<locals>.respond", "entrypoints.web"),
    ("starlette/middleware/errors.py", "ServerErrorMiddleware.__call__.<locals>._send", "starlette.middleware.errors"),
    ("starlette/_exception_handler.py", "wrap_app_handling_exceptions.<locals>.wrapped_app.<locals>.sender",
     "starlette._exception_handler"),
)


@lru_cache(maxsize=None)
def send_lines(module: str, qualified: str) -> frozenset[int]:
    """The lines of the function `qualified` (`Class.method.<locals>.inner`) in `module`'s source
    that await a call of `send` (read from the source, not imported: the app need not load)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return frozenset()
    node: ast.AST = ast.parse(Path(spec.origin).read_text())
    for name in (part for part in qualified.split(".") if part != "<locals>"):
        node = next((child for child in ast.walk(node) if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                     and child.name == name and child is not node), None)  # type: ignore[assignment]
        if node is None:
            return frozenset()
    return frozenset(awaited.lineno for awaited in ast.walk(node) if isinstance(awaited, ast.Await)
                     and isinstance(awaited.value, ast.Call) and isinstance(awaited.value.func, ast.Name) and awaited.value.func.id == "send")


def is_send_wrapper(frame: Frame) -> bool:
    """A frame of a `SEND_WRAPPERS` wrapper as a cProfile names it (the function's own name, no line)."""
    return any(frame.file == file and frame.function in (function, function.rpartition(".")[2]) for file, function, _ in SEND_WRAPPERS)


def awaiting_send(frame: Frame) -> bool:
    """A frame of a `SEND_WRAPPERS` wrapper at a line awaiting the server's `send`."""
    return frame.line is not None and any(frame.file == file and frame.function == function and frame.line in send_lines(module, function)
                                          for file, function, module in SEND_WRAPPERS)


# Each sample belongs to the INNERMOST frame of its stack that some layer matches (so a JSON decode
# under the body checks is the body checks', and the body checks under the edge (entrypoints.web.Edge)
# are not the middleware's); a frame that several layers match is the first one's here. A sample no frame of
# which matches is "other" (the event loop, asyncio, the process's other threads).
LAYERS: tuple[tuple[str, Callable[[Frame], bool]], ...] = (
    ("access log and other logging", files("logging/", "infrastructure/logs.py", "uvicorn/logging.py")),
    ("body parsing and the JSON body checks", any_of(
        named("api/edge.py", "body_problem", "_unique_keys", "_no_constant", "_finite", "nested_deeper_than", "_NotJson.",
              "_media_problem", "_is_json"),
        named("starlette/requests.py", "Request.body", "Request.json", "Request.stream"),
        named("fastapi/routing.py", "_get_body", "get_request_handler.<locals>._read_body"),
        named("fastapi/dependencies/utils.py", "request_body_to_args", "_validate_value_with_model_field", "_get_multidict_value"),
    )),
    ("argument validation (the tool's input)", any_of(
        files("domain/rules.py", "jsonschema/"), named("application/kinds/base.py", "validated"))),
    ("fair-share counter", files("application/fair_share.py", "application/fair_queue.py")),
    # the call's record: made on the call's path, hashed and written by the call log's own thread
    ("the call log (its record, its writer thread)", files(
        "application/call_log.py", "infrastructure/call_log", "domain/calls.py", "domain/chain.py")),
    ("sandbox IPC (sandbox/: the worker's socket, its answer)", files("sandbox/")),
    ("the thread hop to the sandbox (run_in_threadpool)", any_of(
        files("starlette/concurrency.py", "anyio/to_thread.py", "queue.py", "threading.py", "concurrent/futures/"),
        named("anyio/_backends/_asyncio.py", "WorkerThread.", "AsyncIOBackend.run_sync_in_worker_thread", "_threadpool_idle_workers"),
        named("asyncio/base_events.py", "BaseEventLoop.run_in_executor"),
    )),
    ("tool resolution (toolbox entry lookup)", files("application/toolbox.py", "application/projected.py")),
    ("the call itself (tools route, execution, code kind)", files(
        "api/routes/tools.py", "application/execution.py", "application/context.py", "application/queries.py", "toolkinds/")),
    ("MCP (JSON-RPC: the direct path, the SDK)", files("api/mcp", "mcp/")),
    ("result checks and serialization", any_of(
        # (not json/encoder.py itself: the log formatter encodes too, and its caller says whose it is)
        files("api/presenters.py", "fastapi/encoders.py"),
        named("fastapi/routing.py", "serialize_response", "_prepare_response_content"),
    )),
    ("rate limiter", files("infrastructure/ratelimit.py")),
    ("admission and the token check", files(
        "api/admission.py", "application/principals.py", "application/tenants.py", "application/tokens.py", "api/deps.py",
        "domain/callers.py", "domain/tenants.py", "fastapi/security/")),
    ("FastAPI dependency solving", files("fastapi/dependencies/")),
    ("the response (starlette Response, uvicorn send)", any_of(
        files("starlette/responses.py", "starlette/background.py"),
        lambda frame: frame.file.startswith("uvicorn/protocols/") and "send" in frame.function,
        awaiting_send,
    )),
    ("FastAPI's endpoint wrapper", any_of(
        named("fastapi/routing.py", "request_response.", "get_request_handler.", "run_endpoint_function"),
        named("starlette/routing.py", "request_response."),
    )),
    ("routing (route match, dispatch)", files("starlette/routing.py", "fastapi/routing.py", "starlette/convertors.py")),
    ("the middleware chain", files(
        "console/security.py", "api/edge.py", "api/methods.py", "entrypoints/web.py", "starlette/middleware/",
        "starlette/_exception_handler.py", "fastapi/middleware/", "fastapi/_body_limit.py", "fastapi/telemetry/",
        "fastapi/applications.py", "starlette/applications.py")),
    # (uvicorn/main.py and server.py are the roots of every stack: their own time is the event loop's)
    ("uvicorn (HTTP parsing, the connection)", files("uvicorn/protocols/")),
)
OTHER = "other (event loop, asyncio, other threads)"

_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^():]*)(?::(?P<line>\d+))?\)$")


def parse_frame(text: str) -> Frame:
    """`Request.body (starlette/requests.py:241)` → Frame("Request.body", "starlette/requests.py", 241)."""
    found = _FRAME.match(text)
    if not found:
        return Frame(text, "")
    return Frame(found["function"], found["file"], int(found["line"]) if found["line"] else None)


def placed(stack: Sequence[Frame]) -> tuple[str, Frame | None]:
    """The layer of one sample and the frame that put it there: the innermost (the last) frame a
    layer matches, or (OTHER, None)."""
    for frame in reversed(stack):
        for name, matches in LAYERS:
            if matches(frame):
                return name, frame
    return OTHER, None


def layer_of(stack: Sequence[Frame]) -> str:
    return placed(stack)[0]


def fold(raw: Iterable[str]) -> Counter[str]:
    """py-spy's raw (collapsed) output, one `frame;frame;... count` per line, outermost first (a
    `process …` or `thread …` first frame, when py-spy adds one, matches no layer), as samples per layer."""
    samples: Counter[str] = Counter()
    for line in raw:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        samples[layer_of([parse_frame(f) for f in stack.split(";")])] += int(count)
    return samples


def hottest(raw: Iterable[str], n: int) -> dict[str, list[tuple[str, int]]]:
    """Each layer's `n` frames that put the most samples in it (for OTHER, the innermost frames):
    where in a layer to look first."""
    frames: dict[str, Counter[str]] = {}
    for line in raw:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack:
            continue
        parsed = [parse_frame(f) for f in stack.split(";")]
        layer, frame = placed(parsed)
        frame = frame or parsed[-1]
        frames.setdefault(layer, Counter())[f"{frame.function} ({frame.file})"] += int(count)
    return {layer: counts.most_common(n) for layer, counts in frames.items()}


def fold_profile(stats: pstats.Stats) -> Counter[str]:
    """The fallback's folding: each function's own time (cProfile's tottime) in its layer; the time of
    a function of no layer goes to its callers' layers, in proportion to the time each caller spent
    in it, up the call graph (a cProfile has no stacks, so this is the nearest to "innermost")."""
    table = stats.stats  # type: ignore[attr-defined]  # {(file, line, name): (cc, nc, tt, ct, callers)}

    def frame_of(key: tuple[str, int, str]) -> Frame:
        path, _, function = key
        return Frame(function, _relative(path))

    def own_layer(key: tuple[str, int, str]) -> str | None:
        frame = frame_of(key)
        return next((name for name, matches in LAYERS if matches(frame)), None)

    seconds: Counter[str] = Counter()

    def spread(key: tuple[str, int, str], amount: float, depth: int) -> None:
        layer = own_layer(key)
        if layer is not None:
            seconds[layer] += amount
            return
        callers = table.get(key, (0, 0, 0, 0, {}))[4]
        weights = {caller: figures[3] for caller, figures in callers.items() if caller in table}
        total = sum(weights.values())
        if depth > 30 or not total:
            seconds[OTHER] += amount
            return
        for caller, weight in weights.items():
            if is_send_wrapper(frame_of(caller)):
                # under a wrapper of `send`: the in-process client's taking of the answer (no server's write)
                seconds[OTHER] += amount * weight / total
                continue
            spread(caller, amount * weight / total, depth + 1)

    for key, (_, _, own, _, _) in table.items():
        if own:
            spread(key, own, 0)
    return seconds


def _relative(path: str) -> str:
    """A file as py-spy names it: relative to the sys.path entry it was imported from."""
    for entry in sorted((p for p in sys.path if p), key=len, reverse=True):
        if path.startswith(entry.rstrip("/") + "/"):
            return path[len(entry.rstrip("/")) + 1:]
    return path


# -- processes -------------------------------------------------------------------------------------


def port_in_range(taken: set[int]) -> int:
    """A port of this bench's range that nothing listens on right now."""
    for port in PORTS:
        if port in taken:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        taken.add(port)
        return port
    raise SystemExit(f"bench.request_path: every port of {PORTS.start}–{PORTS.stop - 1} is taken")


def start_toolsmith(tmp: Path, port: int, *, log_level: str | None = None) -> Server:
    """`toolsmith serve` as `make run` starts it, the two request-rate limiters on and out of reach
    (`log_level`: TOOLSMITH_LOG_LEVEL, else its default, INFO: the access log on)."""
    from infrastructure.settings import Settings

    env = {"TOOLSMITH_ADMIN_TOKEN": TOKEN,
           "TOOLSMITH_RATE_PER_SECOND": UNREACHED_RATE, "TOOLSMITH_RATE_BURST": UNREACHED_BURST,
           "TOOLSMITH_TENANT_RATE_PER_SECOND": UNREACHED_RATE, "TOOLSMITH_TENANT_RATE_BURST": UNREACHED_BURST,
           # the launcher turns the failed-authentication limiter off; `make run` has it at its default
           "TOOLSMITH_AUTH_FAILURES_PER_MINUTE": str(Settings.model_fields["auth_failures_per_minute"].default)}
    if log_level is not None:
        env["TOOLSMITH_LOG_LEVEL"] = log_level
    name = "serve" if log_level is None else f"serve-{log_level.lower()}"
    server = Server(data_dir=tmp / f"data-{name}", port=port, token=TOKEN, inherit_settings=False, env=env,
                    log_file=tmp / f"{name}.log", log_mode="w")
    try:
        return server.start(timeout=60)
    except RuntimeError as failed:
        raise SystemExit(f"bench.request_path: {failed}") from None


def publish_tool(server: Server) -> None:
    tool = {"inputParameters": [{"name": "n", "type": "integer", "required": True, "description": "n"}], "exposeInChat": True}
    body = {"id": TOOL, "description": "Adds one to n.", "draftContent": SOURCE, "tool": tool}
    with server.client() as http:
        created = http.post("/api/v1/admin/code-modules", json=body)
        published = http.post(f"/api/v1/admin/code-modules/{TOOL}/publish")
        called = http.post(f"/api/v1/tools/{TOOL}/call", content=ARGUMENTS, headers={"Content-Type": "application/json"})
    if created.status_code != 201 or published.status_code != 200 or called.json().get("output") != EXPECTED:
        raise SystemExit(f"bench.request_path: could not publish and call {TOOL}: {created.text} {published.text} {called.text}")


def start_floor(tmp: Path, port: int) -> subprocess.Popen:
    try:
        return launch([sys.executable, "-m", "bench.peers.floor", str(port)], url=f"http://127.0.0.1:{port}", cwd=ROOT,
                      log_path=tmp / "floor.log", env=dict(os.environ), name="the bare FastAPI floor")
    except RuntimeError as failed:
        raise SystemExit(f"bench.request_path: {failed}") from None


def peers_python(progress: Progress) -> Path:
    """`.venv-peers`'s python, the virtualenv made from bench/peers/requirements.txt when missing
    (FastMCP's dependencies stay out of the product's `.venv`)."""
    python = PEERS_VENV / "bin" / "python"
    check = [str(python), "-c", "import fastmcp, uvicorn"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    progress(f"making {PEERS_VENV.name} for the FastMCP peer ({PEERS_REQUIREMENTS.relative_to(ROOT)})")
    subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-r", str(PEERS_REQUIREMENTS)],
                               capture_output=True, text=True)
    if installed.returncode != 0:
        raise SystemExit(f"bench.request_path: could not install the FastMCP peer's packages:\n{installed.stderr}")
    return python


def start_fastmcp(tmp: Path, port: int, python: Path) -> subprocess.Popen:
    # Its readiness: a stateless tools/list is a POST, so the launcher's GET waits on the port only
    # (FastMCP answers a GET on /mcp with 405 in stateless mode: not 200); the first call checks it.
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTMCP_")} | {"PYTHONPATH": str(ROOT)}
    log = tmp / "fastmcp.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(python), "-m", "bench.peers.fastmcp_peer", str(port)], cwd=ROOT, env=env,
                                   stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            answer = httpx.post(url + "/mcp", content=mcp_call_body(1, meta=False), headers=mcp_headers(HANDSHAKE_VERSION),
                                timeout=2, trust_env=False)
            if answer.status_code == 200 and f'"text":"{EXPECTED}"' in answer.text:
                return process
            raise SystemExit(f"bench.request_path: the FastMCP peer answered {answer.status_code}: {answer.text}")
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process)
            raise SystemExit(f"bench.request_path: the FastMCP peer did not start:\n{log.read_text(errors='replace')}")
        time.sleep(0.2)


# -- MCP requests ----------------------------------------------------------------------------------


def mcp_headers(version: str, session: str | None = None, *, token: bool = False) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": version}
    if version == STATELESS_VERSION:
        # 2026-07-28: the method and the tool's name are in headers too (a proxy routes on them).
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": TOOL}
    if session:
        headers["Mcp-Session-Id"] = session
    if token:
        headers["Authorization"] = f"Bearer {TOKEN}"
    return headers


def mcp_call_body(request_id: int | None, *, meta: bool) -> str | tuple[str, str]:
    """A `tools/call` of addOne(41); with `meta`, the 2026-07-28 era's self-contained request (the
    protocol version, capabilities and client in `params._meta`, docs/mcp.md). `request_id` None: a
    (head, tail) pair around the id, for wrk to number the requests."""
    params: dict[str, object] = {"name": TOOL, "arguments": json.loads(ARGUMENTS)}
    if meta:
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                           "io.modelcontextprotocol/clientCapabilities": {},
                           "io.modelcontextprotocol/clientInfo": {"name": "bench.request_path", "version": "1"}}
    head = '{"jsonrpc":"2.0","method":"tools/call","params":' + json.dumps(params, separators=(",", ":")) + ',"id":'
    return (head, "}") if request_id is None else f"{head}{request_id}}}"


def open_session(url: str) -> str:
    """A handshake-era session, as a client opens one: `initialize`, then `notifications/initialized`."""
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": {"name": "bench.request_path", "version": "1"}}}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30, trust_env=False) as http:
        opened = http.post("/mcp", json=initialize, headers={"Accept": "application/json, text/event-stream"})
        session = opened.headers.get("mcp-session-id")
        if opened.status_code != 200 or not session:
            raise SystemExit(f"bench.request_path: initialize answered {opened.status_code}: {opened.text}")
        initialized = http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                                headers=mcp_headers(HANDSHAKE_VERSION, session))
        if initialized.status_code != 202:
            raise SystemExit(f"bench.request_path: notifications/initialized answered {initialized.status_code}")
    return session


# -- wrk -------------------------------------------------------------------------------------------

# wrk's script: `method` to `path`, the body `head .. n .. tail` with n counting the requests when
# `numbered` (a session's JSON-RPC ids), else `head`; counts the answers that are not 200 with
# `expected` in the body; prints one line of JSON at the end.
WRK_SCRIPT = """
local method, path, head, tail, numbered, expected = {method}, {path}, {head}, {tail}, {numbered}, {expected}
wrk.method = method
{headers}
-- `first` and `wrong` are globals: the main state sets and reads them in each thread's state.
local threads, counter = {{}}, 0
wrong = 0
function setup(thread) thread:set("first", #threads * 1000000000); table.insert(threads, thread) end
function request()
  if method == "GET" then return wrk.format(nil, path) end
  if not numbered then return wrk.format(nil, path, nil, head) end
  counter = counter + 1
  return wrk.format(nil, path, nil, head .. (first + counter) .. tail)
end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, expected, 1, true) then wrong = wrong + 1 end
end
function done(summary, latency, requests)
  local bad, e = 0, summary.errors
  for _, thread in ipairs(threads) do bad = bad + thread:get("wrong") end
  io.write(string.format('WRK {{"requests": %d, "micros": %d, "p50": %d, "p95": %d, "wrong": %d, "errors": %d}}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(95), bad,
    e.connect + e.read + e.write + e.status + e.timeout))
end
"""


def _lua(text: str) -> str:
    return "[==[" + text + "]==]"


def wrk_script(method: str, path: str, body: str | tuple[str, str], expected: str, headers: dict[str, str]) -> str:
    head, tail = body if isinstance(body, tuple) else (body, "")
    lines = "\n".join(f"wrk.headers[ {_lua(k)} ] = {_lua(v)}" for k, v in headers.items())
    return WRK_SCRIPT.format(method=_lua(method), path=_lua(path), head=_lua(head), tail=_lua(tail),
                             numbered="true" if isinstance(body, tuple) else "false", expected=_lua(expected), headers=lines)


@dataclass(frozen=True)
class Variant:
    name: str
    url: str
    script: Path
    connections: int


def run_wrk(variant: Variant, seconds: float) -> dict[str, float]:
    command = ["wrk", "-t1", f"-c{variant.connections}", f"-d{max(1, round(seconds))}s", "-s", str(variant.script), variant.url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    found = re.search(r"^WRK (\{.*\})$", done.stdout, re.MULTILINE)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"bench.request_path: wrk failed on {variant.name} ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    figures = json.loads(found.group(1))
    if figures["wrong"] or figures["errors"]:
        raise SystemExit(f"bench.request_path: {variant.name}: {figures['wrong']} answers were not 200 with the expected output"
                         f" and {figures['errors']} failed, of {figures['requests']}: the figures would not be of the work asked")
    return {"rate": figures["requests"] / figures["micros"] * 1e6, "requests": figures["requests"],
            "p50": figures["p50"] / 1e6, "p95": figures["p95"] / 1e6}


def variants(tmp: Path, toolsmith: str, floor: str, fastmcp: str, session: str) -> list[Variant]:
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    json_only = {"Content-Type": "application/json"}
    output, mcp_text = f'"output":{EXPECTED}', f'"text":"{EXPECTED}"'
    specs = [
        ("floor POST", floor, "POST", "/call", ARGUMENTS, output, json_only, (1, 4)),
        ("floor GET", floor, "GET", "/healthz", "", '"status"', {}, (1,)),
        ("floor in a worker", floor, "POST", "/call-in-worker", ARGUMENTS, output, json_only, (1,)),
        ("REST call", toolsmith, "POST", f"/api/v1/tools/{TOOL}/call", ARGUMENTS, output, auth, (1, 4)),
        ("healthz", toolsmith, "GET", "/healthz", "", '"status"', {}, (1,)),
        ("MCP session", toolsmith, "POST", "/mcp", mcp_call_body(None, meta=False), mcp_text,
         mcp_headers(HANDSHAKE_VERSION, session, token=True), (1,)),
        ("MCP stateless", toolsmith, "POST", "/mcp", mcp_call_body(None, meta=True), mcp_text,
         mcp_headers(STATELESS_VERSION, token=True), (1,)),
        ("FastMCP", fastmcp, "POST", "/mcp", mcp_call_body(None, meta=False), mcp_text, mcp_headers(HANDSHAKE_VERSION), (1,)),
    ]
    made = []
    for name, url, method, path, body, expected, headers, connections in specs:
        script = tmp / (re.sub(r"\W+", "-", name) + ".lua")
        script.write_text(wrk_script(method, path, body, expected, headers))
        made += [Variant(f"{name} ×{c}", url, script, c) for c in connections]
    return made


# -- the QuickJS floor -----------------------------------------------------------------------------


def quickjs_seconds(duration: float) -> float:
    """Seconds per bare QuickJS fresh context + eval of the tool, back to back for about `duration` s."""
    import _quickjs

    calls, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < duration or calls < 50:
        if _quickjs.Context().eval(BARE_SCRIPT) != EXPECTED:
            raise SystemExit("bench.request_path: the bare QuickJS floor did not answer 42")
        calls += 1
    return elapsed / calls


# -- where the time goes: py-spy -------------------------------------------------------------------


def cpu_seconds(pid: int, *, reaped: bool = False) -> float:
    """User + system CPU seconds of a process (all its threads), from /proc/PID/stat; with `reaped`,
    also those of its children that exited and that it waited for (a worker that was replaced)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if reaped else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """Every process under `pid` (the embedded sandbox's zygote and workers)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def children_cpu(pid: int) -> dict[int, float]:
    cpu = {}
    for child in descendants(pid):
        try:
            cpu[child] = cpu_seconds(child, reaped=True)
        except OSError:
            pass
    return cpu


class WorkersCpu:
    """The CPU seconds the processes under `pid` (the sandbox's zygote and workers) use while it runs,
    read every `every` s: a worker that exits (replaced; the kernel reaps it, so no one's `cutime`
    keeps its time) keeps what it had used at the last reading."""

    def __init__(self, pid: int, every: float = 0.1) -> None:
        self.pid, self.every = pid, every
        self.first: dict[int, float] = children_cpu(pid)
        self.last: dict[int, float] = dict(self.first)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> WorkersCpu:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()
        self.last |= children_cpu(self.pid)

    def _poll(self) -> None:
        while not self._done.wait(self.every):
            self.last |= children_cpu(self.pid)

    @property
    def seconds(self) -> float:
        """Each process's CPU in the window: since the first reading, or since its fork."""
        return sum(cpu - self.first.get(pid, 0.0) for pid, cpu in self.last.items())


def py_spy() -> str | None:
    for candidate in (Path(sys.executable).parent / "py-spy", shutil.which("py-spy")):
        if candidate and Path(candidate).exists():
            return str(candidate)
    return None


def profile_server(server: Server, variant: Variant, seconds: float, tmp: Path, progress: Progress, *,
                   profile_out: Path | None = None, hot_frames: int = 0) -> tuple[list[Row], str]:
    """py-spy on the server while wrk loads `variant` (the REST call, unless --profile names another); rows of CPU µs per request per layer."""
    spy = py_spy()
    pid = server.process.pid  # type: ignore[union-attr]
    if spy is None:
        return [], "py-spy is not installed (pip install -e '.[bench]')"
    raw = tmp / "profile.txt"
    duration = max(2, round(seconds))
    progress(f"profile: py-spy --gil on pid {pid} for {duration} s while wrk loads {variant.name}")
    # One window for everything: wrk and py-spy start together for the same time, and the process's
    # CPU is read before both and after both; the requests are those wrk was answered in it (each
    # checked), so CPU ÷ requests is the cost of one, and the samples say how it divides.
    with WorkersCpu(pid) as workers:
        cpu_before, started = cpu_seconds(pid), time.perf_counter()
        wrk = subprocess.Popen(["wrk", "-t1", f"-c{variant.connections}", f"-d{duration}s", "-s", str(variant.script), variant.url],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            spied = subprocess.run([spy, "record", "--pid", str(pid), "--duration", str(duration), "--rate", "250", "--gil",
                                    "--format", "raw", "--output", str(raw), "--nonblocking"],
                                   capture_output=True, text=True, timeout=duration + 60)
        finally:
            out, _ = wrk.communicate(timeout=duration + 60)
        window = time.perf_counter() - started
        cpu_after = cpu_seconds(pid)
    found = re.search(r"^WRK (\{.*\})$", out, re.MULTILINE)
    if found is None:
        raise SystemExit(f"bench.request_path: wrk failed while profiling:\n{out}")
    figures = json.loads(found.group(1))
    if figures["wrong"] or figures["errors"]:
        raise SystemExit(f"bench.request_path: wrong answers while profiling: {found.group(1)}")
    if spied.returncode != 0 or not raw.exists():
        return [], f"py-spy could not sample the server (ptrace refused?): {spied.stderr.strip()[-400:]}"
    lines = raw.read_text().splitlines()
    samples = fold(lines)
    if profile_out is not None:
        shutil.copyfile(raw, profile_out)
    hot = hottest(lines, hot_frames) if hot_frames else {}
    requests = figures["requests"]
    cpu = cpu_after - cpu_before
    how = (f"py-spy record --gil --rate 250 on the real server: {sum(samples.values()):,} samples (GIL held) in {window:.1f} s, "
           f"{requests:,} requests, the API process used {cpu:.2f} CPU s ({cpu / window:.0%} of a core)")
    if hot:
        total = sum(samples.values()) or 1
        how += "".join(f"\n  {layer}: " + ", ".join(f"{frame} {count / total:.1%}" for frame, count in frames)
                       for layer, frames in sorted(hot.items(), key=lambda item: -samples[item[0]]))
    return layer_rows(samples, cpu, requests, workers.seconds, f"{requests:,} requests, {cpu:.2f} CPU s"), how


def layer_rows(samples: Counter[str], cpu: float, requests: int, workers_cpu: float | None, summary: str) -> list[Row]:
    total = sum(samples.values()) or 1
    per_request = cpu / max(requests, 1)
    rows = []
    for name in [name for name, _ in LAYERS] + [OTHER]:
        share = samples.get(name, 0) / total
        rows.append(Row(f"  {name}", f"{share * per_request * 1e6:,.0f} µs/request", f"{share:.1%} of the samples", None, "", None, ""))
    rows.append(Row("  = the API process, in all", f"{per_request * 1e6:,.0f} µs/request", summary, None, "", None, ""))
    if workers_cpu is not None:
        rows.append(Row("  + the sandbox's worker processes (QuickJS)", f"{workers_cpu / max(requests, 1) * 1e6:,.0f} µs/request",
                        "their own /proc CPU, same window", None, "", None, ""))
    return rows


def in_process_app(tmp: str) -> tuple[Any, Any]:
    """The services and the app as `make run` makes them (embedded defaults, the limiters on and out
    of reach), in this process, with their data in `tmp`: the in-process measurements' server."""
    from entrypoints.compose import bootstrap
    from entrypoints.web import create_app
    from infrastructure.settings import Settings

    os.environ.pop("SQLITE_DBNAME", None)
    settings = Settings(data_dir=tmp, admin_token=TOKEN, persistence_module="eventsourcing.sqlite", sandbox_url="embedded",
                        rate_per_second=float(UNREACHED_RATE), rate_burst=int(UNREACHED_BURST),
                        tenant_rate_per_second=float(UNREACHED_RATE), tenant_rate_burst=int(UNREACHED_BURST))
    services = bootstrap(settings)
    return services, create_app(services)


def profile_in_process(progress: Progress, calls: int) -> tuple[list[Row], str]:
    """The fallback when py-spy cannot attach: the same app (bootstrap + create_app, embedded
    defaults, the limiters on and out of reach) in this process, `calls` REST calls through an
    in-process ASGI client under cProfile."""
    import anyio

    progress(f"profile (fallback): cProfile of {calls} in-process ASGI calls")
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        services, app = in_process_app(tmp)
        # The event loop thread's CPU (not the wall clock: its waits are no one's work). The worker
        # thread that carries the call to the sandbox is not seen by this profiler: py-spy sees it.
        profiler = cProfile.Profile(time.thread_time)

        async def drive() -> tuple[float, int]:
            transport = httpx.ASGITransport(app=app)
            headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers) as http:
                tool = {"inputParameters": [{"name": "n", "type": "integer", "required": True, "description": "n"}], "exposeInChat": True}
                await http.post("/api/v1/admin/code-modules", json={"id": TOOL, "description": "Adds one to n.", "draftContent": SOURCE, "tool": tool})
                await http.post(f"/api/v1/admin/code-modules/{TOOL}/publish")
                for _ in range(50):
                    await http.post(f"/api/v1/tools/{TOOL}/call", content=ARGUMENTS)
                cpu = time.thread_time()
                profiler.enable()
                for _ in range(calls):
                    answer = await http.post(f"/api/v1/tools/{TOOL}/call", content=ARGUMENTS)
                    if answer.status_code != 200 or answer.json().get("output") != EXPECTED:
                        raise SystemExit(f"bench.request_path: the in-process call answered {answer.status_code}: {answer.text}")
                profiler.disable()
                return time.thread_time() - cpu, calls

        try:
            cpu, served = anyio.run(drive)
        finally:
            services.close()
    seconds = fold_profile(pstats.Stats(profiler))
    # cProfile's clock is the process's; the client's own code (httpx) is in "other" here.
    total = sum(seconds.values()) or 1
    samples = Counter({name: round(value / total * 1_000_000) for name, value in seconds.items()})
    how = (f"cProfile of {served} in-process ASGI calls, the event loop thread's CPU only ({cpu:.2f} s under the profiler; "
           "httpx's ASGI client is in 'other', the worker thread of the hop to the sandbox is not seen)")
    return layer_rows(samples, cpu, served, None, f"{served:,} requests, {cpu:.2f} CPU s"), how


# -- CPU per request per path, in process ----------------------------------------------------------


def _asgi_scope(method: str, path: str, headers: dict[str, str], body: bytes) -> dict[str, object]:
    lines = [(b"host", b"127.0.0.1:8000")] + [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    if body:
        lines.append((b"content-length", str(len(body)).encode()))
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1", "method": method,
            "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"", "headers": lines,
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000), "state": {}}


async def _asgi_request(app: object, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
    """One request straight to the ASGI app (no HTTP client, no server: what is measured is the app's)."""
    import anyio

    sent: list[dict[str, object]] = []
    given = False

    async def receive() -> dict[str, object]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    await app(_asgi_scope(method, path, headers, body), receive, send)  # type: ignore[operator]
    head = {k.decode(): v.decode() for k, v in sent[0]["headers"]}  # type: ignore[union-attr]
    return sent[0]["status"], head, b"".join(m.get("body", b"") for m in sent[1:])  # type: ignore[return-value,misc]


def cpu_in_process(progress: Progress, calls: int, rounds: int) -> list[Row]:
    """CPU per request of the REST call and of MCP's tools/call in both eras, the same app (bootstrap +
    create_app with its lifespan, embedded defaults, the limiters on and out of reach) in this process,
    each request handed straight to the ASGI app: the event loop thread's CPU (time.thread_time) over
    `calls` requests per path per round, the paths interleaved in a rotated order, medians of the
    rounds. On a loaded machine this holds where wrk's rates do not: another process's load takes
    wall time, not this thread's CPU. (uvicorn's part, the same for every path but for the size of
    the head and body, is not in it; the sandbox's worker processes are not either.)"""
    import anyio

    progress(f"in process: CPU per request, {rounds} rounds × {calls} requests per path")
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        services, app = in_process_app(tmp)
        auth = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}

        async def drive() -> dict[str, list[float]]:
            async with app.router.lifespan_context(app):
                tool = {"inputParameters": [{"name": "n", "type": "integer", "required": True, "description": "n"}], "exposeInChat": True}
                module = {"id": TOOL, "description": "Adds one to n.", "draftContent": SOURCE, "tool": tool}
                await _asgi_request(app, "POST", "/api/v1/admin/code-modules", auth, json.dumps(module).encode())
                await _asgi_request(app, "POST", f"/api/v1/admin/code-modules/{TOOL}/publish", auth, b"")
                initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": {"name": "bench.request_path", "version": "1"}}}
                _, head, _ = await _asgi_request(app, "POST", "/mcp", auth | {"accept": "application/json, text/event-stream"},
                                                 json.dumps(initialize).encode())
                session = head["mcp-session-id"]
                await _asgi_request(app, "POST", "/mcp", mcp_headers(HANDSHAKE_VERSION, session, token=True),
                                    b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
                paths = {
                    "REST call": ("POST", f"/api/v1/tools/{TOOL}/call", auth, ARGUMENTS.encode(), f'"output":{EXPECTED}'),
                    "MCP session": ("POST", "/mcp", mcp_headers(HANDSHAKE_VERSION, session, token=True),
                                    str(mcp_call_body(7, meta=False)).encode(), f'"text":"{EXPECTED}"'),
                    "MCP stateless": ("POST", "/mcp", mcp_headers(STATELESS_VERSION, token=True),
                                      str(mcp_call_body(7, meta=True)).encode(), f'"text":"{EXPECTED}"'),
                }
                for name, (method, path, headers, body, expected) in paths.items():
                    for _ in range(max(50, calls // 4)):  # warm: the offer kept, the verdicts cached
                        status, _, answer = await _asgi_request(app, method, path, headers, body)
                        if status != 200 or expected.encode() not in answer:
                            raise SystemExit(f"bench.request_path: in process, {name} answered {status}: {answer[:300]!r}")
                cpu: dict[str, list[float]] = {name: [] for name in paths}
                for r in range(rounds):
                    for name in rotated(list(paths), r):  # type: ignore[arg-type]
                        method, path, headers, body, _ = paths[name]
                        started = time.thread_time()
                        for _ in range(calls):
                            await _asgi_request(app, method, path, headers, body)
                        cpu[name].append((time.thread_time() - started) / calls)
                return cpu

        try:
            cpu = anyio.run(drive)
        finally:
            services.close()
    rest = median(cpu["REST call"])
    rows = [Row("in process: CPU per request of the event loop thread (no HTTP server)", "", "", None, "", None, "")]
    for name, values in cpu.items():
        # each round's REST CPU over this path's (as a rate ratio: above 1, cheaper than REST), their median
        ratios = [r / v for v, r in zip(values, cpu["REST call"])]
        q1, q3 = quartiles(ratios)
        rows.append(Row(f"  {name}", f"{median(values) * 1e6:,.0f} µs/request", f"REST {rest * 1e6:,.0f} µs", median(ratios),
                        "(REST's CPU / this path's, per round: as a rate ratio)", None, f"IQR {q1:.2f}–{q3:.2f}"))
    return rows


# -- the run ---------------------------------------------------------------------------------------


def measure(variant_list: list[Variant], args: argparse.Namespace, progress: Progress) -> tuple[dict[str, list[dict[str, float]]], list[float]]:
    progress(f"warming up {args.warmup:g} s per variant")
    for variant in variant_list:
        run_wrk(variant, args.warmup)
    runs: dict[str, list[dict[str, float]]] = {v.name: [] for v in variant_list}
    quickjs: list[float] = []
    progress(f"{args.rounds} rounds × {args.seconds:g} s per variant ({len(variant_list)} variants), the order rotated")
    for r in range(args.rounds):
        for variant in rotated(variant_list, r):  # type: ignore[arg-type]
            runs[variant.name].append(run_wrk(variant, args.seconds))
        quickjs.append(quickjs_seconds(0.3))
        progress(f"  round {r + 1}/{args.rounds}: " + ", ".join(f"{n} {runs[n][-1]['rate']:,.0f}/s" for n in runs)
                 + f", QuickJS {quickjs[-1] * 1e6:.0f} µs")
    return runs, quickjs


def rows_of(runs: dict[str, list[dict[str, float]]], quickjs: list[float]) -> list[Row]:
    """The table's figures: medians of the rounds, each ratio with the spread of its per-round ratios."""
    def rates(name: str) -> list[float]:
        return [run["rate"] for run in runs[name]]

    def rate(name: str) -> float:
        return median(rates(name))

    def spread(ours: list[float], bases: list[float]) -> str:
        q1, q3 = quartiles([o / b for o, b in zip(ours, bases)])
        return f"IQR {q1:.2f}–{q3:.2f}"

    floor_rate_1 = rate("floor POST ×1")
    quickjs_time = median(quickjs)
    floor_time = 1 / floor_rate_1 + quickjs_time
    floor = 1 / floor_time
    floor_per_round = [1 / (1 / r + q) for r, q in zip(rates("floor POST ×1"), quickjs)]
    ceiling = rate("floor in a worker ×1")
    rest_1, rest_4 = rate("REST call ×1"), rate("REST call ×4")
    p95 = median([run["p95"] for run in runs["REST call ×4"]])
    p50_1 = median([run["p50"] for run in runs["REST call ×1"]])
    healthz, bare_get = rate("healthz ×1"), rate("floor GET ×1")
    q1, q3 = quartiles(quickjs)
    rows = [
        Row("floor (a): bare FastAPI POST /call, 1 conn", f"{floor_rate_1:,.0f}/s", f"4 conn {rate('floor POST ×4'):,.0f}/s",
            rate("floor POST ×4") / floor_rate_1, "(4 conn / 1 conn, informative)", None,
            spread(rates("floor POST ×4"), rates("floor POST ×1"))),
        Row("floor (b): bare QuickJS fresh context + eval", f"{quickjs_time * 1e6:,.0f} µs/call", "in this process", None, "", None,
            f"IQR {q1 * 1e6:.0f}–{q3 * 1e6:.0f} µs"),
        Row("floor: 1/(a) + (b)", f"{floor:,.0f}/s", f"{floor_time * 1e6:,.0f} µs/call", None, "", None, ""),
        Row("ceiling: (a) asking a bare QuickJS worker process", f"{ceiling:,.0f}/s", f"floor {floor:,.0f}/s", ceiling / floor,
            "(the most a sandbox out of the API's process reaches)", None, spread(rates("floor in a worker ×1"), floor_per_round)),
        Row("REST POST /api/v1/tools/addOne/call, 1 conn", f"{rest_1:,.0f}/s (p50 {p50_1 * 1e3:.2f} ms)", f"floor {floor:,.0f}/s",
            rest_1 / floor, f"≥ {GOAL_REST} × floor", rest_1 / floor >= GOAL_REST, spread(rates("REST call ×1"), floor_per_round)),
        Row("REST call vs the ceiling, 1 conn", f"{rest_1:,.0f}/s", f"ceiling {ceiling:,.0f}/s", rest_1 / ceiling,
            "(informative)", None, spread(rates("REST call ×1"), rates("floor in a worker ×1"))),
        Row("REST call, 4 conn vs 1 conn", f"{rest_4:,.0f}/s (p95 {p95 * 1e3:.2f} ms)", f"1 conn {rest_1:,.0f}/s",
            rest_4 / rest_1, f"≥ {GOAL_SCALING}", rest_4 / rest_1 >= GOAL_SCALING, spread(rates("REST call ×4"), rates("REST call ×1"))),
        Row("GET /healthz, 1 conn", f"{healthz:,.0f}/s", f"bare GET {bare_get:,.0f}/s", healthz / bare_get, f"≥ {GOAL_HEALTHZ}",
            healthz / bare_get >= GOAL_HEALTHZ, spread(rates("healthz ×1"), rates("floor GET ×1"))),
    ]
    for name, what in (("MCP session", f"handshake session, {HANDSHAKE_VERSION}"), ("MCP stateless", f"stateless, {STATELESS_VERSION}")):
        ours = rate(f"{name} ×1")
        rows.append(Row(f"MCP tools/call, {what}, 1 conn", f"{ours:,.0f}/s", f"REST {rest_1:,.0f}/s", ours / rest_1,
                        f"≥ {GOAL_MCP} × REST", ours / rest_1 >= GOAL_MCP, spread(rates(f"{name} ×1"), rates("REST call ×1"))))
    fastmcp = rate("FastMCP ×1")
    for name, what in (("MCP stateless", "stateless"), ("MCP session", "session")):
        ours = rate(f"{name} ×1")
        rows.append(Row(f"Toolsmith MCP ({what}) vs FastMCP (stateless, JSON), 1 conn", f"{ours:,.0f}/s", f"FastMCP {fastmcp:,.0f}/s",
                        ours / fastmcp, f"≥ {GOAL_FASTMCP} × FastMCP", ours / fastmcp >= GOAL_FASTMCP,
                        spread(rates(f"{name} ×1"), rates("FastMCP ×1"))))
    return rows


def access_log_rows(tmp: Path, taken: set[int], server: Server, args: argparse.Namespace, progress: Progress) -> list[Row]:
    """The access log's cost measured by switching it off: a second `toolsmith serve`, the same but
    at TOOLSMITH_LOG_LEVEL=WARNING (no access line, no info line), and the REST call ×1 on each in
    alternating rounds; each server's CPU per request (its process, /proc) and its rate. The
    profile's logging row is a share of the samples (a sample taken while the API thread holds the
    GIL but waits for a core counts where it stands); this row is the same cost as a difference."""
    progress("the access log, measured: the REST call on a second server with it off (TOOLSMITH_LOG_LEVEL=WARNING)")
    quiet = start_toolsmith(tmp, port_in_range(taken), log_level="WARNING")
    try:
        publish_tool(quiet)
        arms = {"on": server, "off": quiet}
        scripts: dict[str, Variant] = {}
        for arm, each in arms.items():
            folder = tmp / f"wrk-{arm}"  # wrk's scripts of the arm's server
            folder.mkdir(exist_ok=True)
            scripts[arm] = next(v for v in variants(folder, each.url, each.url, each.url, "") if v.name == "REST call ×1")
        for variant in scripts.values():
            run_wrk(variant, args.warmup)
        cpu: dict[str, list[float]] = {"on": [], "off": []}
        rates: dict[str, list[float]] = {"on": [], "off": []}
        for r in range(args.rounds):
            for arm in (("on", "off") if r % 2 == 0 else ("off", "on")):
                pid = arms[arm].process.pid  # type: ignore[union-attr]
                before = cpu_seconds(pid)
                done = run_wrk(scripts[arm], args.seconds)
                cpu[arm].append((cpu_seconds(pid) - before) / done["requests"])
                rates[arm].append(done["rate"])
    finally:
        quiet.stop()
    on, off = median(cpu["on"]), median(cpu["off"])
    q1, q3 = quartiles([(a - b) * 1e6 for a, b in zip(cpu["on"], cpu["off"])])
    rate_on, rate_off = median(rates["on"]), median(rates["off"])
    return [Row("the access log, measured: API CPU per request with it on less off (REST call, 1 conn)",
                f"{(on - off) * 1e6:,.0f} µs/request", f"on {on * 1e6:,.0f} µs, off {off * 1e6:,.0f} µs", rate_on / rate_off,
                "(informative: calls/s on / off)", None, f"IQR {q1:.0f}–{q3:.0f} µs; {rate_on:,.0f}/s on, {rate_off:,.0f}/s off")]


def api_tools_rows(args: argparse.Namespace, progress: Progress) -> list[Row]:
    """bench.api_tools's own measurement (its owner keeps it), its 8-caller row."""
    if args.skip_api_tools:
        return [Row("API URL tool vs httpx directly, 8 callers", "not measured (--skip-api-tools)", "", None, "", None, "")]
    from bench import api_tools

    progress("bench.api_tools (its own servers)")
    try:
        rows, _ = api_tools.run(["--quick"] if args.quick else [], quiet=True)
    except (Exception, SystemExit) as failed:  # its own failure is reported, not this bench's
        return [Row("API URL tool vs httpx directly, 8 callers", f"not measured: bench.api_tools failed ({failed})", "", None, "", None, "")]
    return [Row(f"API URL tool, {row.figure} (bench.api_tools)", row.ours, row.baseline, row.ratio, row.goal, row.meets, row.spread)
            for row in rows if "8 concurrent" in row.figure]


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    args = parse_args(argv)
    progress = Progress("request_path", quiet=quiet)
    if shutil.which("wrk") is None:
        raise SystemExit("bench.request_path: wrk is needed: apt-get install -y wrk (`make bench` installs it when missing)")
    python = peers_python(progress)
    taken: set[int] = set()
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as name:
        tmp = Path(name)
        progress("starting toolsmith serve, the bare FastAPI floor and the FastMCP peer")
        server = start_toolsmith(tmp, port_in_range(taken))
        processes: list[subprocess.Popen] = []
        try:
            publish_tool(server)
            floor_port, fastmcp_port = port_in_range(taken), port_in_range(taken)
            processes.append(start_floor(tmp, floor_port))
            processes.append(start_fastmcp(tmp, fastmcp_port, python))
            session = open_session(server.url)
            variant_list = variants(tmp, server.url, f"http://127.0.0.1:{floor_port}", f"http://127.0.0.1:{fastmcp_port}", session)
            runs, quickjs = measure(variant_list, args, progress)
            for process in processes:
                stop(process)  # the profile's machine: the server and wrk only
            processes = []
            profiled = next((v for v in variant_list if v.name == args.profile), None)
            if profiled is None:
                raise SystemExit(f"bench.request_path: --profile {args.profile!r} is none of: "
                                 + ", ".join(v.name for v in variant_list if v.url == server.url))
            if args.in_process_profile:
                layer_table, how = [], "--in-process-profile asked for the fallback"
            else:
                layer_table, how = profile_server(server, profiled, args.profile_seconds, tmp, progress,
                                                  profile_out=args.profile_out, hot_frames=args.hot)
            logging_rows = access_log_rows(tmp, taken, server, args, progress)
        finally:
            for process in processes:
                stop(process)
            server.stop()
    profiled = args.profile.replace(" ×", ", ") + " conn"
    if not layer_table:
        progress(f"WARNING: {how}; falling back to cProfile of an in-process ASGI run of the same app")
        layer_table, how = profile_in_process(progress, 400 if args.quick else 1500)
        how = f"FALLBACK ({how}), not py-spy on the real server"
        profiled = "REST call, 1 conn"  # the fallback's calls are REST's
    rows = rows_of(runs, quickjs)
    rows.append(Row(f"where the time goes: {profiled}, CPU per request by layer", "", "", None, "", None, ""))
    rows += layer_table
    rows += logging_rows
    rows += api_tools_rows(args, progress)
    if args.in_process_cpu:
        rows += cpu_in_process(progress, 300 if args.quick else 1000, 5 if args.quick else 9)
    return rows, {"args": vars(args), "profile": how, "load": " ".join(f"{x:.1f}" for x in os.getloadavg())}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.request_path", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (under 2 minutes)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 5, quick 2)")
    parser.add_argument("--seconds", type=float, help="wrk's time per variant per round, whole seconds (default 3, quick 1)")
    parser.add_argument("--warmup", type=float, default=1.0, help="untimed seconds per variant first (default 1)")
    parser.add_argument("--profile-seconds", type=float, help="py-spy's sampling window (default 15, quick 6)")
    parser.add_argument("--skip-api-tools", action="store_true", help="leave bench.api_tools's measurement out")
    parser.add_argument("--profile-out", type=Path, help="keep py-spy's raw profile (collapsed stacks) at this path")
    parser.add_argument("--profile", default="REST call ×1", metavar="VARIANT",
                        help="the variant py-spy samples the server under (default 'REST call ×1'; e.g. 'MCP stateless ×1')")
    parser.add_argument("--hot", type=int, default=0, metavar="N", help="print each layer's N hottest frames under the table")
    parser.add_argument("--in-process-cpu", action="store_true",
                        help="also the CPU per request of REST and MCP's two eras, in this process (steady on a loaded machine)")
    parser.add_argument("--in-process-profile", action="store_true",
                        help="profile with cProfile in this process (the fallback when py-spy cannot attach) instead of py-spy")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (2 if args.quick else 5)
    args.seconds = args.seconds or (1.0 if args.quick else 3.0)
    args.profile_seconds = args.profile_seconds or (6.0 if args.quick else 15.0)
    return args


NOTES = ("(where the time goes: each layer's share of the API process's samples × its CPU in the window ÷ the requests served, "
         "a sample in the innermost layer on its stack (bench/request_path.py LAYERS); the JavaScript runs in the sandbox's "
         "worker processes, counted apart; a sample is wall-clock time with the GIL held, so a thread waiting for a core "
         "counts where it stands: the access log's measured row is its cost as a difference, it on against off)")


def notes(info: dict[str, object]) -> str:
    """The notes under the table: how the profile was taken, in this run."""
    return f"{NOTES}\n(profile: {info['profile']})"


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    rows, info = run(argv)
    print(format_table(TITLE, rows))
    print(notes(info))
    print(f"({machine_line()}; load average {info['load']}; {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
