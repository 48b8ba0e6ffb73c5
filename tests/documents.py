"""Documents for the File Search tests and benchmarks, made in memory as bytes: ordinary ones of
every format, each with a word a person would search for, and hostile ones (a ZIP bomb, a PDF that
makes its parser work forever, bytes posing as a PDF or as text).

No document is checked in: each is a few lines of code saying what is in it, and the big ones are
made in well under a second per MB.
"""

from __future__ import annotations

import io
import random
import struct
import zipfile
import zlib

import docx
import pypdf
from fpdf import FPDF

MIB = 1024 * 1024
_DATE = (1 << 5) | 1  # 1 January 1980, the earliest a ZIP can say
# Words of the HTML page that sit in its <script> and <style>: extraction must not find them.
SCRIPT_WORD, STYLE_WORD = "scriptonlyword", "styleonlyword"
_WORDS = (
    "river", "lantern", "copper", "meadow", "harbor", "violet", "granite", "orchard", "falcon", "ember",
    "summit", "willow", "quartz", "thistle", "beacon", "cobalt", "juniper", "saffron", "tundra", "marble",
    "the", "of", "and", "a", "to", "in", "is", "was", "for", "on", "with", "under", "beyond", "between",
)  # fmt: skip


def markdown_doc() -> bytes:
    """A Markdown document of three sections, each under its own heading."""
    sections = []
    for n, (heading, word) in enumerate((("Installation", "pipx"), ("Configuration", "toml"), ("Usage", "cli")), 1):
        body = " ".join(f"Sentence {i} of the {heading.lower()} section mentions {word}." for i in range(30))
        sections.append(f"## {n}. {heading}\n\n{body}\n\n{body}")
    return ("# The handbook\n\n" + "\n\n".join(sections) + "\n").encode()


def html_page() -> bytes:
    """A page with a <title>, headings, paragraphs, a list, a table, a script and a style; the
    script's and style's words (`SCRIPT_WORD`, `STYLE_WORD`) are no text of the page."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>  Tide tables &amp; more </title>
<style>.{STYLE_WORD} {{ color: red }}</style>
<script>var x = "{SCRIPT_WORD}";</script></head>
<body><h1>Tides</h1><p>The <b>spring</b> tide comes
   twice a month.</p><ul><li>High water</li><li>Low water</li></ul>
<table><tr><th>Port</th><th>Height</th></tr><tr><td>Brest</td><td>7 m</td></tr></table>
<noscript>enable scripts</noscript><script>document.write("{SCRIPT_WORD}")</script>
<p hidden>invisible words</p><p>Last line<br>after a break.</p></body></html>""".encode()


def docx_with_table(word_only_in_table: str) -> bytes:
    """A Word document titled "Annual report": a heading, two paragraphs, a table holding
    `word_only_in_table`, another paragraph, a header and a footer."""
    document = docx.Document()
    document.core_properties.title = "Annual report"
    document.add_heading("Results", level=1)
    document.add_paragraph("Revenue grew in every region this year.")
    document.add_paragraph("The table below lists the regions.")
    table = document.add_table(rows=2, cols=2)
    for (row, col), value in {(0, 0): "Region", (0, 1): "Growth", (1, 0): word_only_in_table, (1, 1): "12%"}.items():
        table.cell(row, col).text = value
    document.add_paragraph("Closing remarks follow the table.")
    section = document.sections[0]
    section.header.paragraphs[0].text = "Confidential header"
    section.footer.paragraphs[0].text = "Page footer"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def two_page_pdf(word_on_page_two: str) -> bytes:
    """A PDF titled "Two pages" whose second page alone holds `word_on_page_two` (fpdf2)."""
    pdf = FPDF()
    pdf.set_title("Two pages")
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "The first page talks about the weather and nothing else.")
    pdf.add_page()
    pdf.multi_cell(0, 8, f"The second page names {word_on_page_two} once.")
    return bytes(pdf.output())


def blank_pdf() -> bytes:
    """A PDF whose one page holds a drawing and no text, as a scan holds none (fpdf2)."""
    pdf = FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 100, 100)
    return bytes(pdf.output())


