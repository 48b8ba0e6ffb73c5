"""Extraction through real worker processes (infrastructure.extraction): every format gives the
text a person would look for, a hostile document ends FAILED with its reason within the time
limit and costs nothing else, many threads may extract at once, and no worker outlives the pool."""

from __future__ import annotations

import io
import os
import signal
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from domain.chunking import chunk_text
from domain.documents import DOCX, HTML, MARKDOWN, PDF, TEXT, Extracted, ExtractionFailed
from infrastructure.extraction import OCTET_STREAM, ExtractorPool, sniff_file
from tests.documents import (
    SCRIPT_WORD, STYLE_WORD, binary_as_text, blank_pdf, cyclic_pages_pdf, docx_with_table, encrypted_pdf, fake_pdf,
    html_page, long_text, looping_pdf, markdown_doc, two_page_pdf, zip_bomb_docx,
)  # fmt: skip

TIMEOUT_SECONDS = 5.0
# What a failure may take beyond the time limit: killing the worker and answering.
SLACK_SECONDS = 2.0


@pytest.fixture(scope="module")
def pool() -> Iterator[ExtractorPool]:
    extraction = ExtractorPool(workers=2, timeout_seconds=TIMEOUT_SECONDS, memory_mb=512)
    yield extraction
    extraction.close()


Files = Callable[[str, bytes], tuple[str, str]]


@pytest.fixture
def files(tmp_path: Path) -> Files:
    """Writes a document's bytes to a file of the test's own and answers its path and type."""

    def write(name: str, data: bytes) -> tuple[str, str]:
        path = tmp_path / name
        path.write_bytes(data)
        return str(path), sniff_file(str(path), name)

    return write


def worker_pids() -> set[int]:
    """The extraction workers this process has started and not yet reaped (a zombie, whose
    command line is gone, counts when it was a Python)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        name, _, fields = stat.partition(" (")[2].rpartition(") ")
        state, parent = fields.split()[:2]
        if int(parent) == os.getpid() and (
            b"infrastructure.extraction.worker" in command or (state == "Z" and name.startswith("python"))
        ):
            found.add(int(entry.name))
    return found


def wait_until_dead(pids: list[int], timeout: float = 30.0) -> None:
    """Returns once every process of `pids` has died (a zombie or reaped)."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while True:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2].split()[0]
            except OSError:
                break  # reaped
            if state in ("Z", "X"):
                break
            assert time.monotonic() < deadline, f"worker {pid} still alive {timeout} s after its SIGKILL"
            time.sleep(0.01)


def failure(pool: ExtractorPool, path: str, media_type: str) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(ExtractionFailed) as failed:
        pool.extract(path, media_type)
    return failed.value.reason, time.monotonic() - started


# -- every format ------------------------------------------------------------------------------------


def test_markdown_is_extracted_as_written(pool: ExtractorPool, files: Files) -> None:
    path, media_type = files("handbook.md", markdown_doc())
    assert media_type == MARKDOWN
    extracted = pool.extract(path, media_type)
    assert (extracted.text, extracted.page_starts, extracted.title) == (markdown_doc().decode(), (), None)
    # and its chunks come back embedded: one float32 vector per chunk, by the model it names
    chunks = chunk_text(Extracted(extracted.text), media_type)
    assert extracted.model is not None and extracted.model.startswith("wordllama/")
    assert extracted.vectors is not None and len(extracted.vectors) == len(chunks) * 256 * 4


def test_html_gives_what_the_page_shows(pool: ExtractorPool, files: Files) -> None:
    path, media_type = files("tides.html", html_page())
    assert media_type == HTML
    extracted = pool.extract(path, media_type)
    assert extracted.title == "Tide tables & more"
    assert extracted.text == (
        "Tides\n\nThe spring tide comes twice a month.\n\nHigh water\nLow water\n\nPort | Height\nBrest | 7 m"
        "\n\nLast line\nafter a break."
    )
    for hidden in (SCRIPT_WORD, STYLE_WORD, "enable scripts", "invisible"):
        assert hidden not in extracted.text


def test_a_word_document_gives_its_paragraphs_table_header_and_footer(pool: ExtractorPool, files: Files) -> None:
    path, media_type = files("report.docx", docx_with_table("zanzibar"))
    assert media_type == DOCX
    extracted = pool.extract(path, media_type)
    assert extracted.title == "Annual report"
    assert extracted.text == (
        "# Results\n\nRevenue grew in every region this year.\n\nThe table below lists the regions.\n\n"
        "Region | Growth\nzanzibar | 12%\n\nClosing remarks follow the table.\n\nConfidential header\n\nPage footer"
    )


