"""A fork server for `toolsmith` processes (the launcher's, testing/launcher.py): it imports what
`toolsmith serve` imports once, then forks a child for each command it is sent, which runs
`entrypoints.cli.main` as the `toolsmith` script would, with the command's own environment, working
directory and output file. A start then costs a fork and the bootstrap, not the ~2.5 s of CPU the
imports take (the MCP SDK's types, FastAPI, the kinds), which the tests paid for each of their
hundreds of servers.

Run by path (`python testing/forkserver.py FD`), not as a module: `testing` is not an installed
package, and the children's `sys.path` is the script's (the venv's bin first). It talks to its
launcher over the socket FD, one JSON object a line:

- launcher -> fork server: {"argv": [...], "env": {...}, "cwd": "...", "log": "..."}
- fork server -> launcher: {"ready": true} once the imports are done (or {"ready": false,
  "why": "..."} when a fork would not be safe: a thread already running); then {"pid": N, "serial": S}
  or {"error": "..."} for each command, in order (S counts the children: a pid may be reused), and
  {"exit": N, "serial": S, "code": C, "cpu": T} when child S has exited (C as
  `subprocess.Popen.returncode`: negative for a signal; T its CPU seconds and its children's).

It ends when the launcher's socket closes (the launcher's process is gone), stopping with SIGTERM
any child still running. A child is not the launcher's child: the launcher learns of its exit from
here (testing/launcher.py's `Forked`).
"""

from __future__ import annotations

import json
import os
import random
import selectors
import signal
import socket
import sys
import threading
import traceback

# What `toolsmith serve` (and `toolsmith sandbox`, `projections run`) import, the costly part of
# their start (entrypoints/cli.py's `_serve`), and uvicorn's "auto" loop and protocols.
PRELOAD = (
    "entrypoints.cli", "entrypoints.web", "entrypoints.compose", "entrypoints.kinds", "entrypoints.sandbox_service",
    "api.paths", "infrastructure.logs", "infrastructure.declared_tools", "infrastructure.settings",
    "eventsourcing.persistence", "pydantic", "uvicorn", "uvicorn.main", "uvicorn.config", "uvicorn.server",
    "uvicorn.loops.auto", "uvicorn.loops.uvloop", "uvicorn.protocols.http.auto", "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.websockets.auto", "uvicorn.lifespan.on", "uvloop", "httptools",
)
# The settings of the runner's environment that the scout (below) must not see (as the launcher's).
SETTING_PREFIXES = ("TOOLSMITH_", "OPENSEARCH_", "POSTGRES_", "CODESANDBOX_", "PERSISTENCE_", "OTEL_")


def _send(control: socket.socket, message: dict) -> None:
    control.sendall(json.dumps(message).encode() + b"\n")


def _scouted() -> list[str]:
    """The modules a start imports beyond PRELOAD (those `bootstrap` and `create_app` import when
    they need them: the egress client, the kinds' pages, the event store's): a forked child wires
    the embedded defaults on a scratch data dir, without any setting of the runner's, and names
    what it has imported."""
    import tempfile

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            for name in [k for k in os.environ if k.startswith(SETTING_PREFIXES) or k == "SQLITE_DBNAME"]:
                del os.environ[name]
            with tempfile.TemporaryDirectory() as scratch:
                from entrypoints.compose import bootstrap
                from entrypoints.web import create_app
                from infrastructure.settings import Settings

                services = bootstrap(Settings(data_dir=os.path.join(scratch, "data")))
                create_app(services)
                with os.fdopen(write, "w") as out:
                    out.write("\n".join(sorted(sys.modules)))
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as found:
        names = found.read().split()
    os.waitpid(pid, 0)
    return names


def _preload() -> str | None:
    """Imports PRELOAD and what a start imports beyond it; answers why a fork would not be safe, or None."""
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # an optional part (uvloop, httptools): the child imports what it finds, as the script does
    for name in sorted(set(_scouted()) - set(sys.modules), key=lambda name: name.count(".")):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module that only imports in its own order: the child imports it
            pass
    if threading.active_count() != 1:
        return f"a thread runs after the imports: {[t.name for t in threading.enumerate()]}"
    return None


def _child(request: dict, control: socket.socket, selector: selectors.BaseSelector) -> int:
    """In the forked child: becomes the `toolsmith` command of `request`; answers its exit code."""
    selector.close()
    control.close()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    random.seed()  # the fork server's state is every child's otherwise
    sys.argv = list(request["argv"])
    from entrypoints.cli import main

    try:
        code = main(sys.argv[1:])
    except SystemExit as exit_:
        code = exit_.code
    except BaseException:  # noqa: BLE001 - as the interpreter would: the traceback, then 1
        traceback.print_exc()
        code = 1
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def serve(control: socket.socket) -> int | None:
    """The fork server's loop; answers an exit code in a child (which then exits as a script would,
    atexit handlers and all), None in the fork server when its launcher is gone."""
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ, None)
    children: dict[int, int] = {}  # pidfd -> pid
    serials = iter(range(1, sys.maxsize))
    pending = b""
    while True:
        for key, _events in selector.select():
            if key.data is not None:  # a child's pidfd: it has exited
                pid, serial = key.data
                selector.unregister(key.fd)
                os.close(key.fd)
                children.pop(key.fd, None)
                _, status, usage = os.wait4(pid, 0)
                _send(control, {"exit": pid, "serial": serial, "code": os.waitstatus_to_exitcode(status),
                                "cpu": round(usage.ru_utime + usage.ru_stime, 3)})
                continue
            data = control.recv(1 << 16)
            if not data:
                for pid in children.values():
                    try:
                        os.kill(pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
                return None
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                sys.stdout.flush()
                sys.stderr.flush()
                try:
                    pid = os.fork()
                except OSError as e:
                    _send(control, {"error": f"fork: {e}"})
                    continue
                if pid == 0:
                    return _child(request, control, selector)
                serial = next(serials)
                pidfd = os.pidfd_open(pid)
                children[pidfd] = pid
                selector.register(pidfd, selectors.EVENT_READ, (pid, serial))
                _send(control, {"pid": pid, "serial": serial})


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C reaches the children; this one ends with its launcher
    sys.path[0] = os.path.dirname(sys.executable)  # as the `toolsmith` script's
    why = _preload()
    _send(control, {"ready": why is None, "why": why})
    if why is not None:
        return
    import gc

    gc.freeze()  # the imported objects stay shared with the children, not copied at their first collection
    code = serve(control)
    if code is not None:
        sys.stdout.flush()
        sys.exit(code)


if __name__ == "__main__":
    main()