def encrypted_pdf(word_on_page_two: str, user_password: str, owner_password: str = "owner") -> bytes:
    """`two_page_pdf(word_on_page_two)` encrypted (AES-256): with an empty `user_password` anyone
    may open it, as many "protected" PDFs allow."""
    writer = pypdf.PdfWriter(clone_from=io.BytesIO(two_page_pdf(word_on_page_two)))
    writer.encrypt(user_password, owner_password, algorithm="AES-256")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def long_text(chars: int, seed: int = 0) -> bytes:
    """About `chars` characters of ASCII prose in paragraphs (deterministic for a seed)."""
    return _prose(chars, random.Random(seed)).encode()


def binary_as_text() -> bytes:
    """Random bytes, NULs among them: what a `.txt` upload may really hold."""
    return random.Random(7).randbytes(4096)


def fake_pdf() -> bytes:
    """Bytes that start as a PDF does and are garbage after."""
    return b"%PDF-1.7\n" + random.Random(3).randbytes(2048)


def zip_bomb_docx(unpacked_bytes: int = 1024 * MIB) -> bytes:
    """A Word document (about 1 MB) whose `word/document.xml` unpacks to `unpacked_bytes` of
    valid XML, almost all of it spaces. The deflate stream is made once for 1 MiB of spaces and
    repeated: a full flush makes each copy stand alone, so a GB costs no GB of compressing."""
    blank = b" " * MIB
    head = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w='
            b'"http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>')  # fmt: skip
    tail = b"<w:p><w:r><w:t>boom</w:t></w:r></w:p></w:body></w:document>"
    copies = max(1, (unpacked_bytes - len(head) - len(tail)) // MIB)
    crc = zlib.crc32(head)
    for _ in range(copies):
        crc = zlib.crc32(blank, crc)
    crc = zlib.crc32(tail, crc)
    deflated = _deflate(head, final=False) + _deflate(blank, final=False) * copies + _deflate(tail, final=True)
    entries = [(name, data) for name, data in _entries(docx_with_table("ordinary")) if name != "word/document.xml"]
    parts = [(name, _deflate(data, final=True), zlib.crc32(data), len(data)) for name, data in entries]
    parts.append(("word/document.xml", deflated, crc, len(head) + copies * MIB + len(tail)))
    return _zip(parts)


def looping_pdf(pages: int = 200, depth: int = 12, fan_out: int = 4) -> bytes:
    """A PDF whose every page draws a form XObject that draws the next `fan_out` times, `depth`
    levels down: no cycle for pypdf to detect, but `fan_out ** depth` forms to interpret per page.
    pypdf 7.1 stops interpreting forms after a cap per page, which it reaches after about 1.7 s of
    work: `pages` such pages keep it busy for minutes (200: about 6)."""
    first_form = 4 + pages
    contents = first_form + depth
    resources = b"<< /XObject << /X %d 0 R >> /Font << /F1 3 0 R >> >>" % first_form
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % (4 + n) for n in range(pages)), pages),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %s /Contents %d 0 R >>"
                % (resources, contents)] * pages  # fmt: skip
    for level in range(depth):
        number = first_form + level
        if level < depth - 1:
            inner = b"<< /XObject << /X %d 0 R >> /Font << /F1 3 0 R >> >>" % (number + 1)
            objects.append(_form(inner, b"/X Do " * fan_out))
        else:
            objects.append(_form(b"<< /Font << /F1 3 0 R >> >>", b"BT /F1 12 Tf 10 10 Td (again) Tj ET"))
    objects.append(_stream(b"", b"/X Do"))
    return _pdf(objects)


def nested_html(depth: int = 50_000, word: str = "deep") -> bytes:
    """A page of `depth` unclosed nested <div>s around one word: about 5 bytes a level, and the
    HTML parser's work grows with the square of the depth (50,000 levels, 250 KB: seconds of parsing)."""
    return b"<html><body>" + b"<div>" * depth + word.encode() + b"</body></html>"


def cyclic_pages_pdf() -> bytes:
    """A PDF whose page tree holds itself among its kids (pypdf detects the cycle)."""
    return _pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
    ])  # fmt: skip