def test_a_pdf_gives_its_pages_and_where_each_starts(pool: ExtractorPool, files: Files) -> None:
    path, media_type = files("two.pdf", two_page_pdf("apricot"))
    assert media_type == PDF
    extracted = pool.extract(path, media_type)
    assert extracted.title == "Two pages"
    assert len(extracted.page_starts) == 2 and extracted.page_starts[0] == 0
    assert "apricot" not in extracted.text[: extracted.page_starts[1]]
    assert extracted.text.index("apricot") > extracted.page_starts[1]
    assert extracted.text[extracted.page_starts[1] :].startswith("The second page")


def test_a_pdf_anyone_may_open_is_read_and_a_locked_one_is_refused(pool: ExtractorPool, files: Files) -> None:
    path, media_type = files("open.pdf", encrypted_pdf("kiwi", user_password=""))
    assert "kiwi" in pool.extract(path, media_type).text
    path, media_type = files("locked.pdf", encrypted_pdf("kiwi", user_password="secret"))
    assert failure(pool, path, media_type)[0] == "the PDF is encrypted: it cannot be read without its password"


@pytest.mark.parametrize(("data", "text"), [
    ("Grüße aus Köln\r\nzweite Zeile".encode("utf-16"), "Grüße aus Köln\nzweite Zeile"),
    ("Grüße aus Köln".encode("utf-32"), "Grüße aus Köln"),
    ("\ufeffwith a UTF-8 mark".encode(), "with a UTF-8 mark"),
    ("Le café crème de Noël est servi à la fenêtre de l'hôtel, près de la forêt.\r".encode("latin-1"),
     "Le café crème de Noël est servi à la fenêtre de l'hôtel, près de la forêt.\n"),
])  # fmt: skip
def test_text_in_any_encoding_is_decoded(pool: ExtractorPool, files: Files, data: bytes, text: str) -> None:
    path, media_type = files("notes.txt", data)
    assert media_type == TEXT
    assert pool.extract(path, media_type).text == text


def test_megabytes_of_text_come_back_whole(files: Files) -> None:
    # A pool with the service's own time limit (60 s): 5 MB are cut into chunks and embedded in
    # about 4 s here, over the other tests' 5 s limit on a loaded machine.
    data = long_text(5_000_000) + "ünïcödé €".encode()
    path, media_type = files("long.txt", data)
    extraction = ExtractorPool(workers=1, timeout_seconds=60.0, memory_mb=512)
    try:
        assert extraction.extract(path, media_type).text == data.decode()
    finally:
        extraction.close()


# -- sniffing files ----------------------------------------------------------------------------------


def test_a_word_document_is_known_by_its_directory_even_far_beyond_its_head(files: Files) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(docx_with_table("x"))) as source, zipfile.ZipFile(buffer, "w") as target:
        target.writestr("media/noise.bin", os.urandom(200_000), zipfile.ZIP_STORED)  # pushes everything past 64 KiB
        for entry in source.infolist():
            target.writestr(entry, source.read(entry))
    assert files("late.docx", buffer.getvalue())[1] == DOCX
    other = io.BytesIO()
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("word/other.xml", "<x/>")
    assert files("other.docx", other.getvalue())[1] == OCTET_STREAM
    assert files("bomb.docx", zip_bomb_docx())[1] == DOCX  # it says it is one: extraction refuses it


# -- what fails, and why -----------------------------------------------------------------------------


def test_an_empty_file_fails(pool: ExtractorPool, files: Files) -> None:
    assert failure(pool, *files("empty.txt", b""))[0] == "the file is empty"


def test_an_unsupported_type_fails(pool: ExtractorPool, files: Files) -> None:
    path, media_type = files("photo.txt", binary_as_text())
    assert media_type == OCTET_STREAM
    assert failure(pool, path, media_type)[0] == (
        "unsupported file type: only text, Markdown, JSON, CSV, source code, HTML, PDF and Word (.docx) files "
        "can be searched"
    )


def test_binary_bytes_called_text_fail(pool: ExtractorPool, files: Files) -> None:
    path, _ = files("photo.txt", binary_as_text())
    assert failure(pool, path, TEXT)[0].startswith("the file is not text: ")


def test_garbage_after_a_pdf_header_fails(pool: ExtractorPool, files: Files) -> None:
    reason, _ = failure(pool, *files("fake.pdf", fake_pdf()))
    assert reason.startswith("the file is not a PDF document: its bytes do not parse as PDF (")


def test_a_pdf_whose_page_tree_holds_itself_fails(pool: ExtractorPool, files: Files) -> None:
    reason, _ = failure(pool, *files("cycle.pdf", cyclic_pages_pdf()))
    assert reason == "the PDF could not be read (PdfReadError: Detected cyclic page references.)"


def test_a_pdf_without_text_fails(pool: ExtractorPool, files: Files) -> None:
    reason, _ = failure(pool, *files("blank.pdf", blank_pdf()))
    assert reason == "the PDF holds no extractable text (a scanned image?)"


