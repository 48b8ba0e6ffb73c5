"""Text from uploaded documents, for File Search tools (docs/kinds/file-search-tools.md): the media type from the bytes
(`sniff_file`), and the text from a pool of worker processes bounded in time and memory
(`ExtractorPool`). Chunking the text is the domain's (`domain.chunking`)."""

from infrastructure.extraction.pool import ExtractorPool
from infrastructure.extraction.sniff import OCTET_STREAM, sniff, sniff_file

__all__ = ["OCTET_STREAM", "ExtractorPool", "sniff", "sniff_file"]
