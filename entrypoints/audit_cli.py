"""`toolsmith audit verify|export|import` (docs/rules.md B5, docs/cli.md): the command-line side of
`infrastructure/audit.py`.

Each opens the event store alone, with `serve`'s settings (SQLite in the data dir, or PostgreSQL
through PERSISTENCE_MODULE and POSTGRES_*): no sandbox, no read model. Progress goes to stderr,
so that standard output holds only the report (verify) or the export. Exit codes: 0 done (verify:
every chain intact, every snapshot true to its events), 1 a broken chain or a snapshot that does
not match its events (verify) or a refusal (export, import), 2 settings that do not open a store.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from entrypoints.cli_common import _invalid, _refuse

BROKEN = 1
REFUSED = 1  # bad settings: 2, from `_refuse`


def audit_command(args: argparse.Namespace) -> int:
    from eventsourcing.persistence import PersistenceError
    from pydantic import ValidationError

    from entrypoints.compose import open_event_store
    from infrastructure import data_dir
    from infrastructure.audit import collection_paused
    from infrastructure.settings import Settings

    prog = f"toolsmith audit {args.action}"
    try:
        settings = Settings(**({"data_dir": args.data_dir} if args.data_dir else {}))
    except ValidationError as e:
        return _refuse(_invalid(e), prog)
    env = settings.event_store_env()
    if settings.persistence_module == "eventsourcing.sqlite":
        path = Path(env["SQLITE_DBNAME"])
        if args.action == "import":
            data_dir.prepare(settings)
            path.parent.mkdir(parents=True, exist_ok=True)
        elif not path.exists():
            # Opening would create an empty store, and a typo in --data-dir would then verify clean.
            return _refuse(f"no event store at {path} (check --data-dir or TOOLSMITH_DATA_DIR)", prog)
    try:
        app = open_event_store(settings)
    except (PersistenceError, ValueError, OSError) as e:
        return _refuse(f"cannot open the event store ({settings.persistence_module}): {_scrubbed(e)}", prog)
    from entrypoints.call_log import open_call_records

    calls = None
    try:
        # The call log beside the store (docs/calls.md): verified, exported and imported with it.
        calls = open_call_records(settings, app, create=args.action == "import")
        with collection_paused():
            if args.action == "verify":
                return _verify(app, calls)
            if args.action == "export":
                return _export(app, args.output, args.tenant, prog, calls)
            return _import(app, args.file, prog, calls)
    except PersistenceError as e:
        return _refuse(f"the event store failed: {_scrubbed(e)}", prog)
    finally:
        if calls is not None:
            calls.close()
        app.close()


def _verify(app: Any, calls: Any = None) -> int:
    from domain.calls import verify_calls
    from infrastructure import audit

    with _progress("verifying") as progress:
        report = audit.verify(app, progress)
    counted = f"{report.events:,} events of {report.aggregates:,} aggregates checked through position {report.through:,}"
    if report.snapshots:
        counted += f", and {report.snapshots:,} snapshot(s) against their events"
    if report.intact:
        print(f"intact: {counted}")
    else:
        print(f"broken: {report.first_broken}")
        print(f"  {len(report.broken):,} broken link(s) in all; {counted}")
    # The newest event of each aggregate has no successor to vouch for it: keep this and compare.
    print(f"heads digest: {report.heads_digest}", flush=True)
    if calls is None:
        print("calls: no call log in this data dir")
        return 0 if report.intact else BROKEN
    checked = verify_calls(calls.chains())
    counted = f"{checked.records:,} call records of {checked.tenants:,} tenant(s) checked"
    if checked.intact:
        print(f"calls intact: {counted}")
    else:
        print(f"calls broken: {checked.broken[0]}")
        for more in checked.broken[1:10]:
            print(f"  also: {more}")
        print(f"  {len(checked.broken):,} broken call record(s) in all; {counted}")
    # As with the events: the newest record of each chain has no successor; keep this and compare.
    print(f"calls digest: {checked.digest}", flush=True)
    return 0 if report.intact and checked.intact else BROKEN


def _export(app: Any, output: Path | None, tenant: str | None, prog: str, calls: Any = None) -> int:
    from entrypoints.compose import build_kinds
    from infrastructure import audit

    # The kinds of tool say whose events are whose (no sandbox or tools file needed for that).
    kinds = build_kinds(app) if tenant is not None else None

    try:
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(output.open("wb")) if output else sys.stdout.buffer
            with _progress("exporting") as progress:
                events = audit.export(app, out, tenant=tenant, kinds=kinds, progress=progress,
                                      calls=calls.chains() if calls is not None else None)
            out.flush()
    except BrokenPipeError:
        # The reader went away (`| head`): what it read was whole lines, the rest is not written.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _refused("the output was closed before the export ended", prog)
    except OSError as e:
        return _refused(f"cannot write {output}: {e.strerror or e}", prog)
    print(f"{prog}: {events:,} events written to {output or 'standard output'}", file=sys.stderr, flush=True)
    return 0


def _import(app: Any, file: Path, prog: str, calls: Any = None) -> int:
    from eventsourcing.persistence import PersistenceError

    from infrastructure import audit

    try:
        with contextlib.ExitStack() as stack:
            lines = sys.stdin.buffer if str(file) == "-" else stack.enter_context(file.open("rb"))
            with _progress("importing") as progress:
                events = audit.import_events(app, lines, progress=progress, call_store=calls)
    except audit.ImportRefused as e:
        return _refused(f"refused: {e}", prog)
    except OSError as e:
        return _refused(f"cannot read {file}: {e.strerror or e}", prog)
    except PersistenceError as e:
        return _refused(f"the event store failed during the import ({_scrubbed(e)}); it may hold part of it: "
                        "empty it before importing again", prog)
    print(f"{prog}: {events:,} events imported; `toolsmith audit verify` checks their chains", file=sys.stderr, flush=True)
    return 0


def _refused(reason: str, prog: str) -> int:
    _refuse(reason, prog)
    return REFUSED


@contextlib.contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A rich progress bar on stderr, with the rate in events per second. It appears at the first
    report, so that a refusal before any work prints no empty bar."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            elapsed = task.finished_time if task.finished else task.elapsed
            return Text(f"{task.completed / elapsed:,.0f} events/s" if elapsed else "… events/s")

    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), Rate(), TimeElapsedColumn())
    bar = Progress(*columns, console=Console(stderr=True))
    task = bar.add_task(label, total=None)

    def report(done: int, total: int) -> None:
        if not bar.live.is_started:
            bar.start()
        bar.update(task, completed=done, total=total)

    try:
        yield report
    finally:
        if bar.live.is_started:
            bar.stop()


def _scrubbed(error: Exception) -> str:
    """The error's message without the database password, should a driver repeat it."""
    message = " ".join(str(error).split())
    password = os.environ.get("POSTGRES_PASSWORD")
    return message.replace(password, "***") if password else message
