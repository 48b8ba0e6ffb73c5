"""One call's redaction (issue 28): every form in which the secrets a call used can come back out of
it, replaced by `[secret]` in whatever leaves the call (its output, its logs, its error message, the
request the Playground shows), in one pass of one compiled pattern.

A credential travels in more forms than its raw value, and an API that echoes the request echoes
those: an API key in the query is percent-encoded (`quote`, or `quote_plus` in a form body, with
upper- or lower-case hex), a Basic auth header is the base64 of `user:pass`, a JSON text escapes
quotes and backslashes, and an OAuth access token the service obtained is a secret of the call like
the client secret that got it. A `Redactor` is built once per call from those values (and the exact
strings the call sent, such as each `user:pass` pair) and precomputes every form once.

Base64 is not a substring code: the base64 of `user:secret` does not contain the base64 of
`secret`. So besides the exact pairs the call sent, each value's base64 is taken at the three byte
alignments it can start at inside a longer text, keeping only the characters that depend on the
value alone: the base64 of any text that holds the value holds one of them.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

SHOWN = "[secret]"
# Shorter secrets are still replaced raw and percent-encoded; their base64 fragments would be a
# few characters, too short to tell from any other base64 text.
MIN_BASE64_FRAGMENT = 8
_HEX_ESCAPE = re.compile(r"%[0-9A-F]{2}")


class Redactor:
    """Replaces every form of `secrets` (and of the exact strings `sent`, base64 only) with `SHOWN`.

    `secrets`: the values a call read or obtained (secrets, access tokens). `sent`: strings the call
    built around them and sent encoded, such as `user:pass` before its Basic encoding."""

    def __init__(self, secrets: Iterable[str], *, sent: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for value in secrets:
            if value:
                forms.update(_forms(value))
        for text in sent:
            if text:
                forms.update(_base64_forms(text.encode()))
        forms.discard("")
        self.forms = frozenset(forms)
        # Longest first: at a position where two forms start, the longer one is replaced whole.
        pattern = "|".join(_pattern(form) for form in sorted(forms, key=lambda f: (-len(f), f)))
        self._pattern = re.compile(pattern) if pattern else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, text: str) -> str:
        """`text` with every form replaced."""
        if self._pattern is None:
            return text
        return self._pattern.sub(SHOWN, text)

    def value(self, value: Any) -> Any:
        """A JSON value with every form replaced in its strings, keys included. One search over its
        JSON text first: a value that holds no form (almost every answer) is given back as is."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (list, dict)):
            # The JSON text holds a form exactly when a string of the value does: the escaped forms
            # are among the forms.
            if self._pattern.search(json.dumps(value, ensure_ascii=False, separators=(",", ":"))) is None:
                return value
            return self._walk(value)
        return value

    def lines(self, lines: Iterable[str]) -> tuple[str, ...]:
        return tuple(self.text(line) for line in lines)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._walk(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self._walk(v) for k, v in value.items()}
        return value


NOTHING = Redactor(())


def _forms(value: str) -> set[str]:
    """Every form of one secret value: raw, JSON-escaped, percent-encoded, base64."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    for encoded in (quote(value, safe=""), quote(value), quote_plus(value), quote_plus(value, safe="/")):
        forms.add(encoded)
    # Each form that holds a JSON escape or a percent escape is also given as it appears within a
    # JSON text (a module's `log` of the API's answer).
    forms.update({json.dumps(form, ensure_ascii=False)[1:-1] for form in list(forms)})
    raw = value.encode()
    forms.update(_base64_forms(raw))
    for offset in (0, 1, 2):
        fragment = _aligned_fragment(raw, offset)
        for alphabet in (fragment, fragment.replace("+", "-").replace("/", "_")):
            if len(alphabet) >= MIN_BASE64_FRAGMENT:
                forms.add(alphabet)
    return forms


def _base64_forms(raw: bytes) -> set[str]:
    """The base64 of `raw` whole, standard and URL-safe, without its padding (a pattern's `={0,2}`
    takes the padding too, so the padded and unpadded forms are both replaced whole)."""
    standard = base64.b64encode(raw).decode("ascii").rstrip("=")
    return {standard, standard.replace("+", "-").replace("/", "_")}


def _aligned_fragment(raw: bytes, offset: int) -> str:
    """The base64 characters that depend on `raw` alone when `raw` starts `offset` bytes into a
    3-byte group of a longer text: the fragment the base64 of any text holding `raw` there holds."""
    encoded = base64.b64encode(bytes(offset) + raw + bytes(3)).decode("ascii")
    start_bit, end_bit = offset * 8, (offset + len(raw)) * 8  # the bits of `raw`: [start, end)
    first = -(-start_bit // 6)  # the first 6-bit character wholly within them
    last = end_bit // 6  # one past the last
    return encoded[first:last] if last > first else ""


def _pattern(form: str) -> str:
    """`form` as a regular expression: percent escapes in either case of hex, a base64 form with
    its padding."""
    pieces, at = [], 0
    for escape in _HEX_ESCAPE.finditer(form):
        pieces.append(re.escape(form[at:escape.start()]))
        pieces.append("%" + "".join(f"[{c}{c.lower()}]" if c.isalpha() else c for c in escape.group()[1:]))
        at = escape.end()
    pieces.append(re.escape(form[at:]))
    pattern = "".join(pieces)
    return pattern + "={0,2}" if _looks_base64(form) else pattern


def _looks_base64(form: str) -> bool:
    return len(form) >= MIN_BASE64_FRAGMENT and re.fullmatch(r"[A-Za-z0-9+/_-]+", form) is not None
