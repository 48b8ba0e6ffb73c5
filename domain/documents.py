"""The documents of File Search tools (docs/kinds/index.md, docs/kinds/file-search-tools.md): what the application, the
extraction process, the blob store and the chunk index say to each other.

A document's original bytes live in a content-addressed blob store (`BlobStore`, SHA-256), and so
does the text extracted from them. The text is split into `Chunk`s (about 1,500 characters, 200
overlapping, along headings and paragraphs), which the chunk index (`DocumentIndex`) holds: a read
model, built from the events and the blobs by a projection (`projections/chunks.py`), which
writes its changes with its tracking position (`apply`) and resumes from it (`position`): an SQLite
FTS5 file by default and OpenSearch when `OPENSEARCH_URL` is set, both held to one contract suite.

A chunk id is `<documentId>#<n>`; a document id is never holding `#`. A query reaches an engine
only as its words (`query_terms`): no syntax character of FTS5 or OpenSearch ever does.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from domain.errors import DocumentsUnavailable

CHUNK_CHARS = 1_500
CHUNK_OVERLAP = 200
MAX_QUERY_CHARS = 1_000
MAX_QUERY_TERMS = 32
# The width of a chunk's vector in the indexes (the embedding model's, infrastructure/embeddings.py).
VECTOR_DIMENSIONS = 256
# Where a snippet marks the words that matched (the console splits on these exact markers).
MARK_START, MARK_END = "<mark>", "</mark>"

# Media types a document may have (taken from its bytes, docs/kinds/file-search-tools.md).
TEXT, MARKDOWN, JSON, CSV, CODE = "text/plain", "text/markdown", "application/json", "text/csv", "text/x-source"
HTML = "text/html"
PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
MEDIA_TYPES = (TEXT, MARKDOWN, JSON, CSV, CODE, HTML, PDF, DOCX)

# Document states.
PROCESSING, READY, FAILED = "PROCESSING", "READY", "FAILED"

# English words too common to tell documents apart; a query of only these is refused with a reason.
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they "
    "this to was will with".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)


def chunk_id(document_id: str, n: int) -> str:
    return f"{document_id}#{n}"


def split_chunk_id(value: str) -> tuple[str, int] | None:
    """(document id, n) for a chunk id, None for anything else (a document id)."""
    document_id, sep, n = value.rpartition("#")
    if not sep or not document_id or not n.isdigit() or len(n) > 9:
        return None
    return document_id, int(n)


def query_terms(query: str) -> list[str]:
    """The words of a query an engine is given: lower-cased runs of letters and digits, stop words
    left out, each once, at most `MAX_QUERY_TERMS`. Empty when nothing distinctive is left."""
    terms = [w for w in dict.fromkeys(m.group(0).lower() for m in _WORD.finditer(query)) if w not in STOP_WORDS]
    return terms[:MAX_QUERY_TERMS]


@dataclass(frozen=True)
class Extracted:
    """What extraction makes of one document's bytes: its text, where each PDF page starts in it
    (character offsets, ascending, the first 0; empty for formats without pages), and a title when
    the document names one (an HTML <title>, a docx's core title, a PDF's metadata title)."""

    text: str
    page_starts: tuple[int, ...] = ()
    title: str | None = None
    # The chunks' vectors (float32, little-endian, one per chunk of `chunk_text` of this text, in
    # order) and the model that made them, when the extraction worker embedded them.
    vectors: bytes | None = None
    model: str | None = None


@dataclass(frozen=True)
class Chunk:
    """One piece of a document's text: its number in the document (0, 1, …), where it starts and
    ends in the text (character offsets, end exclusive), its text (`text[start:end]`), and the
    page it starts on (1-based, PDFs only)."""

    n: int
    start: int
    end: int
    text: str
    page: int | None = None
    vector: bytes | None = None  # its embedding (float32, little-endian) by the document's `model`


@dataclass(frozen=True)
class IndexedDocument:
    """What the index keeps of a document beside its chunks."""

    document_id: str
    title: str  # the document's title, else its file name
    name: str  # its file name
    media_type: str
    model: str | None = None  # the embedding model of its chunks' vectors (None: lexical only)


@dataclass(frozen=True)
class Hit:
    """One `search` result: a chunk, its document and title, a snippet of its text with the matching
    words between `MARK_START` and `MARK_END`, the engine's score (higher is better) and page."""

    chunk_id: str
    document_id: str
    title: str
    snippet: str
    score: float
    page: int | None = None
    start: int = 0
    retrievers: tuple[str, ...] = ()  # which retrievers found it ("lexical", "semantic")


