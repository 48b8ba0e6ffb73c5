"""What every `toolsmith` command shares: naming an invalid setting by its environment variable,
and refusing with one line on stderr and exit code 2."""

from __future__ import annotations

import sys

from pydantic import ValidationError


def _invalid(error: ValidationError) -> str:
    """Each invalid setting, named by its environment variable."""
    from infrastructure.settings import Settings

    return "; ".join(f"{_env_name(Settings, e['loc'])}: {e['msg']}" for e in error.errors())


def _env_name(settings: type, location: tuple[object, ...]) -> str:
    """The environment variable behind a settings field (`CODESANDBOX_URL` for `sandbox_url`)."""
    field = settings.model_fields.get(location[0]) if location else None
    choices = getattr(field.validation_alias, "choices", []) if field is not None else []
    names = [c for c in choices if isinstance(c, str) and c.isupper()]
    return names[0] if names else ".".join(map(str, location))


def _refuse(reason: str, prog: str = "toolsmith sandbox") -> int:
    print(f"{prog}: {reason}", file=sys.stderr, flush=True)
    return 2
