"""A document's media type, taken from its bytes (docs/kinds/file-search-tools.md): the name never makes a file a PDF,
a Word document or text; it only tells apart kinds of text (Markdown, JSON, CSV, source code).

`sniff_file` is what the application calls on an upload: it reads the first 64 KiB and, for a ZIP,
the archive's central directory (a Word document is a ZIP holding `word/document.xml`, and that
entry is often listed far beyond the first 64 KiB). It walks the directory itself, entry by entry
and at most `MAX_ZIP_ENTRIES` of them, rather than through `zipfile`, which would hold every entry
of a hostile archive in the server's memory. It never decompresses anything.
"""

from __future__ import annotations

import re
import struct
from pathlib import PurePath
from typing import BinaryIO

from domain.documents import CODE, CSV, DOCX, HTML, JSON, MARKDOWN, PDF, TEXT
from infrastructure.extraction.decoding import bom_encoding, decode, looks_binary

OCTET_STREAM = "application/octet-stream"
HEAD_BYTES = 64 * 1024
# A Word document has tens of entries; an archive with more is not worth walking.
MAX_ZIP_ENTRIES = 10_000

_ZIP = b"PK\x03\x04"
_WORD_DOCUMENT = b"word/document.xml"
# Binary formats whose first bytes could otherwise pass for text.
_BINARY_MAGIC = (
    b"\x89PNG", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"\x1f\x8b", b"\xfd7zXZ\x00", b"7z\xbc\xaf\x27\x1c",
    b"\xd0\xcf\x11\xe0", b"\x28\xb5\x2f\xfd", b"\x7fELF", b"Rar!\x1a\x07",
)  # fmt: skip
# An HTML document starts, after an XML declaration and comments, with one of these tags.
_HTML_START = re.compile(
    r"\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|title|meta)[\s/>]",
    re.IGNORECASE | re.DOTALL,
)
_EXTENSIONS: dict[str, str] = {
    **dict.fromkeys(("md", "markdown", "mdown", "mkd"), MARKDOWN),
    **dict.fromkeys(("json", "jsonl", "ndjson", "geojson"), JSON),
    **dict.fromkeys(("csv", "tsv"), CSV),
    # A fragment of HTML (no <html> or <body> at its start) is still HTML to whoever named it so.
    **dict.fromkeys(("html", "htm", "xhtml"), HTML),
    **dict.fromkeys((
        "py", "pyi", "js", "mjs", "cjs", "jsx", "ts", "tsx", "java", "kt", "kts", "scala", "groovy", "gradle",
        "go", "rs", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "cs", "fs", "rb", "php", "pl", "pm", "swift",
        "m", "mm", "r", "jl", "lua", "dart", "ex", "exs", "erl", "hs", "ml", "clj", "elm", "vue", "svelte",
        "sh", "bash", "zsh", "fish", "ps1", "bat", "cmd", "sql", "yaml", "yml", "toml", "ini", "cfg", "conf",
        "properties", "xml", "xsd", "xsl", "css", "scss", "sass", "less", "proto", "graphql", "gql", "tf",
        "ipynb",
    ), CODE),
}  # fmt: skip
_CODE_NAMES = frozenset({"dockerfile", "makefile", "jenkinsfile", "vagrantfile", "gemfile", "rakefile"})


def sniff(head: bytes, name: str) -> str:
    """The media type of a file whose first bytes (up to `HEAD_BYTES`) are `head` and whose name is
    `name`: one of `domain.documents.MEDIA_TYPES`, or `OCTET_STREAM` for anything else."""
    if head.startswith(b"%PDF-"):
        return PDF
    if head.startswith(_ZIP):
        return DOCX if _local_entry_named(head, _WORD_DOCUMENT) else OCTET_STREAM
    if head.startswith(_BINARY_MAGIC):
        return OCTET_STREAM
    if b"\x00" in head and bom_encoding(head) not in ("utf-16", "utf-32"):
        return OCTET_STREAM
    text = decode(head, partial=len(head) >= HEAD_BYTES)
    if text is None or looks_binary(text):
        return OCTET_STREAM
    if _HTML_START.match(text):
        return HTML
    return _text_type(name)


def sniff_file(path: str, name: str) -> str:
    """The media type of the file at `path` (see `sniff`); a ZIP is a Word document only when its
    central directory lists `word/document.xml`."""
    with open(path, "rb") as file:
        head = file.read(HEAD_BYTES)
        if head.startswith(_ZIP):
            return DOCX if _zip_lists(file, _WORD_DOCUMENT) else OCTET_STREAM
    return sniff(head, name)


def _text_type(name: str) -> str:
    path = PurePath(name.replace("\\", "/"))
    if path.name.lower() in _CODE_NAMES:
        return CODE
    return _EXTENSIONS.get(path.suffix.lower().lstrip("."), TEXT)


def _local_entry_named(head: bytes, wanted: bytes) -> bool:
    """Whether a ZIP local file header within `head` names `wanted`."""
    for match in re.finditer(re.escape(_ZIP), head):
        at = match.start()
        if at + 30 > len(head):
            break
        (name_length,) = struct.unpack_from("<H", head, at + 26)
        if head[at + 30 : at + 30 + name_length] == wanted:
            return True
    return False


def _zip_lists(file: BinaryIO, wanted: bytes) -> bool:
    """Whether the central directory of the ZIP archive `file` lists an entry named `wanted` among
    its first `MAX_ZIP_ENTRIES`; False when the archive's end records do not parse."""
    size = file.seek(0, 2)
    tail_length = min(size, 22 + 0xFFFF)
    file.seek(size - tail_length)
    tail = file.read(tail_length)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(tail):
        return False
    entries, directory_size = struct.unpack_from("<HI", tail, at + 10)
    end_record = size - tail_length + at
    directory_start = end_record - directory_size
    if entries == 0xFFFF or directory_size == 0xFFFFFFFF:  # ZIP64: the real counts are in its end record
        zip64_end = end_record - 20 - 56
        if zip64_end < 0:
            return False
        file.seek(zip64_end)
        record = file.read(56)
        if not record.startswith(b"PK\x06\x06"):
            return False
        entries, directory_size = struct.unpack_from("<QQ", record, 32)
        directory_start = zip64_end - directory_size
    if directory_start < 0:
        return False
    file.seek(directory_start)
    for _ in range(min(entries, MAX_ZIP_ENTRIES)):
        header = file.read(46)
        if len(header) < 46 or not header.startswith(b"PK\x01\x02"):
            break
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", header, 28)
        if file.read(name_length) == wanted:
            return True
        file.seek(extra_length + comment_length, 1)
    return False