@dataclass(frozen=True)
class StoredChunk:
    """A chunk as the index gives it back (`read_context`)."""

    chunk_id: str
    document_id: str
    n: int
    start: int
    end: int
    text: str
    page: int | None = None


@dataclass(frozen=True)
class PutDocument:
    """A change of the index: `chunks` become the document's chunks."""

    tenant: str
    tool: str
    document: IndexedDocument
    chunks: Sequence[Chunk]


@dataclass(frozen=True)
class RemoveDocument:
    """A change of the index: the document's chunks are gone."""

    tenant: str
    tool: str
    document_id: str


@dataclass(frozen=True)
class DropTool:
    """A change of the index: every chunk of the tool is gone."""

    tenant: str
    tool: str


@dataclass(frozen=True)
class PutVectors:
    """A change of the index: the document's chunks get `vectors` (one a chunk, in order) by
    `model` in place of those they had (a document embedded again); their words do not change."""

    tenant: str
    tool: str
    document_id: str
    model: str
    vectors: Sequence[bytes]


IndexChange = PutDocument | RemoveDocument | DropTool | PutVectors


@dataclass(frozen=True)
class IndexPosition:
    """How far the index has applied an application's notification log (the projection's tracking
    record), and the identity of the event store that log is of (`projections/store_identity.py`)."""

    application_name: str
    notification_id: int
    store: str | None = None


class IndexUnavailable(DocumentsUnavailable):
    """The chunk index cannot be reached now (OpenSearch down): a 503, never a 500. Raise it with
    a message saying what failed (`IndexUnavailable("OpenSearch: connection refused")`)."""


