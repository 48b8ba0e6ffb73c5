"""Chunks of a document's text (domain.chunking): about 1,500 characters, never more, 200 shared
with the next, cut where the text's structure breaks, and exact offsets into the text."""

from __future__ import annotations

import re
import time

import pytest

from domain.chunking import chunk_text
from domain.documents import CHUNK_CHARS, CHUNK_OVERLAP, CODE, DOCX, MARKDOWN, PDF, TEXT, Chunk, Extracted
from tests.documents import long_text, markdown_doc


def chunks_of(text: str, media_type: str = TEXT, **kwargs: int) -> list[Chunk]:
    return chunk_text(Extracted(text), media_type, **kwargs)


def assert_well_formed(text: str, chunks: list[Chunk], size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP) -> None:
    """Numbered from 0, exact slices, no longer than `size`, no white space at either end, each
    starting after the last one started and no more than `overlap` before it ended, and together
    covering every character that is not white space."""
    assert [c.n for c in chunks] == list(range(len(chunks)))
    covered = 0
    for previous, chunk in zip([None, *chunks], chunks):
        assert chunk.text == text[chunk.start : chunk.end]
        assert 0 < chunk.end - chunk.start <= size
        assert chunk.text == chunk.text.strip()
        if previous is not None:
            assert previous.start < chunk.start
            assert previous.end - chunk.start <= overlap
            assert not text[covered : chunk.start].strip(), "a gap between chunks holds text"
        covered = chunk.end
    assert not text[covered:].strip()


