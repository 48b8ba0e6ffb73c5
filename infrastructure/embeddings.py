"""Text embeddings for File Search's semantic retrieval (docs/kinds/file-search-tools.md), with no
download ever: the model is a file inside an installed package.

`WordLlamaEmbedder` reads WordLlama's `l2_supercat` static model (a 32,000 × 256 token table,
float16, and its tokenizer) straight from the `wordllama` wheel's own files with `safetensors`
and `tokenizers`: WordLlama's loader (which would look in a cache folder and then on a hub) is
never imported, so nothing here can reach the network (its loader would not find the tokenizer in
the wheel anyway: it looks in `tokenizer/`, the wheel ships `tokenizers/`). A text's vector is the
sum of its tokens' rows, each weighed by its row's norm, L2-normalized, so the cosine of two texts
is their dot product. A static model costs a table look-up per token: thousands of chunks a second
on one core (bench.hybrid_search), and a query in well under a millisecond.

Chunks are embedded in the extraction workers (`infrastructure/extraction/worker.py`), never in an
upload's request; a query is embedded in the server's process at search time. Vectors travel and
are stored as little-endian float32 (`to_bytes`, `from_bytes`), `dimensions` per vector, and each
is named by its model (`model`, `name@version`): vectors of two models are never compared.

Two models can be chosen (`TOOLSMITH_EMBEDDING_MODEL`, `CHOICES`), both from the same wheel:
`l2_supercat_256`, the whole table, and `l2_supercat_128`, its first 128 dimensions (WordLlama's
models are Matryoshka-trained: a prefix of a vector is a coarser vector of the same text),
normalized again and padded with zeros to the index's 256 (the cosine of two padded vectors is
their prefixes' cosine). A model's name holds the choice and the package's version
(`wordllama/l2_supercat_128@0.4.0.post1`), so changing either changes the name, and documents
embedded under another name are embedded again in the background (`toolkinds/search_tools/reembed.py`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

PACKAGE = "wordllama"
CONFIG = "l2_supercat"
DIMENSIONS = 256
MAX_TOKENS = 4_096  # a text's tokens beyond these are not read (a chunk holds about 400)
# The models one may choose (TOOLSMITH_EMBEDDING_MODEL): each is the table's first `dimensions`.
CHOICES: dict[str, int] = {f"{CONFIG}_256": 256, f"{CONFIG}_128": 128}
DEFAULT_CHOICE = f"{CONFIG}_256"


def model_name(choice: str = DEFAULT_CHOICE) -> str:
    """The name the vectors of `choice` carry, without loading the model: the choice and the
    installed package's version."""
    if choice not in CHOICES:
        raise ValueError(f"{choice!r} is not an embedding model (they are {', '.join(CHOICES)})")
    return f"{PACKAGE}/{choice}@{importlib.metadata.version(PACKAGE)}"


def choice_of(model: str) -> str | None:
    """The choice a model's name was made by, whatever package version made it (None: not one of ours)."""
    head = model.partition("@")[0]
    choice = head.removeprefix(f"{PACKAGE}/")
    return choice if head.startswith(f"{PACKAGE}/") and choice in CHOICES else None


class Embedder(Protocol):
    """What File Search needs of an embedding model."""

    model: str  # the model's name and version: "wordllama/l2_supercat_256@0.4.0.post1"
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One L2-normalized vector per text (a text with no token gets a zero vector)."""
        ...

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """`embed` as a (len(texts), dimensions) float32 array."""
        ...


class WordLlamaEmbedder:
    def __init__(self, choice: str = DEFAULT_CHOICE, *, table: WordLlamaEmbedder | None = None) -> None:
        """`table`: an embedder of the same wheel whose table and tokenizer this one shares."""
        self.model = model_name(choice)
        self._prefix = CHOICES[choice]
        if table is not None:
            self._table, self._tokenizer, self._weights = table._table, table._tokenizer, table._weights
            self.dimensions = DIMENSIONS
            return
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        root = _package_folder()
        weights = root / "weights" / f"{CONFIG}_{DIMENSIONS}.safetensors"
        tokenizer = root / "tokenizers" / f"{CONFIG}_tokenizer_config.json"
        if not weights.is_file() or not tokenizer.is_file():  # never fetched: say what is missing
            raise FileNotFoundError(f"the {PACKAGE} package holds no {CONFIG} model ({weights}, {tokenizer})")
        self._table = np.ascontiguousarray(load_file(str(weights))["embedding.weight"].astype(np.float32))
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        # Each token weighs its row's norm: a static model's rows are longer for the tokens that
        # tell texts apart (measured on tests/fixtures/retrieval_set.json: recall@5 0.71 with a
        # plain mean, 0.75 so; bench.hybrid_search).
        self._weights = np.linalg.norm(self._table, axis=1).astype(np.float32)
        self.dimensions = int(self._table.shape[1])

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        vocabulary = self._table.shape[0]
        for i, tokens in enumerate(encoded):
            ids = tokens.ids[:MAX_TOKENS]
            if ids:
                rows = self._table[np.clip(np.asarray(ids, dtype=np.int64), 0, vocabulary - 1)]
                row = self._weights[np.clip(np.asarray(ids, dtype=np.int64), 0, vocabulary - 1)] @ rows
                row = row[:self._prefix]  # the Matryoshka prefix; the rest stays zero
                norm = float(np.linalg.norm(row))
                if norm > 0:
                    out[i, :self._prefix] = row / norm
        return out


def _package_folder() -> Path:
    """The installed package's folder, found without importing it (its `__init__` imports its
    loader, and with it an HTTP client)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the {PACKAGE} package is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def to_bytes(vectors: np.ndarray) -> bytes:
    return np.ascontiguousarray(vectors, dtype="<f4").tobytes()


def from_bytes(data: bytes, dimensions: int) -> np.ndarray:
    """The vectors `to_bytes` wrote; `ValueError` when the bytes are not whole vectors."""
    if len(data) % (4 * dimensions):
        raise ValueError(f"{len(data)} bytes are not whole vectors of {dimensions} float32")
    return np.frombuffer(data, dtype="<f4").reshape(-1, dimensions)


_shared: dict[str, WordLlamaEmbedder] = {}
_shared_lock = threading.Lock()


def default_embedder(choice: str = DEFAULT_CHOICE) -> WordLlamaEmbedder:
    """The process's embedder of `choice` (the table loaded on first use, about 0.3 s and 35 MB,
    and shared by every choice)."""
    with _shared_lock:
        if choice not in _shared:
            model_name(choice)  # an unknown choice raises before anything loads
            first = next(iter(_shared.values()), None)
            _shared[choice] = WordLlamaEmbedder(choice, table=first)
        return _shared[choice]