class DocumentIndex(ABC):
    """The chunk index of every File Search tool of every tenant. Every method is scoped by tenant
    and tool: nothing ever crosses between them. Writes are idempotent (a document put twice holds
    the chunks of the last put only), and are visible to the next query of any thread."""

    @abstractmethod
    def put(self, tenant: str, tool: str, document: IndexedDocument, chunks: Sequence[Chunk]) -> None:
        """Makes `chunks` the document's chunks (any it had before are gone)."""

    def put_many(self, documents: Sequence[tuple[str, str, IndexedDocument, Sequence[Chunk]]]) -> None:
        """`put` of each (tenant, tool, document, chunks), in one write where the engine allows
        (a rebuild): visible to the next query once it returns, as `put` is."""
        for tenant, tool, document, chunks in documents:
            self.put(tenant, tool, document, chunks)

    def put_vectors(self, tenant: str, tool: str, document_id: str, model: str, vectors: Sequence[bytes]) -> bool:
        """Gives the document's chunks `vectors` by `model` (one a chunk, in order) in place of
        those they had; False (nothing changed) when the index has not one chunk a vector of the
        document (a document not indexed yet, or chunked otherwise)."""
        return False

    @abstractmethod
    def remove(self, tenant: str, tool: str, document_id: str) -> None:
        """The document's chunks are gone; removing a document the index lacks is no error."""

    @abstractmethod
    def drop(self, tenant: str, tool: str) -> None:
        """Every chunk of the tool is gone (the tool was deleted)."""

    @abstractmethod
    def search(self, tenant: str, tool: str, terms: Sequence[str], limit: int,
               document_ids: Sequence[str] | None = None, exact: bool = True) -> list[Hit]:
        """The best `limit` chunks for `terms` (from `query_terms`, never empty; any term may match,
        the more and rarer the better: BM25), best first, within `document_ids` when given.
        `exact=False` (hybrid's list of words, which fusion reads by rank): an index may rank by
        the query's rarer words alone, leaving out words found in a large share of its chunks
        (index elimination by IDF, as inexact top-k retrieval does), so that its answer is not
        BM25's of every word."""

    # Whether `vector_search` answers (an index without vectors is lexical only).
    vectors: bool = False
    # Whether a read mostly waits on another process (a search engine over the network): hybrid
    # retrieval then asks the words and the meaning side by side (`domain.retrieval`), rather than
    # one after the other as it does an index whose reads are this process's own CPU.
    remote: bool = False

    def vector_search(self, tenant: str, tool: str, vector: bytes, model: str, limit: int,
                      document_ids: Sequence[str] | None = None) -> list[Hit]:
        """The `limit` chunks whose vectors by `model` are nearest to `vector` (float32, L2-normalized;
        cosine similarity, the hit's score, higher is better), best first, within `document_ids` when
        given; chunks of another model, or with no vector, are never answered."""
        return []

    def vector_mean(self, tenant: str, tool: str, model: str) -> bytes | None:
        """The mean of the tool's vectors by `model` (float32, each vector L2-normalized before
        it is averaged; not normalized itself), or None: no vectors, or an index that cannot tell
        (semantic retrieval then asks with the query's vector as it is, `domain.retrieval`)."""
        return None

    @abstractmethod
    def chunks(self, tenant: str, tool: str, document_id: str, first: int, last: int) -> list[StoredChunk]:
        """The document's chunks numbered `first` to `last` (both included) that exist, in order."""

    @abstractmethod
    def count(self, tenant: str, tool: str) -> int:
        """How many chunks the tool has (for checks and rebuilds)."""

    @abstractmethod
    def clear(self) -> None:
        """Every chunk of every tenant is gone, and every position recorded (a rebuild starts here)."""

    @abstractmethod
    def apply(self, changes: Sequence[IndexChange], position: IndexPosition | None = None) -> None:
        """Makes the changes in their order, then records `position` (when given): a position the
        index holds has every change before it (the engine allowing, in one transaction)."""

    @abstractmethod
    def position(self, application_name: str) -> IndexPosition | None:
        """The last position recorded for the application's log, None when none is."""

    @abstractmethod
    def total(self) -> int:
        """How many chunks the index holds, of every tenant and tool."""

    def close(self) -> None:
        """Releases what the index keeps open."""


class BlobStore(ABC):
    """Bytes by their SHA-256, per tenant (a tenant never reads another's blobs, even of the same
    bytes). Writing bytes that are there already is no error and changes nothing."""

    @abstractmethod
    def put(self, tenant: str, source: BinaryIO) -> tuple[str, int]:
        """Stores the bytes read from `source` to its end; answers their SHA-256 (hex) and size."""

    @abstractmethod
    def put_bytes(self, tenant: str, data: bytes) -> str:
        """Stores `data`; answers its SHA-256 (hex)."""

    @abstractmethod
    def get(self, tenant: str, sha256: str) -> bytes:
        """The bytes; raises `KeyError` when the tenant has no such blob."""

    @abstractmethod
    def copy_to(self, tenant: str, sha256: str, target: BinaryIO) -> None:
        """Writes the bytes to `target` in pieces (a large blob never whole in memory); `KeyError`."""

    @abstractmethod
    def exists(self, tenant: str, sha256: str) -> bool: ...

    @abstractmethod
    def delete(self, tenant: str, sha256: str) -> None:
        """The blob is gone; deleting one that is not there is no error."""

    def close(self) -> None:
        """Releases what the store keeps open."""


@dataclass
class ExtractionFailed(Exception):
    """Extraction gave up on a document, with a reason a person understands."""

    reason: str
    details: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.reason
