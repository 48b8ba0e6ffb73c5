"""`toolsmith examples list` and `toolsmith examples load <set>` (docs/examples.md)."""

from __future__ import annotations

import argparse
import os
import sys

DEFAULT_URL = "http://127.0.0.1:8000"


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    examples = commands.add_parser("examples", help="the examples gallery: sets of tools to load into a running Toolsmith")
    step = examples.add_subparsers(dest="action", required=True)
    step.add_parser("list", help="every set, with what it holds")
    load = step.add_parser("load", help="load a set through the REST API (idempotent: what exists is left as it is)")
    load.add_argument("name", help="the set's name (toolsmith examples list)")
    load.add_argument("--url", help=f"the service's base URL (default: $TOOLSMITH_URL, else {DEFAULT_URL})")
    load.add_argument("--token", help="an admin token (default: $TOOLSMITH_ADMIN_TOKEN)")


def examples_command(args: argparse.Namespace) -> int:
    import httpx

    from entrypoints import examples

    if args.action == "list":
        for name in examples.names():
            chosen = examples.load_set(name)
            print(f"{name:<18} {len(chosen.items):>2} items  {chosen.description}")
        return 0
    try:
        chosen = examples.load_set(args.name)
    except KeyError as missing:
        print(f"toolsmith examples load: {missing.args[0]}", file=sys.stderr)
        return 2
    url = (args.url or os.environ.get("TOOLSMITH_URL") or DEFAULT_URL).rstrip("/")
    token = args.token or os.environ.get("TOOLSMITH_ADMIN_TOKEN")
    if not token:
        print("toolsmith examples load: no admin token: give --token or set TOOLSMITH_ADMIN_TOKEN", file=sys.stderr)
        return 2
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60, trust_env=False) as client:
            created, existing = examples.load(chosen, client)
    except examples.LoadFailed as refused:
        print(f"toolsmith examples load {chosen.name}: {refused}", file=sys.stderr)
        return 1
    except httpx.HTTPError as error:
        print(f"toolsmith examples load {chosen.name}: {url}: {error.__class__.__name__}: {error}", file=sys.stderr)
        return 1
    print(f"{chosen.name}: {created} created, {existing} already there")
    return 0
