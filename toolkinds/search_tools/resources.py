"""What File Search tools keep documents with (docs/kinds/file-search-tools.md), built from the settings
by the composition root (`KindPlugin.resources`): the blob store beside the event store (a folder in
the data dir, or a table of the PostgreSQL store), the chunk index (an SQLite FTS5 file in the data
dir, or OpenSearch when `OPENSEARCH_URL` is set), the pool of extraction processes, started on
first use, and the query embedder of semantic retrieval."""

from __future__ import annotations

from functools import partial

from api.kinds import Wiring
from domain.documents import DocumentIndex
from toolkinds.search_tools.kind import Files


def build_files(wiring: Wiring) -> Files:
    from infrastructure.blobs import open_blob_store
    from infrastructure.embeddings import model_name
    from infrastructure.extraction import ExtractorPool, sniff_file
    from projections.chunks_opensearch import OpenSearchDocumentIndex
    from projections.chunks_sqlite import SqliteDocumentIndex

    settings = wiring.settings
    blobs = open_blob_store(settings, wiring.store)
    index: DocumentIndex
    if settings.opensearch_url is not None:
        index = OpenSearchDocumentIndex(wiring.opensearch(), index=settings.opensearch_chunks_index,
                                        replicas=settings.opensearch_replicas)
    else:
        index = SqliteDocumentIndex(settings.data_dir / "documents.sqlite")
    workdir = settings.data_dir / "uploads"
    workdir.mkdir(mode=0o700, exist_ok=True)
    for stale in workdir.iterdir():  # files a stopped process was extracting: resumed from the blobs
        stale.unlink(missing_ok=True)
    pool = ExtractorPool(workers=settings.extract_workers, timeout_seconds=settings.extract_timeout_seconds,
                         memory_mb=settings.extract_memory_mb, embedding=settings.embedding_model)

    def close() -> None:
        pool.close()
        index.close()
        blobs.close()

    return Files(blobs=blobs, index=index, sniff=sniff_file, extract=pool.extract, workdir=workdir,
                 workers=settings.extract_workers, tenant_workers=settings.tenant_max_extractions,
                 upload_max_seconds=settings.upload_max_seconds, max_upload_bytes=settings.max_upload_mb * 1_048_576, close=close,
                 embed_query=partial(embed_query, choice=settings.embedding_model), embed=pool.embed,
                 embedding_model=model_name(settings.embedding_model))


def embed_query(text: str, model: str | None = None, *, choice: str) -> tuple[str, bytes]:
    """A query's vector, in this process (a static model: well under a millisecond; the model is
    loaded at the first query), by the service's model (`choice`), or for the chunks' vectors of
    `model`: by the choice that made them, named as they are (of another version of the package,
    the vector its choice makes now, the nearest there is until they are embedded again). The
    chunks' vectors are made in the extraction workers."""
    from infrastructure.embeddings import choice_of, default_embedder, to_bytes

    made_by = choice_of(model) if model is not None else None
    embedder = default_embedder(made_by or choice)
    return (model if made_by else embedder.model), to_bytes(embedder.embed_array([text]))
