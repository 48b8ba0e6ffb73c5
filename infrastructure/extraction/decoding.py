"""Text from bytes whose encoding nobody declared: a byte-order mark when there is one, else UTF-8,
else what the document itself declares (an HTML <meta charset>), else charset-normalizer's guess.

Sniffing and extraction decide "is this text?" the same way, with the same functions: a file the
upload calls text is one extraction can read. Any guess can turn random bytes into characters (every
byte is a latin-1 character), so a decoded text full of control characters is binary posing as text.
"""

from __future__ import annotations

import codecs
import re

import charset_normalizer

# UTF-32's little-endian mark starts with UTF-16's: the longer marks are tried first.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# C0 and C1 control characters, less those text uses (tab, newlines, form feed, escape for colours).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\x7f-\x9f]")
# More than one control character in this many is binary, not text.
_CONTROL_RATIO = 100


def bom_encoding(data: bytes) -> str | None:
    """The encoding a byte-order mark at the start of `data` names (the codec strips the mark)."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    return None


def decode(data: bytes, declared: str | None = None, *, partial: bool = False) -> str | None:
    """`data` as text, or None when no encoding fits. `partial` says `data` is the head of a longer
    file, so a multi-byte character cut at its end is no reason to refuse."""
    encoding = bom_encoding(data)
    if encoding is not None:
        return _strict(data, encoding, partial)
    text = _strict(data, "utf-8", partial)
    if text is None and declared:
        text = _declared(data, declared, partial)
    if text is None:
        best = charset_normalizer.from_bytes(data).best()
        text = str(best) if best is not None else None
    return text


def looks_binary(text: str) -> bool:
    """True when `text` holds so many control characters that it was not text before decoding."""
    controls = len(_CONTROL.findall(text))
    return controls > 0 and controls * _CONTROL_RATIO > len(text)


def _declared(data: bytes, declared: str, partial: bool) -> str | None:
    try:
        encoding = codecs.lookup(declared).name
    except LookupError:
        return None
    # A page that says UTF-16 in ASCII bytes is not UTF-16 (HTML reads such a declaration as UTF-8).
    if encoding.startswith(("utf-16", "utf-32")):
        return None
    return _strict(data, encoding, partial)


def _strict(data: bytes, encoding: str, partial: bool) -> str | None:
    try:
        return codecs.getincrementaldecoder(encoding)("strict").decode(data, final=not partial)
    except UnicodeDecodeError:
        return None
