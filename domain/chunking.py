"""A document's text split into chunks for the index (docs/kinds/file-search-tools.md): about `CHUNK_CHARS` characters
each, never more, the next starting `CHUNK_OVERLAP` characters before the last ended, so that a
passage cut in two is still whole in one of them. A chunk cut at a heading cuts no passage: the
next starts at the heading, and a section begins a chunk of its own.

A chunk ends where the text's structure breaks, the strongest break found in the second half of
its window winning: a heading (a Markdown `#` line, which Word documents' extraction also writes),
then a blank line, a line break, a sentence's end, a space, and only then wherever the window ends.
Every search looks within one window (`re` from a position, `str.rfind` between bounds), so the
whole costs time in proportion to the text: 25 MB of prose split in about 0.2 s.
"""

from __future__ import annotations

import re

from domain.documents import CHUNK_CHARS, CHUNK_OVERLAP, DOCX, MARKDOWN, Chunk, Extracted

# Types whose text marks headings as Markdown does.
HEADED_TYPES = frozenset({MARKDOWN, DOCX})

_HEADING = re.compile(r"\n(?=#{1,6}[ \t])")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"[.!?…。！？](?=\s)")
_NOT_SPACE = re.compile(r"\S")
_SPACE = re.compile(r"\s")
# What ends a chunk: a heading (the next chunk starts there: a section shares nothing with the
# one before), a break in the text, or the window's end amid a word.
_HEADING_CUT, _SOFT_CUT, _HARD_CUT = range(3)
# How far past the window a heading's or a blank line's start may be looked at to recognise it.
_LOOKAHEAD = 64


def chunk_text(extracted: Extracted, media_type: str, size: int = CHUNK_CHARS,
               overlap: int = CHUNK_OVERLAP) -> list[Chunk]:  # fmt: skip
    """The chunks of `extracted.text`, numbered from 0, each `text[start:end]` without white
    space at either end, and each with the page it starts on when the text has pages. A page is
    chunked on its own: no chunk runs from one page into the next, so a hit names the page it is on."""
    if size < 1 or not 0 <= overlap < size:
        raise ValueError("a chunk's size must be positive and its overlap smaller than its size")
    headed = media_type in HEADED_TYPES
    starts = extracted.page_starts
    if not starts:
        return _chunks(extracted.text, 0, None, headed, size, overlap, [])
    chunks: list[Chunk] = []
    text = extracted.text
    for number, page_start in enumerate(starts):
        page_end = starts[number + 1] if number + 1 < len(starts) else len(text)
        _chunks(text[page_start:page_end], page_start, number + 1, headed, size, overlap, chunks)
    return chunks


def _chunks(text: str, offset: int, page: int | None, headed: bool, size: int, overlap: int,
            chunks: list[Chunk]) -> list[Chunk]:
    """Appends the chunks of `text` (which starts at `offset` of the document) to `chunks`."""
    first = _NOT_SPACE.search(text)
    start = first.start() if first else len(text)
    while start < len(text):
        end, cut = _end(text, start, size, headed)
        stripped = start + len(text[start:end].rstrip())
        chunks.append(Chunk(len(chunks), offset + start, offset + stripped, text[start:stripped], page))
        rest = _NOT_SPACE.search(text, end)
        if rest is None:
            break
        start = rest.start() if cut == _HEADING_CUT else _next_start(text, start, stripped, overlap, rest.start(), cut)
    return chunks


def _end(text: str, start: int, size: int, headed: bool) -> tuple[int, int]:
    """Where the chunk starting at `start` ends, the strongest break in the second half of its
    window or else the window's end, and what kind of cut that is."""
    limit = start + size
    if limit >= len(text):
        return len(text), _SOFT_CUT
    low = start + size // 2
    ahead = min(limit + _LOOKAHEAD, len(text))
    if headed and (at := _last(_HEADING, text, low, ahead, before=limit + 1)) is not None:
        return at, _HEADING_CUT
    if (at := _last(_BLANK_LINE, text, low, ahead, before=limit + 1)) is not None:
        return at, _SOFT_CUT
    if (at := text.rfind("\n", low, limit + 1)) > start:
        return at, _SOFT_CUT
    if (at := _last(_SENTENCE_END, text, low, limit + 1, before=limit)) is not None:
        return at + 1, _SOFT_CUT
    if (at := max(text.rfind(" ", low, limit + 1), text.rfind("\t", low, limit + 1))) > start:
        return at, _SOFT_CUT
    return limit, _HARD_CUT


def _last(pattern: re.Pattern[str], text: str, low: int, high: int, before: int | None = None) -> int | None:
    """Where the last match of `pattern` within `text[low:high]` starts, among those starting
    before `before` (default `high`)."""
    before = high if before is None else before
    found = None
    for match in pattern.finditer(text, low, high):
        if match.start() < before:
            found = match.start()
    return found


def _next_start(text: str, start: int, end: int, overlap: int, rest: int, cut: int) -> int:
    """Where the chunk after `text[start:end]` starts: `overlap` characters before `end`, moved on
    to the next word's start before `end`. When there is none, a word cut by a hard cut is
    repeated from there, and a whole word is not: the next chunk starts at the next text (`rest`),
    as it does when no overlap is wanted or the chunk is no longer than the overlap."""
    at = end - overlap
    if not overlap or at <= start:
        return rest
    if text[at - 1].isspace() and not text[at].isspace():
        return at
    space = _SPACE.search(text, at, end)
    word = _NOT_SPACE.search(text, space.start(), end) if space else None
    if word is not None:
        return word.start()
    return at if cut == _HARD_CUT else rest

