"""Text from a document's bytes, one function per format; this runs only inside an extraction
worker process (`worker.py`), under its memory and time limits, never in the server.

Every way a document can fail ends as `ExtractionFailed` with a reason its uploader understands
(a library's exception is named in it, never passed on); only `MemoryError` goes through, for the
worker to answer and then be replaced. A Word document's ZIP directory is checked before anything
decompresses it: declared sizes are what `zipfile` holds each entry to, so a bomb is refused
before it costs anything.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Iterator
from typing import Any

import docx
import pypdf
from docx.table import Table
from docx.text.paragraph import Paragraph

from domain.documents import CODE, CSV, DOCX, HTML, JSON, MARKDOWN, PDF, TEXT, Extracted, ExtractionFailed
from infrastructure.extraction.decoding import decode, looks_binary
from infrastructure.extraction.html_text import html_text

MIB = 1024 * 1024
MAX_UNPACKED_BYTES = 200 * MIB
# One entry may expand this many times, unless it stays under `RATIO_FLOOR_BYTES` unpacked.
MAX_RATIO = 200
RATIO_FLOOR_BYTES = 10 * MIB
TEXT_TYPES = frozenset({TEXT, MARKDOWN, JSON, CSV, CODE})

UNSUPPORTED = (
    "unsupported file type: only text, Markdown, JSON, CSV, source code, HTML, PDF and Word (.docx) files "
    "can be searched"
)
NOT_TEXT = "the file is not text: it is not UTF-8 and no text encoding fits it"
BINARY = "the file is not text: it holds binary data (too many control characters)"
NO_TEXT = "the document holds no text"
NO_PDF_TEXT = "the PDF holds no extractable text (a scanned image?)"

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING_STYLE = re.compile(r"heading\s*([1-9])", re.IGNORECASE)
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)


def extract(path: str, media_type: str, max_chars: int) -> Extracted:
    """The text of the document at `path`, of type `media_type` (from `sniff_file`), at most
    `max_chars` characters long; raises `ExtractionFailed` with the reason it cannot be had."""
    size = os.path.getsize(path)
    if size == 0:
        raise ExtractionFailed("the file is empty")
    if media_type in TEXT_TYPES:
        extracted = _text(path, size, max_chars)
    elif media_type == HTML:
        extracted = _html(path, size, max_chars)
    elif media_type == PDF:
        extracted = _pdf(path, max_chars)
    elif media_type == DOCX:
        extracted = _docx(path, max_chars)
    else:
        raise ExtractionFailed(UNSUPPORTED)
    _check_length(extracted.text, max_chars)
    if not extracted.text.strip():
        raise ExtractionFailed(NO_PDF_TEXT if media_type == PDF else NO_TEXT)
    return extracted


def _too_long(max_chars: int) -> str:
    return f"the document's text is longer than {max_chars:,} characters (the limit)"


def _check_length(text: str, max_chars: int) -> None:
    if len(text) > max_chars:
        raise ExtractionFailed(_too_long(max_chars))


def _read(path: str, size: int, max_chars: int) -> bytes:
    # No encoding takes more than four bytes to a character: more bytes than this cannot fit.
    if size > 4 * max_chars:
        raise ExtractionFailed(_too_long(max_chars))
    with open(path, "rb") as file:
        return file.read()


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _decoded(data: bytes, declared: str | None = None) -> str:
    text = decode(data, declared)
    if text is None:
        raise ExtractionFailed(NOT_TEXT)
    if looks_binary(text):
        raise ExtractionFailed(BINARY)
    return _newlines(text.replace("\x00", ""))


def _text(path: str, size: int, max_chars: int) -> Extracted:
    return Extracted(_decoded(_read(path, size, max_chars)))


def _html(path: str, size: int, max_chars: int) -> Extracted:
    data = _read(path, size, max_chars)
    declared = _META_CHARSET.search(data[:4096])
    page = _decoded(data, declared.group(1).decode("ascii") if declared else None)
    try:
        text, title = html_text(page)
    except MemoryError:
        raise
    except Exception as e:
        raise ExtractionFailed(f"the HTML page could not be read ({_named(e)})") from None
    return Extracted(text, title=title)


def _pdf(path: str, max_chars: int) -> Extracted:
    try:
        reader = pypdf.PdfReader(path)
    except MemoryError:
        raise
    except Exception as e:
        raise ExtractionFailed(f"the file is not a PDF document: its bytes do not parse as PDF ({_named(e)})") from None
    if reader.is_encrypted and not _decrypted(reader):
        raise ExtractionFailed("the PDF is encrypted: it cannot be read without its password")
    pages: list[str] = []
    page_starts: list[int] = []
    length = 0
    page_number = 0
    try:
        for page_number, page in enumerate(reader.pages, 1):
            text = _newlines(page.extract_text().replace("\x00", "")).rstrip()
            page_starts.append(length + 2 * len(pages))
            pages.append(text)
            length += len(text)
            if length + 2 * (len(pages) - 1) > max_chars:  # stop reading as soon as the text is too long
                raise ExtractionFailed(_too_long(max_chars))
    except (ExtractionFailed, MemoryError):
        raise
    except Exception as e:
        where = f" on page {page_number}" if page_number else ""
        raise ExtractionFailed(f"the PDF could not be read{where} ({_named(e)})") from None
    return Extracted("\n\n".join(pages), tuple(page_starts), _pdf_title(reader))


def _decrypted(reader: pypdf.PdfReader) -> bool:
    """Whether the PDF opens with the empty password (a PDF that may be read by anyone, whose
    encryption only restricts printing or copying)."""
    try:
        return bool(reader.decrypt(""))
    except MemoryError:
        raise
    except Exception:
        return False


def _pdf_title(reader: pypdf.PdfReader) -> str | None:
    try:
        metadata = reader.metadata
        return _title(metadata.title if metadata is not None else None)
    except MemoryError:
        raise
    except Exception:
        return None  # a broken information dictionary costs the title, not the text


def _docx(path: str, max_chars: int) -> Extracted:
    try:
        _refuse_bomb(path)
        document = docx.Document(path)
    except (ExtractionFailed, MemoryError):
        raise
    except Exception as e:
        raise ExtractionFailed(
            f"the file is not a Word document: its bytes do not parse as .docx ({_named(e)})"
        ) from None
    try:
        styles = {style.style_id: style.name or "" for style in document.styles}
        blocks = list(_blocks(document.element.body, document, styles))
        seen: set[str] = set()
        for section in document.sections:
            for part in (section.header, section.first_page_header, section.even_page_header,
                         section.footer, section.first_page_footer, section.even_page_footer):  # fmt: skip
                if part.is_linked_to_previous:
                    continue
                text = "\n".join(_blocks(part._element, part, styles))
                if text and text not in seen:
                    seen.add(text)
                    blocks.append(text)
        title = _title(document.core_properties.title)
    except MemoryError:
        raise
    except Exception as e:
        raise ExtractionFailed(f"the Word document could not be read ({_named(e)})") from None
    text = "\n\n".join(blocks)
    _check_length(text, max_chars)
    return Extracted(_newlines(text), title=title)


def _refuse_bomb(path: str) -> None:
    with zipfile.ZipFile(path) as archive:
        entries = archive.infolist()
    unpacked = sum(entry.file_size for entry in entries)
    if unpacked > MAX_UNPACKED_BYTES:
        raise ExtractionFailed(
            f"the document expands to more than {MAX_UNPACKED_BYTES // MIB} MB when unpacked (a decompression bomb?)"
        )
    for entry in entries:
        if entry.file_size > RATIO_FLOOR_BYTES and entry.file_size > MAX_RATIO * max(entry.compress_size, 1):
            raise ExtractionFailed(
                f"a part of the document expands more than {MAX_RATIO} times when unpacked, to "
                f"{entry.file_size // MIB} MB (a decompression bomb?)"
            )


def _blocks(parent: Any, owner: Any, styles: dict[str, str]) -> Iterator[str]:
    """The non-empty paragraphs and tables under `parent` (a body, a header, a table cell), in
    document order, a heading prefixed with one `#` per level (so the chunker breaks there);
    content controls (`w:sdt`) are looked into, as Word shows their content in place."""
    for child in parent.iterchildren():
        if child.tag == f"{_W}p":
            paragraph = Paragraph(child, owner)
            text = paragraph.text.strip()
            if text:
                yield _heading_prefix(styles.get(child.style or "", "")) + text
        elif child.tag == f"{_W}tbl":
            text = _table_text(Table(child, owner), styles)
            if text:
                yield text
        elif child.tag == f"{_W}sdt":
            content = child.find(f"{_W}sdtContent")
            if content is not None:
                yield from _blocks(content, owner, styles)


def _table_text(table: Table, styles: dict[str, str]) -> str:
    """One line per row, its cells separated by " | " (a merged cell once)."""
    rows = []
    for row in table.rows:
        cells = []
        seen: set[int] = set()
        for cell in row.cells:
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(" ".join(" ".join(_blocks(cell._tc, cell, styles)).split()))
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)


def _heading_prefix(style_name: str) -> str:
    if style_name.lower() == "title":
        return "# "
    match = _HEADING_STYLE.match(style_name)
    return "#" * min(int(match.group(1)), 6) + " " if match else ""


def _title(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    title = " ".join(value.split())[:500]
    return title or None


def _named(error: BaseException) -> str:
    message = " ".join(str(error).split())[:200]
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
