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
import functools
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

import orjson

SHOWN = "[secret]"
_SHOWN_BYTES = SHOWN.encode()
# Shorter secrets are still replaced raw and percent-encoded; their base64 fragments would be a
# few characters, too short to tell from any other base64 text.
MIN_BASE64_FRAGMENT = 8
_HEX_ESCAPE = re.compile(r"%[0-9A-F]{2}")
_PLAIN = re.compile(r"[ !#-\[\]-~]*")  # printable ASCII but the quote and the backslash: JSON writes it as it is


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
        self._needles = _needles(forms) if forms else ()
        self._json_needles = tuple(needle.encode() for needle in self._needles)
        # Most forms are plain text, replaced by `str.replace` (in C, far faster than a pattern's
        # alternation over a long text), longest first so that a longer form goes whole. Only those
        # with a percent escape of a letter, whose hex may come in either case, need the pattern,
        # and it runs first, replacing them whole.
        by_length = sorted(forms, key=lambda f: (-len(f), f))
        self._literals = tuple(form for form in by_length if not _case_varies(form))
        self._json_literals = tuple(form.encode() for form in self._literals)
        self._patterned = frozenset(forms) - frozenset(self._literals)
        self._patterned_needles = _needles(self._patterned) if self._patterned else ()
        # Whether a form can be replaced in a value's JSON text: one without a quote or a backslash
        # lies within one string of it (and a cut through an escape leaves `\[`, which no JSON reads).
        self._in_json_text = not any('"' in form or "\\" in form for form in forms)

    @functools.cached_property
    def _source(self) -> str:
        """The forms whose hex may vary in case as one pattern, built the first time a text holds
        one's needle (most calls never need it). Longest first: where two forms start at one
        position, the longer is replaced whole."""
        return "|".join(_pattern(form) for form in sorted(self._patterned, key=lambda f: (-len(f), f)))

    @functools.cached_property
    def _pattern(self) -> re.Pattern[str]:
        return re.compile(self._source)

    @functools.cached_property
    def _json_pattern(self) -> re.Pattern[bytes]:
        return re.compile(self._source.encode())

    def _replaced(self, text: str) -> str:
        if self._patterned and any(needle in text for needle in self._patterned_needles):
            text = self._pattern.sub(SHOWN, text)
        for form in self._literals:
            if form in text:
                text = text.replace(form, SHOWN)
        return text

    def _json_replaced(self, text: bytes) -> bytes:
        if self._patterned and any(needle.encode() in text for needle in self._patterned_needles):
            text = self._json_pattern.sub(_SHOWN_BYTES, text)
        for form in self._json_literals:
            if form in text:
                text = text.replace(form, _SHOWN_BYTES)
        return text

    def __bool__(self) -> bool:
        return bool(self.forms)

    def text(self, text: str) -> str:
        """`text` with every form replaced."""
        if not any(needle in text for needle in self._needles):
            return text
        return self._replaced(text)

    def value(self, value: Any) -> Any:
        """A JSON value with every form replaced in its strings, keys included.

        One look over its JSON text (orjson's) first: a value that holds no form (almost every
        answer) is given back as is. The JSON text holds a form exactly when a string of the value
        does, since each form's JSON escape (as orjson writes it) is a form too. Then the forms are
        replaced in that text and it is read back, or, when a form could span more than a string
        or the text no longer reads, each string is replaced in a walk."""
        if not self.forms:
            return value
        if isinstance(value, str):
            return self.text(value)
        if not isinstance(value, (list, dict)):
            return value
        try:
            text = orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):  # a lone surrogate, an integer past 64 bits, deeper than orjson goes
            return self._walk(value)
        if not any(needle in text for needle in self._json_needles):
            return value
        replaced = self._json_replaced(text)
        if replaced == text:
            return value
        if self._in_json_text:
            try:
                return orjson.loads(replaced)
            except orjson.JSONDecodeError:
                pass
        return self._walk(value)

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




def _forms(value: str) -> set[str]:
    """Every form of one secret value: raw, JSON-escaped, percent-encoded, base64."""
    forms = {value, quote(value, safe=""), quote(value), quote_plus(value), quote_plus(value, safe="/")}
    if _PLAIN.fullmatch(value) is None:
        # JSON-escaped (ASCII only, as Python writes it by default; as is, as orjson and JavaScript
        # do), once and twice: a module's `log` of the API's answer holds the escaped form, and
        # that line within a JSON text the twice-escaped one.
        once = {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], _orjson_escaped(value)}
        forms |= once | {escaped for form in once for escaped in (json.dumps(form, ensure_ascii=False)[1:-1], _orjson_escaped(form))}
    raw = value.encode()
    forms.update(_base64_forms(raw))
    for offset in (0, 1, 2):
        fragment = _aligned_fragment(raw, offset)
        for alphabet in (fragment, fragment.replace("+", "-").replace("/", "_")):
            if len(alphabet) >= MIN_BASE64_FRAGMENT:
                forms.add(alphabet)
    return forms


def _needles(forms: Iterable[str]) -> tuple[str, ...]:
    """Plain substrings, at least one of which is in any text a form matches in: each form's
    longest run between percent escapes (the pattern takes their hex in either case), without
    those that hold another. Looking for a few substrings is much faster than the pattern's
    alternation, so a text that holds none (almost every text) is passed at that cost."""
    kept: list[str] = []
    for needle in sorted({max(_HEX_ESCAPE.split(form), key=len) for form in forms}, key=len):
        if not any(shorter in needle for shorter in kept):  # "" (a form of escapes only) holds every text
            kept.append(needle)
    return tuple(kept)


def _orjson_escaped(text: str) -> str:
    """`text` as it is within a JSON string orjson writes; itself when orjson cannot write it."""
    try:
        return orjson.dumps(text).decode()[1:-1]
    except orjson.JSONEncodeError:  # a lone surrogate
        return text


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


def _case_varies(form: str) -> bool:
    """Whether `form` holds a percent escape with a letter in its hex, which a text may hold in
    either case (`%2F`, `%2f`): only the pattern replaces it."""
    return any(not escape.group()[1:].isdigit() for escape in _HEX_ESCAPE.finditer(form))


def _looks_base64(form: str) -> bool:
    return len(form) >= MIN_BASE64_FRAGMENT and re.fullmatch(r"[A-Za-z0-9+/_-]+", form) is not None
