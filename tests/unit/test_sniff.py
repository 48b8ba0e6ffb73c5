"""A document's media type comes from its bytes (docs/kinds/file-search-tools.md); its name only tells kinds of text
apart. (`sniff_file`, which reads a ZIP's directory from disk, is tested in
tests/integration/test_extraction.py.)"""

from __future__ import annotations

import gzip
import io
import random
import zipfile

import pytest

from domain.documents import CODE, CSV, DOCX, HTML, JSON, MARKDOWN, PDF, TEXT
from infrastructure.extraction.sniff import HEAD_BYTES, OCTET_STREAM, sniff
from tests.documents import binary_as_text, docx_with_table, fake_pdf, html_page, markdown_doc, two_page_pdf


@pytest.mark.parametrize("name", ["report.pdf", "report.txt", "report", "report.docx"])
def test_a_pdf_is_a_pdf_whatever_its_name(name: str) -> None:
    assert sniff(two_page_pdf("apricot")[:HEAD_BYTES], name) == PDF
    assert sniff(fake_pdf(), name) == PDF  # it says it is one: parsing will tell


@pytest.mark.parametrize("name", ["report.docx", "report.zip", "report.txt"])
def test_a_word_document_is_one_whatever_its_name(name: str) -> None:
    assert sniff(docx_with_table("zebra")[:HEAD_BYTES], name) == DOCX


def test_another_zip_is_not_a_word_document() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "hello")
        archive.writestr("word/other.xml", "<x/>")
    assert sniff(buffer.getvalue(), "notes.docx") == OCTET_STREAM


# The gzip member's time is fixed: a test's id is its parameter, and the xdist workers, which collect
# the tests each on its own, must name the same tests (a compressed "now" differs between them).
@pytest.mark.parametrize("head", [
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"\xff\xd8\xff\xe0\x00\x10JFIF", b"GIF89a\x01\x00", gzip.compress(b"text", mtime=0),
    b"\x7fELF\x02\x01\x01", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
])  # fmt: skip
def test_binary_formats_are_not_text_even_named_so(head: bytes) -> None:
    assert sniff(head, "notes.txt") == OCTET_STREAM


def test_random_bytes_are_not_text() -> None:
    assert sniff(binary_as_text(), "notes.txt") == OCTET_STREAM
    without_nul = bytes(b for b in random.Random(1).randbytes(5000) if b)
    assert sniff(without_nul, "notes.txt") == OCTET_STREAM


@pytest.mark.parametrize("name", ["page.html", "page.txt", "page.md", "page"])
def test_an_html_page_is_html_whatever_its_name(name: str) -> None:
    assert sniff(html_page(), name) == HTML


@pytest.mark.parametrize("head", [
    b"<html><body>hi</body></html>",
    b"\xef\xbb\xbf  \n<!DOCTYPE html>\n<p>hi",
    b'<?xml version="1.0"?>\n<!-- made by hand -->\n<html xmlns="http://www.w3.org/1999/xhtml">',
    b"<HEAD><TITLE>Old</TITLE></HEAD>",
    "<!doctype html><title>Été</title>".encode("utf-16"),
])  # fmt: skip
def test_html_is_recognised_by_its_first_tag(head: bytes) -> None:
    assert sniff(head, "x.txt") == HTML


def test_a_fragment_of_html_is_html_only_when_named_so() -> None:
    fragment = b"<div><p>Just a fragment</p></div>"
    assert sniff(fragment, "part.html") == HTML
    assert sniff(fragment, "part.txt") == TEXT
    assert sniff(b"<p align='center'>A README</p>\n\n# Title\n", "README.md") == MARKDOWN


@pytest.mark.parametrize(("name", "media_type"), [
    ("notes.txt", TEXT), ("README.md", MARKDOWN), ("guide.markdown", MARKDOWN), ("data.json", JSON),
    ("table.csv", CSV), ("main.py", CODE), ("app.TS", CODE), ("lib.rs", CODE), ("query.sql", CODE),
    ("config.yaml", CODE), ("Dockerfile", CODE), ("build/Makefile", CODE), ("report.pdf", TEXT),
    ("archive.docx", TEXT), ("no_extension", TEXT), ("C:\\docs\\notes.MD", MARKDOWN),
])  # fmt: skip
def test_the_name_tells_kinds_of_text_apart(name: str, media_type: str) -> None:
    assert sniff(b"plain words\nand lines\n", name) == media_type


def test_text_in_other_encodings_is_text() -> None:
    assert sniff("Grüße aus Köln\n".encode("utf-16"), "a.txt") == TEXT  # NUL bytes, but a byte-order mark
    assert sniff("Grüße aus Köln\n".encode("utf-32"), "a.txt") == TEXT
    assert sniff("Le café crème de Noël, à la fenêtre.\n".encode("latin-1"), "a.txt") == TEXT
    assert sniff(markdown_doc(), "a.md") == MARKDOWN


def test_a_head_cut_within_a_character_is_still_text() -> None:
    head = ("é" * HEAD_BYTES).encode()[: HEAD_BYTES - 1] + b"\xc3"  # the first byte of an é at the end
    assert len(head) == HEAD_BYTES
    assert sniff(head, "a.txt") == TEXT


def test_an_empty_file_is_text() -> None:
    assert sniff(b"", "empty.txt") == TEXT
