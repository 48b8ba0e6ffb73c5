"""How the console's File Search pages say what a document is (docs/kinds/file-search-tools.md): its
type by a name a person knows ("PDF", "Word document") rather than its media type, its state in a
word, why its extraction failed in a sentence with what to do about it, and its extracted text cut
into the parts a page shows (a PDF by its pages, any other text in parts of a readable size), so
that a long document is never rendered whole. One mapping for every File Search page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from domain.documents import CODE, CSV, DOCX, FAILED, HTML, JSON, MARKDOWN, PDF, PROCESSING, READY, TEXT
from domain.retrieval import HYBRID, LEXICAL, SEMANTIC

TYPE_NAMES = {
    TEXT: "Text", MARKDOWN: "Markdown", JSON: "JSON", CSV: "CSV", CODE: "Source code", HTML: "HTML", PDF: "PDF",
    DOCX: "Word document",
}
STATE_NAMES = {READY: "Ready", PROCESSING: "Processing", FAILED: "Failed"}
# The most characters one part of a document's text shows: a PDF page longer than this, or a text
# without pages, is cut into parts of about this size, at a paragraph's or a line's end when one is near.
PART_CHARS = 12_000


def type_name(media_type: str | None) -> str:
    """A document's type as a person names it; an unknown type (none is stored today) as itself."""
    return TYPE_NAMES.get(media_type or "", media_type or "Unknown type")


def state_name(state: str | None) -> str:
    return STATE_NAMES.get(state or "", (state or "").capitalize())


# Why a search result was found, by the retrievers that found it (each result's `retrievers`).
_FOUND_BY = {
    (LEXICAL, SEMANTIC): "Found by its words and by its meaning",
    (LEXICAL,): "Found by its words",
    (SEMANTIC,): "Found by its meaning: it need not hold a word of the query (its start is shown)",
    ("filter",): "Found by the filter alone (no words to search for)",
}
# What a search's scores are, by the tool's retrieval mode (domain/retrieval.py).
_SCORES = {
    HYBRID: "Searched by words and meaning: a score is the result's rank by its words and its rank by its meaning, "
            "fused, from 0 to 1 (1 is first in both).",
    LEXICAL: "Searched by words only: a score is BM25's relevance, higher when the query's rarer words occur more "
             "often in the passage; it has no fixed top.",
    SEMANTIC: "Searched by meaning only: a score is the similarity of the passage's meaning to the query's, "
              "from −1 to 1 (1 is the same meaning).",
}


def found_by(retrievers: list[str] | tuple[str, ...] | None) -> str:
    """Why a search result was found, in words: by its words, its meaning, or both."""
    given = tuple(sorted(retrievers or (), key=lambda r: (r != LEXICAL, r)))
    return _FOUND_BY.get(given, "Found by " + (", ".join(given) or "the search"))


def score_text(mode: str | None) -> str:
    """What a search's scores mean in the tool's retrieval mode."""
    return _SCORES.get(mode or LEXICAL, _SCORES[LEXICAL])


def no_match(retrieval: dict[str, Any] | None) -> str:
    """Why a search may have found nothing, true of the tool's retrieval mode."""
    retrieval = retrieval or {}
    mode = retrieval.get("mode") or LEXICAL
    said = []
    if retrieval.get("minScore") is not None:
        said.append(f"Results scoring below {retrieval['minScore']:g} are left out (the tool's lowest score kept).")
    said.append("Only documents that are ready are searched.")
    words = ("a passage must hold one of the query's words as it is typed, in any case and with accents ignored, "
             "but no other form of it (no stemming: “zebra” does not find “zebras”)")
    meaning = ("the nearest passages are always found, but only in documents whose passages were embedded (one "
               "recorded before embeddings, or kept in an index without vectors, is found by its words only)")
    if mode == LEXICAL:
        said.append(f"By words, {words}.")
    elif mode == SEMANTIC:
        said.append(f"By meaning, {meaning}.")
    else:
        said.append(f"By words, {words}; by meaning, {meaning}.")
    return " ".join(said)