def big_pdf(mb: float, pages: int | None = None, seed: int = 0) -> bytes:
    """A PDF of about `mb` MB: `pages` pages (20 per MB unless given) of real prose (about 2,500
    characters each, page N saying "page N"), each also showing an image of incompressible noise
    that makes up the size, as scans and photos make up the size of real PDFs. Written directly,
    not through fpdf2: 25 MB take about a second."""
    rng = random.Random(seed)
    pages = pages or max(2, round(mb * 20))
    target = int(mb * MIB)
    texts = [f"This is page {n}. " + _prose(2500, rng) for n in range(1, pages + 1)]
    image_bytes = max(1, (target - sum(len(t) for t in texts) * 11 // 10) // pages)
    width = 256
    height = max(1, image_bytes // width)
    font = 3 + 3 * pages
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    for n, text in enumerate(texts):
        page, content, image = 3 + 3 * n, 4 + 3 * n, 5 + 3 * n
        kids.append(b"%d 0 R" % page)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources "
            b"<< /Font << /F1 %d 0 R >> /XObject << /Im %d 0 R >> >> >>" % (content, font, image)
        )
        objects.append(_stream(b"", _page_content(text)))
        objects.append(_stream(b"/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
                               b"/BitsPerComponent 8" % (width, height), rng.randbytes(width * height)))  # fmt: skip
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), pages)
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return _pdf(objects)


def _prose(chars: int, rng: random.Random) -> str:
    paragraphs, length = [], 0
    while length < chars:
        sentences = []
        for _ in range(rng.randint(2, 6)):
            words = rng.choices(_WORDS, k=rng.randint(6, 18))
            sentences.append(" ".join(words).capitalize() + ".")
        paragraph = " ".join(sentences)
        paragraphs.append(paragraph)
        length += len(paragraph) + 2
    return "\n\n".join(paragraphs)


def _page_content(text: str) -> bytes:
    """A content stream writing `text` in lines of at most 90 characters, top to bottom."""
    lines: list[str] = []
    for paragraph in text.split("\n\n"):
        line = ""
        for word in paragraph.split():
            if len(line) + len(word) >= 90:
                lines.append(line)
                line = ""
            line = f"{line} {word}" if line else word
        lines.extend((line, ""))
    shown = b" T* ".join(b"(%s) Tj" % line.encode("latin-1") for line in lines)
    return b"q 200 0 0 150 380 30 cm /Im Do Q BT /F1 9 Tf 11 TL 40 760 Td " + shown + b" ET"


def _form(resources: bytes, content: bytes) -> bytes:
    return _stream(b"/Type /XObject /Subtype /Form /BBox [0 0 100 100] /Resources " + resources, content)


def _stream(dictionary: bytes, data: bytes) -> bytes:
    return b"<< %s /Length %d >>\nstream\n%s\nendstream" % (dictionary, len(data), data)


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF file of `objects` (numbered from 1, the first the catalog), with its xref table."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _deflate(data: bytes, *, final: bool) -> bytes:
    """Raw deflate of `data`; unless `final`, ended with a full flush, so that what follows can be
    any other stream's blocks."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush(zlib.Z_FINISH if final else zlib.Z_FULL_FLUSH)


def _entries(archive: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(archive)) as source:
        return [(name, source.read(name)) for name in source.namelist()]


def _zip(parts: list[tuple[str, bytes, int, int]]) -> bytes:
    """A ZIP archive of already deflated entries: (name, deflated bytes, CRC-32, unpacked size),
    each dated 1 January 1980."""
    out = bytearray()
    directory = bytearray()
    for name, data, crc, size in parts:
        encoded = name.encode()
        directory += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 8, 0, _DATE, crc, len(data), size,
                                 len(encoded), 0, 0, 0, 0, 0, len(out)) + encoded  # fmt: skip
        out += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, _DATE, crc, len(data), size, len(encoded), 0)
        out += encoded + data
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(parts), len(parts), len(directory), len(out), 0)
    return bytes(out + directory + end)