def test_a_zip_bomb_fails_at_once(pool: ExtractorPool, files: Files) -> None:
    reason, seconds = failure(pool, *files("bomb.docx", zip_bomb_docx()))
    assert reason == "the document expands to more than 200 MB when unpacked (a decompression bomb?)"
    # refused by its sizes before any unpacking, not stopped at the time limit (about 0.1 s
    # quiet; 1.2 s on a loaded CI machine, so no tighter bound than the limit's)
    assert seconds < TIMEOUT_SECONDS


def test_a_pdf_that_keeps_its_parser_busy_is_stopped_at_the_limit(pool: ExtractorPool, files: Files) -> None:
    reason, seconds = failure(pool, *files("loop.pdf", looping_pdf()))
    assert reason == "extraction took longer than 5 s (the limit); the file may be hostile or too complex"
    assert TIMEOUT_SECONDS <= seconds < TIMEOUT_SECONDS + SLACK_SECONDS
    # the worker was killed and replaced: the next document is extracted as ever
    path, media_type = files("two.pdf", two_page_pdf("apricot"))
    assert "apricot" in pool.extract(path, media_type).text
    assert len(worker_pids()) <= 2


def test_a_worker_that_dies_fails_its_document_only(pool: ExtractorPool, files: Files) -> None:
    handbook = files("handbook.md", markdown_doc())
    pool.extract(*handbook)  # a worker is up: the document below starts at once
    path, media_type = files("loop.pdf", looping_pdf())
    # the kernel kills every worker (the OOM killer, say), the busy one and any idle one
    killed: list[int] = []

    def kill_all() -> None:
        for pid in worker_pids():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    killer = threading.Timer(1.0, kill_all)
    killer.start()
    reason, seconds = failure(pool, path, media_type)
    killer.join()
    assert reason == (
        "extraction crashed on this document (it may need more memory than extraction allows (512 MB), or be "
        "malformed)"
    )
    assert seconds < TIMEOUT_SECONDS
    # A SIGKILL is sent at once but takes effect when the kernel gets to it (a loaded machine: some
    # milliseconds): the next document comes once the killed workers are dead, as after an OOM kill.
    wait_until_dead(killed)
    assert pool.extract(*handbook).text == markdown_doc().decode()


def test_a_document_needing_more_memory_than_allowed_fails(files: Files) -> None:
    small = ExtractorPool(workers=1, timeout_seconds=30, memory_mb=200, max_chars=10**9)
    try:
        path, media_type = files("huge.txt", b"word " * (100 * 1024 * 1024 // 5))
        assert failure(small, path, media_type)[0] == "the document needs more memory than extraction allows (200 MB)"
        path, media_type = files("handbook.md", markdown_doc())
        assert small.extract(path, media_type).text == markdown_doc().decode()
    finally:
        small.close()


def test_text_beyond_the_longest_allowed_fails(files: Files) -> None:
    small = ExtractorPool(workers=1, timeout_seconds=TIMEOUT_SECONDS, max_chars=1_000)
    try:
        reason = failure(small, *files("long.txt", long_text(2_000)))[0]
        assert reason == "the document's text is longer than 1,000 characters (the limit)"
        reason = failure(small, *files("long.pdf", two_page_pdf("word " * 300)))[0]
        assert reason == "the document's text is longer than 1,000 characters (the limit)"
    finally:
        small.close()


# -- many at once, and no process left ---------------------------------------------------------------


def test_threads_extract_at_once_on_as_many_workers_as_allowed(pool: ExtractorPool, files: Files) -> None:
    documents = [files(f"doc{n}.pdf", two_page_pdf(f"word{n}")) for n in range(6)]
    documents += [files(f"doc{n}.docx", docx_with_table(f"cell{n}")) for n in range(6)]
    seen_workers: list[int] = []

    def extract(document: tuple[str, str]) -> str:
        seen_workers.append(len(worker_pids()))
        return pool.extract(*document).text

    with ThreadPoolExecutor(max_workers=8) as threads:
        texts = list(threads.map(extract, documents))
    for n in range(6):
        assert f"word{n}" in texts[n]
        assert f"cell{n}" in texts[6 + n]
    assert max(seen_workers) <= 2


def test_close_leaves_no_worker_behind(files: Files) -> None:
    own = ExtractorPool(workers=2, timeout_seconds=TIMEOUT_SECONDS)
    before = worker_pids()
    path, media_type = files("handbook.md", markdown_doc())
    with ThreadPoolExecutor(max_workers=2) as threads:
        list(threads.map(lambda _: own.extract(path, media_type), range(4)))
    assert 1 <= len(worker_pids() - before) <= 2
    # a busy worker is stopped too: its caller is told why
    loop_path, loop_type = files("loop.pdf", looping_pdf())
    with ThreadPoolExecutor(max_workers=1) as threads:
        busy = threads.submit(own.extract, loop_path, loop_type)
        time.sleep(0.5)
        own.close()
        with pytest.raises(ExtractionFailed, match="shutting down"):
            busy.result(timeout=5)
    assert worker_pids() - before == set()
    with pytest.raises(ExtractionFailed, match="shutting down"):
        own.extract(path, media_type)
