"""The embedding models one may choose (docs/kinds/file-search-tools.md, "Embedding model") and how a
search reads the vectors of two models while a change is under way (issue 36)."""

from __future__ import annotations

import importlib.metadata

import numpy as np
import pytest
from pydantic import ValidationError

from domain.documents import Hit
from domain.retrieval import by_rank
from infrastructure.embeddings import CHOICES, DEFAULT_CHOICE, choice_of, default_embedder, model_name
from infrastructure.settings import Settings


def test_each_choice_is_named_with_the_package_version_and_the_default_keeps_its_name() -> None:
    version = importlib.metadata.version("wordllama")
    # The default's name is the one documents were embedded under before choices existed.
    assert model_name(DEFAULT_CHOICE) == f"wordllama/l2_supercat_256@{version}" == default_embedder().model
    assert model_name("l2_supercat_128") == f"wordllama/l2_supercat_128@{version}" == default_embedder("l2_supercat_128").model
    assert len({model_name(choice) for choice in CHOICES}) == len(CHOICES)
    # Another package version's vectors: the same choice, another name.
    assert choice_of("wordllama/l2_supercat_128@0.3.0") == "l2_supercat_128"
    assert choice_of("wordllama/l2_supercat_64@0.4.0") is None and choice_of("other/model@1") is None
    with pytest.raises(ValueError, match="not an embedding model"):
        model_name("l2_supercat_64")


def test_the_128_choice_is_the_prefix_of_the_table_normalized_and_padded_to_the_index_width() -> None:
    texts = ["Laptops are replaced every three years", "How often is a computer swapped for a newer one?", "the cat"]
    whole = default_embedder().embed_array(texts)
    prefix = default_embedder("l2_supercat_128").embed_array(texts)
    assert prefix.shape == whole.shape == (3, 256)
    assert np.all(prefix[:, 128:] == 0)
    assert np.allclose(np.linalg.norm(prefix, axis=1), 1, atol=1e-5)
    # The same direction as the whole vector's first 128 dimensions (the sum is the same).
    for row, full in zip(prefix, whole, strict=True):
        assert np.allclose(row[:128], full[:128] / np.linalg.norm(full[:128]), atol=1e-5)
    # A question nearer its passage than an unrelated text, by the coarser model too.
    assert prefix[1] @ prefix[0] > prefix[1] @ prefix[2]


def test_the_setting_takes_the_choices_only(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert Settings(data_dir=tmp_path).embedding_model == "l2_supercat_256"
    assert Settings(data_dir=tmp_path, embedding_model="l2_supercat_128").embedding_model == "l2_supercat_128"
    with pytest.raises(ValidationError, match="embedding_model"):
        Settings(data_dir=tmp_path, embedding_model="l2_supercat_64")


def _hits(*ids: str) -> list[Hit]:
    return [Hit(chunk_id=f"{i}#0", document_id=i, title=i, snippet="", score=0.9 - n / 100) for n, i in enumerate(ids)]


def test_two_models_lists_merge_by_rank_so_neither_models_documents_go_missing() -> None:
    old = _hits("a", "b", "c", "d")  # the documents not embedded again yet
    new = _hits("e", "f")  # those embedded by the new model
    merged = [h.document_id for h in by_rank([old, new], limit=4)]
    assert merged == ["a", "e", "b", "f"]
    assert [h.score for h in by_rank([old, new], limit=1)] == [old[0].score]  # each keeps its own cosine
    assert [h.document_id for h in by_rank([old], limit=10)] == ["a", "b", "c", "d"]