def test_prose_is_cut_into_chunks_of_about_the_size_with_the_overlap() -> None:
    text = long_text(20_000).decode()
    chunks = chunks_of(text)
    assert_well_formed(text, chunks)
    # about 1,500 characters each: none of the inner ones under half of it
    assert all(c.end - c.start >= CHUNK_CHARS // 2 for c in chunks[:-1])
    assert 20_000 / CHUNK_CHARS < len(chunks) < 20_000 / (CHUNK_CHARS // 2 - CHUNK_OVERLAP)
    # each next chunk starts within the last one, at a word's start
    for previous, chunk in zip(chunks, chunks[1:]):
        assert chunk.start < previous.end
        assert text[chunk.start - 1].isspace()


def test_a_chunk_ends_at_a_paragraph_rather_than_mid_paragraph() -> None:
    paragraph = "Word " * 120  # 600 characters
    text = "\n\n".join(paragraph.strip() for _ in range(6))
    chunks = chunks_of(text)
    assert_well_formed(text, chunks)
    assert all(text[c.end : c.end + 2] == "\n\n" for c in chunks[:-1])


def test_a_chunk_ends_at_a_sentence_rather_than_mid_sentence() -> None:
    text = " ".join(f"Sentence number {n} says a few more words than the one before it." for n in range(100))
    chunks = chunks_of(text)
    assert_well_formed(text, chunks)
    assert all(c.text.endswith(".") for c in chunks)


def test_markdown_chunks_start_at_headings() -> None:
    text = markdown_doc().decode()
    chunks = chunks_of(text, MARKDOWN)
    assert_well_formed(text, chunks)
    # every section (## heading, about 3,000 characters) begins a chunk, but for the first, which
    # follows the title too closely to be worth a chunk of its own
    headings = [m.start() for m in re.finditer(r"^## ", text, re.MULTILINE)]
    assert len(headings) == 3 and headings[0] < chunks[0].end
    assert set(headings[1:]) <= {c.start for c in chunks}


def test_headings_count_only_in_documents_that_have_them() -> None:
    section = "# Heading\n" + "text " * 200
    text = "\n".join([section] * 4)
    starts_markdown = {c.start for c in chunks_of(text, MARKDOWN)}
    starts_docx = {c.start for c in chunks_of(text, DOCX)}
    starts_code = {c.start for c in chunks_of(text, CODE)}
    headings = {m.start() for m in re.finditer(r"^# ", text, re.MULTILINE)} - {0}
    assert headings <= starts_markdown
    assert starts_docx == starts_markdown
    assert not headings <= starts_code  # a `#` line of code is a comment, not a heading


def test_text_without_white_space_is_cut_at_the_size_and_still_moves_on() -> None:
    text = "x" * 10_000
    chunks = chunks_of(text)
    assert_well_formed(text, chunks)
    assert [(c.start, c.end) for c in chunks[:3]] == [(0, 1500), (1300, 2800), (2600, 4100)]
    assert chunks[-1].end == 10_000


def test_the_offsets_are_exact_around_leading_and_trailing_white_space() -> None:
    text = "\n\n   First paragraph.\n\n\n   Second paragraph.   \n\n"
    chunks = chunks_of(text, size=25, overlap=5)
    assert [(c.start, c.end, c.text) for c in chunks] == [
        (5, 21, "First paragraph."),
        (27, 44, "Second paragraph."),
    ]


def test_white_space_alone_makes_no_chunk() -> None:
    assert chunks_of("") == []
    assert chunks_of(" \n\t\n  ") == []


def test_short_text_is_one_chunk() -> None:
    assert chunks_of("  Hello, world.\n") == [Chunk(0, 2, 15, "Hello, world.", None)]


def test_a_chunk_names_the_page_it_starts_on() -> None:
    pages = [f"Page {n}. " + "words on the page " * 150 for n in range(1, 5)]
    text = "\n\n".join(pages)
    page_starts = tuple(sum(len(p) + 2 for p in pages[:n]) for n in range(4))
    chunks = chunk_text(Extracted(text, page_starts), PDF)
    assert_well_formed(text, chunks)
    for chunk in chunks:
        assert chunk.page == max(n + 1 for n, start in enumerate(page_starts) if start <= chunk.start)
    assert {c.page for c in chunks} == {1, 2, 3, 4}
    assert all(c.page is None for c in chunks_of(text))


def test_the_same_text_makes_the_same_chunks() -> None:
    text = long_text(30_000, seed=4).decode()
    assert chunks_of(text, MARKDOWN) == chunks_of(text, MARKDOWN)


def test_unicode_is_cut_by_characters_not_bytes() -> None:
    text = "Grüße aus 東京 🌸 — naïve café. " * 400
    chunks = chunks_of(text)
    assert_well_formed(text, chunks)
    assert "".join(c.text for c in chunks[:1]) == text[: chunks[0].end]
    assert all("\ufffd" not in c.text for c in chunks)
    cjk = "東京は日本の首都です。" * 500  # no spaces: sentence ends are "。"
    chunks = chunks_of(cjk)
    assert_well_formed(cjk, chunks)


def test_other_sizes_and_overlaps() -> None:
    text = long_text(5_000, seed=2).decode()
    for size, overlap in ((100, 0), (300, 50), (1000, 999)):
        chunks = chunks_of(text, size=size, overlap=overlap)
        assert_well_formed(text, chunks, size, overlap)
    with pytest.raises(ValueError):
        chunks_of(text, size=100, overlap=100)


def test_megabytes_are_chunked_in_linear_time() -> None:
    text = long_text(5_000_000, seed=9).decode()
    started = time.perf_counter()
    chunks = chunks_of(text, MARKDOWN)
    assert time.perf_counter() - started < 2.0  # about 0.05 s here; 25 MB take about 0.2 s
    assert len(chunks) > 5_000_000 // CHUNK_CHARS


def test_no_chunk_runs_from_one_page_into_the_next() -> None:
    # Two short pages would fit one chunk: each is its own, so a word of page 2 is found on page 2.
    page_one, page_two = "The first page says little.\n\n", "The second page names the quetzalcoatlus."
    extracted = Extracted(page_one + page_two, page_starts=(0, len(page_one)))
    chunks = chunk_text(extracted, PDF)
    assert [(c.page, c.text) for c in chunks] == [(1, page_one.strip()), (2, page_two)]
    assert chunks[1].start == len(page_one) and extracted.text[chunks[1].start:chunks[1].end] == page_two
