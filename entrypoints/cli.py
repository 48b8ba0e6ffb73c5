"""The `toolsmith` command (docs/cli.md)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

# NumPy's OpenBLAS (the vector searches, the tool index) runs one thread unless the operator says
# otherwise, set before NumPy is first imported: a matrix-vector product of a search is too small to
# share, and its threads, spinning for work on a busy machine, made a search several times slower
# (tool search's recall test: 5 s with one thread against 20 s with OpenBLAS's own, on 2 loaded cores).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from entrypoints.cli_common import _invalid, _refuse

if TYPE_CHECKING:
    from application.store import Store
    from infrastructure.settings import Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="toolsmith", description="Toolsmith: JavaScript tools for AI agents")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the API with the embedded defaults")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--data-dir", type=Path, help="where the event store and the admin token's hash live "
                       "(default: $TOOLSMITH_DATA_DIR, else ~/.local/share/toolsmith)")

    sandbox = commands.add_parser("sandbox", help="serve the code sandbox alone, for the API's CODESANDBOX_URL")
    sandbox.add_argument("--host", default="127.0.0.1")
    sandbox.add_argument("--port", type=int, default=8100)
    sandbox.add_argument("--insecure-dev", action="store_true",
                         help="accept calls without the shared secret when CODESANDBOX_SECRET is unset (development only)")

    projections = commands.add_parser("projections", help="the read models' projection runner (OpenSearch)")
    what = projections.add_subparsers(dest="action", required=True)
    what.add_parser("run", help="apply new events to the read models until stopped "
                    "(for API processes started with TOOLSMITH_PROJECTION_RUNNER=external)")
    # The kinds are not imported to build the parser (the sandbox service's start does not load them).
    rebuild = what.add_parser("rebuild", help="build a fresh module index from every event, then swap the alias to it "
                                                 "(with OPENSEARCH_URL); and what each kind of tool builds from the events "
                                                 "and what it keeps beside them (its own index)")
    rebuild.add_argument("--keep-old", action="store_true", help="keep the replaced index instead of deleting it")

    audit = commands.add_parser("audit", help="verify the hash chains (B5), export or import the event store as JSON lines")
    step = audit.add_subparsers(dest="action", required=True)
    data_dir = argparse.ArgumentParser(add_help=False)
    data_dir.add_argument("--data-dir", type=Path, help="the data dir of a SQLite event store (as for serve); "
                          "PERSISTENCE_MODULE=eventsourcing.postgres and POSTGRES_* select PostgreSQL instead")
    step.add_parser("verify", parents=[data_dir], help="recompute every hash chain; exit 1 and name the first broken link")
    export = step.add_parser("export", parents=[data_dir], help="every stored event as JSON lines, in log order")
    export.add_argument("--output", type=Path, help="the file to write (default: standard output)")
    export.add_argument("--tenant", help="only this tenant's modules, import graph and caller registry")
    imported = step.add_parser("import", parents=[data_dir], help="restore an export into an empty event store")
    imported.add_argument("file", type=Path, help="an export written by `toolsmith audit export` ('-': standard input)")

    from entrypoints.examples_cli import add_parser as add_examples

    add_examples(commands)

    args = parser.parse_args(argv)
    if args.command == "audit":
        from entrypoints.audit_cli import audit_command

        return audit_command(args)
    if args.command == "examples":
        from entrypoints.examples_cli import examples_command

        return examples_command(args)
    if args.command == "serve":
        return _serve(args)
    if args.command == "sandbox":
        return _sandbox(args)
    if args.command == "projections":
        return _projections(args)
    return 2


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from api.paths import ADMIN_API, OPERATOR_API
    from entrypoints.web import create_app
    from infrastructure import logs
    from entrypoints.compose import bootstrap
    from infrastructure.declared_tools import ToolsFileError
    from infrastructure.settings import Settings

    from eventsourcing.persistence import PersistenceError
    from pydantic import ValidationError

    overrides = {"data_dir": args.data_dir} if args.data_dir else {}
    try:
        settings = Settings(**overrides)
    except ValidationError as e:
        return _refuse(_invalid(e), "toolsmith serve")
    logs.configure(settings.log_level)
    # Whatever the service creates is its user's alone (the data dir 0700, its files 0600), also
    # a file some later part adds without saying so.
    os.umask(0o077)
    try:
        services = bootstrap(settings)
    except ToolsFileError as e:
        return _refuse(f"TOOLSMITH_TOOLS_FILE {e}", "toolsmith serve")
    except (ValueError, PersistenceError) as e:
        # A store that cannot be opened (settings missing, a server that does not answer).
        return _refuse(f"cannot open the event store ({settings.persistence_module}): {e}", "toolsmith serve")
    if services.new_admin_token:
        # Shown once, on the terminal that started the service; only its hash is kept.
        print(
            f"\n  Toolsmith admin token (shown once, keep it safe):\n\n    {services.new_admin_token}\n\n"
            f"  Try: curl -H 'Authorization: Bearer {services.new_admin_token}' "
            f"http://{args.host}:{args.port}{ADMIN_API}/code-modules\n",
            file=sys.stdout,
            flush=True,
        )
        services.new_admin_token = None
    if services.new_operator_token:
        print(
            f"\n  Toolsmith operator token (manages organizations; shown once, keep it safe):\n\n"
            f"    {services.new_operator_token}\n\n"
            f"  Try: curl -H 'Authorization: Bearer {services.new_operator_token}' "
            f"http://{args.host}:{args.port}{OPERATOR_API}/tenants\n",
            file=sys.stdout,
            flush=True,
        )
        services.new_operator_token = None
    print(f"  Data in {settings.data_dir}; serving on http://{args.host}:{args.port} (docs at /docs)", flush=True)
    # An MCP listen stream (2026 era) is a response that never ends by itself: a stop waits this
    # long for open requests, then drops them (a client re-listens), rather than forever.
    # The client's address (failed authentications count per address) is the connection's peer;
    # X-Forwarded-For only from TOOLSMITH_TRUSTED_PROXIES (uvicorn would trust 127.0.0.1's by default).
    # The access log is the app's own (entrypoints.web.Edge: one line per request, at no cost when
    # its level is off), under uvicorn's logger name. The event loop and the HTTP parser are
    # uvicorn's "auto": uvloop and httptools, which uvicorn[standard] installs, the fastest of
    # uvicorn's choices (a bare FastAPI POST, API-process CPU per request at one connection: about
    # 165 µs; 200 on asyncio's loop; 285 with h11); granian was slower at one connection. One
    # process, no workers: the embedded defaults (the in-memory read models, rate buckets and MCP
    # sessions) are one process's state (docs/deployment.md).
    uvicorn.run(create_app(services), host=args.host, port=args.port, log_config=None, access_log=False,
                timeout_graceful_shutdown=5, proxy_headers=bool(settings.trusted_proxies),
                forwarded_allow_ips=settings.trusted_proxies or None)
    return 0


def _sandbox(args: argparse.Namespace) -> int:
    """The sandbox service (docs/sandbox.md, docs/cli.md). It refuses to start on a configuration it cannot honour,
    with one line saying which setting to fix, rather than fail on the first call."""
    import uvicorn
    from pydantic import ValidationError

    from infrastructure import logs
    from infrastructure.settings import Settings
    from entrypoints.sandbox_service import create_sandbox_app
    from sandbox.factory import embedded_sandbox
    from sandbox.capabilities import UnknownProfile
    from sandbox.config import sandbox_config

    try:
        settings = Settings()
    except ValidationError as e:
        return _refuse(_invalid(e))
    secret = settings.sandbox_secret.get_secret_value() if settings.sandbox_secret else ""
    if not secret and not args.insecure_dev:
        return _refuse("CODESANDBOX_SECRET is not set: set it to the secret the API presents, "
                       "or pass --insecure-dev to accept calls without one (development only)")
    config = sandbox_config(settings)
    try:
        config.capabilities
    except UnknownProfile as e:
        return _refuse(f"CODESANDBOX_CAPABILITY_PROFILE: {e}")
    allow_list_error = _allow_list_error(config.allowed_domains)
    if allow_list_error:
        return _refuse(f"CODESANDBOX_ALLOWED_DOMAINS: {allow_list_error}")

    logs.configure(settings.log_level)
    address = f"http://{args.host}:{args.port}"
    if not secret:
        print(f"\n  WARNING: --insecure-dev: the code sandbox accepts calls WITHOUT a secret.\n"
              f"  Anyone who can reach {address} can run code on this machine. Never use this outside development.\n",
              file=sys.stderr, flush=True)
    elif args.insecure_dev:
        print("  --insecure-dev is ignored: CODESANDBOX_SECRET is set, and every call must present it", file=sys.stderr, flush=True)
    # The pool as `serve`'s embedded sandbox makes it (entrypoints.compose.sandbox_pool), without
    # importing the whole service for it: compose took 4.9 s to import, over half the start.
    sandbox = embedded_sandbox(sandbox_config(settings))
    try:
        app = create_sandbox_app(sandbox, secret=secret or None, insecure=not secret, config=config)
        print(f"  Code sandbox serving on {address} (profile {config.capability_profile}, "
              f"{config.max_active_sessions} sessions)", flush=True)
        # The API's client drops idle connections after 30 s: the server keeps them longer, so a
        # reused connection is never one the server is closing.
        uvicorn.run(app, host=args.host, port=args.port, log_config=None, access_log=False, timeout_keep_alive=75)
    finally:
        close = getattr(sandbox, "close", None)
        if close is not None:
            close()
    return 0


def _projections(args: argparse.Namespace) -> int:
    """`projections run` and `projections rebuild` (docs/cli.md); both need OPENSEARCH_URL, since
    the in-memory read model lives inside each API process and is rebuilt at its start."""
    import signal
    import threading

    from eventsourcing.persistence import PersistenceError
    from opensearchpy.exceptions import OpenSearchException
    from pydantic import ValidationError

    from entrypoints.compose import build_read_model, build_runner, open_event_store, store_channels
    from infrastructure import logs
    from infrastructure.settings import Settings
    from projections.store_identity import store_identity
    from projections.interface import ReadModelUnavailable
    from projections.opensearch import OpenSearchModuleReadModel

    prog = f"toolsmith projections {args.action}"
    try:
        settings = Settings()
    except ValidationError as e:
        return _refuse(_invalid(e), prog)
    if settings.opensearch_url is None and args.action != "rebuild":
        return _refuse("OPENSEARCH_URL is not set; the in-memory read model needs no runner: "
                       "each API process rebuilds it at start", prog)
    logs.configure(settings.log_level)

    try:
        app = open_event_store(settings)
    except PersistenceError as e:
        return _refuse(f"cannot open the event store ({settings.persistence_module}): {e}", prog)
    try:
        if args.action == "rebuild":
            if settings.opensearch_url is not None:
                _rebuild(app, settings, args.keep_old)
            else:
                print("  the module read model is in memory (no OPENSEARCH_URL): each API process rebuilds it at start", flush=True)
            return _rebuild_kinds(app, settings)
        # Like the API's own runner, it rebuilds an index that holds another event store's documents.
        identity = store_identity(app)
        view = build_read_model(settings, identity)
        assert isinstance(view, OpenSearchModuleReadModel)
        if os.environ.get("TOOLSMITH_FAILPOINT") == "kill-after-documents":
            # For the fault tests only: dies between a batch's documents and its tracking position.
            view.on_documents_written = lambda: os.kill(os.getpid(), signal.SIGKILL)
        # On PostgreSQL it wakes on each write and announces each position to the API processes.
        channels = store_channels(settings, app, identity)
        # It proves it is alive to the API processes by a heartbeat in the index (issue 28, 11).
        runner = build_runner(app, view, poll_seconds=settings.projection_poll_seconds, channels=channels, announce=True,
                              heartbeat_seconds=settings.projection_heartbeat_seconds)
        stopped = threading.Event()
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, lambda *_: stopped.set())
        runner.start()
        print(f"  {prog}: following the event log from position {runner.position()}", flush=True)
        stopped.wait()
        runner.stop()
        if channels is not None:
            channels.close()
        view.close()
        return 0
    except (ReadModelUnavailable, OpenSearchException) as e:
        return _refuse(f"OpenSearch: {e}", prog)
    finally:
        app.close()


def _rebuild(app: Store, settings: Settings, keep_old: bool) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from entrypoints.compose import opensearch_client
    from projections.store_identity import store_identity
    from projections.rebuild import rebuild

    alias = settings.opensearch_index
    columns = (TextColumn(f"rebuilding {alias}"), BarColumn(), MofNCompleteColumn(), TextColumn("events"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task(alias, total=None)
        done = rebuild(app, opensearch_client(settings), alias, replicas=settings.opensearch_replicas, keep_old=keep_old,
                       progress=lambda position, head: bar.update(task, completed=position, total=head),
                       store=store_identity(app))
    replaced = ", ".join(done.replaced) or "nothing"
    print(f"  {done.events} events applied to {done.index} (position {done.position}); "
          f"the alias {alias} now points to it, replacing {replaced}", flush=True)
    return 0


def _rebuild_kinds(app: Store, settings: Settings) -> int:
    """What each kind makes again from the events and what it keeps beside them (`KindPlugin.rebuild`),
    one after the other, each with its progress and the line it answers."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from entrypoints.compose import build_kinds, kind_resources
    from entrypoints.kinds import DEFAULT_KINDS

    plugins = [plugin for plugin in DEFAULT_KINDS if plugin.rebuild is not None]
    if not plugins:
        return 0
    kinds = build_kinds(app, resources=kind_resources(settings, app, plugins))
    try:
        for plugin in plugins:
            assert plugin.rebuild is not None
            step = plugin.rebuild
            columns = (TextColumn(f"rebuilding {step.what}"), BarColumn(), MofNCompleteColumn(), TextColumn(step.unit),
                       TimeElapsedColumn())
            with Progress(*columns, console=Console(stderr=True)) as bar:
                task = bar.add_task(step.what, total=None)
                done = step.run(kinds.of(plugin.call_type), lambda done, total: bar.update(task, completed=done, total=total))
            print(f"  {done}", flush=True)
    finally:
        kinds.close()
    return 0


def _allow_list_error(domains: str) -> str | None:
    """Why `CODESANDBOX_ALLOWED_DOMAINS` cannot be used, or None."""
    from infrastructure.egress.policy import AllowList

    try:
        AllowList.parse(domains)
    except ValueError as e:
        return str(e)
    return None


if __name__ == "__main__":
    raise SystemExit(main())
