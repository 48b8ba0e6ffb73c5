"""The `toolsmith` command (DESIGN §9)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="toolsmith", description="Toolsmith: JavaScript tools for AI agents")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the API with the embedded defaults")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--data-dir", type=Path, help="where the event store and the admin token's hash live "
                       "(default: $TOOLSMITH_DATA_DIR, else ~/.local/share/toolsmith)")

    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    return 2


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from api.app import create_app
    from infrastructure import logs
    from infrastructure.bootstrap import bootstrap
    from infrastructure.settings import Settings

    overrides = {"data_dir": args.data_dir} if args.data_dir else {}
    settings = Settings(**overrides)
    logs.configure(settings.log_level)
    services = bootstrap(settings)
    if services.new_admin_token:
        # Shown once, on the terminal that started the service; only its hash is kept.
        print(
            f"\n  Toolsmith admin token (shown once, keep it safe):\n\n    {services.new_admin_token}\n\n"
            f"  Try: curl -H 'Authorization: Bearer {services.new_admin_token}' "
            f"http://{args.host}:{args.port}/api/v1/admin/code-modules\n",
            file=sys.stdout,
            flush=True,
        )
        services.new_admin_token = None
    print(f"  Data in {settings.data_dir}; serving on http://{args.host}:{args.port} (docs at /docs)", flush=True)
    uvicorn.run(create_app(services), host=args.host, port=args.port, log_config=None, access_log=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