@dataclass(frozen=True)
class Failure:
    """Why a document failed, as a page says it: the reason as a sentence, what to do, and the
    parser's own words (the part of the reason in parentheses) for whoever wants them."""

    sentence: str
    advice: str
    detail: str


# What to do, by the start of the extractor's reason (infrastructure/extraction).
_ADVICE = (
    ("the pdf is encrypted", "Remove its password (print it to a new PDF, for instance) and upload that file."),
    ("the pdf holds no extractable text", "It is probably a scan: run text recognition (OCR) on it, then upload the result."),
    ("the file is empty", "Upload the file again: nothing arrived."),
    ("unsupported file type", "Save it as text, Markdown, HTML, PDF or Word (.docx) first."),
    ("the file is not text", "Save it as UTF-8 text, or upload the document it was exported from."),
    ("the file is not a pdf", "The file's bytes are not a PDF: open it and save it as a PDF again."),
    ("the file is not a word document", "The file's bytes are not a .docx: open it in Word and save it as .docx again."),
    ("the document's text is longer", "Split it into smaller files and upload those."),
    ("extraction took longer", "Upload it again; if it fails again, split it or save it in a simpler format."),
    ("its upload's documents were not all extracted", "Upload this file again, alone or with fewer files."),
    ("extraction is unavailable", "The service could not start its text extraction: upload the file again later."),
    ("extraction has stopped", "The service was stopping: upload the file again."),
)


def failure(reason: str | None) -> Failure:
    """The reason an extraction gave (always words, never a code; docs/kinds/file-search-tools.md) as
    a sentence, with advice for the known reasons; a parser's message in parentheses becomes the detail."""
    text = (reason or "the text could not be extracted").strip()
    head, detail = text, ""
    if text.endswith(")") and " (" in text:
        at = text.rindex(" (")
        head, detail = text[:at], text[at + 2:-1]
        if detail.endswith("?"):  # "(a scanned image?)", "(a decompression bomb?)": a guess, part of the sentence
            head, detail = text, ""
    head = head[:1].upper() + head[1:]
    if not head.endswith((".", "?", "!")):
        head += "."
    lowered = text.lower()
    advice = next((words for start, words in _ADVICE if lowered.startswith(start)), "")
    return Failure(head, advice, detail)


@dataclass(frozen=True)
class Part:
    """One part of a document's text as its page shows it: its number (1-based), its label
    ("Page 3", "Page 3, part 2", "Part 4"), where it starts and ends in the text, and its PDF page."""

    n: int
    label: str
    start: int
    end: int
    page: int | None


def _cuts(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """[start, end) cut into pieces of at most PART_CHARS, each ending after a blank line, a line
    or a space in its last quarter when there is one."""
    pieces = []
    while end - start > PART_CHARS:
        limit = start + PART_CHARS
        floor = start + PART_CHARS * 3 // 4
        cut = -1
        for mark in ("\n\n", "\n", " "):
            found = text.rfind(mark, floor, limit)
            if found != -1:
                cut = found + len(mark)
                break
        if cut <= start:
            cut = limit
        pieces.append((start, cut))
        start = cut
    pieces.append((start, end))
    return pieces


def parts(text: str, page_starts: list[int] | None) -> list[Part]:
    """The parts of a document's text: a PDF's pages (a long one in parts), else parts of about
    PART_CHARS characters. A text of one part is one part, labelled "All of the text"."""
    found: list[Part] = []
    starts = [s for s in (page_starts or []) if 0 <= s <= len(text)]
    if starts:
        bounds = list(zip(starts, starts[1:] + [len(text)], strict=True))
        for page, (start, end) in enumerate(bounds, 1):
            pieces = _cuts(text, start, end)
            for k, (a, b) in enumerate(pieces, 1):
                label = f"Page {page}" if len(pieces) == 1 else f"Page {page}, part {k}"
                found.append(Part(len(found) + 1, label, a, b, page))
        return found
    pieces = _cuts(text, 0, len(text))
    if len(pieces) == 1:
        return [Part(1, "All of the text", 0, len(text), None)]
    return [Part(k, f"Part {k}", a, b, None) for k, (a, b) in enumerate(pieces, 1)]
