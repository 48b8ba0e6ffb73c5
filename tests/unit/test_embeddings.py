"""The offline embedder of File Search (infrastructure/embeddings.py): its model comes from the
installed `wordllama` package, never from a network; its vectors are unit length, one per text,
and texts alike in meaning are nearer than texts apart."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from infrastructure.embeddings import DIMENSIONS, WordLlamaEmbedder, default_embedder, from_bytes, to_bytes


def test_loading_and_embedding_touch_no_network_and_no_hub_client() -> None:
    """In a fresh process whose sockets all refuse to connect: the model loads and embeds, and
    neither WordLlama's loader (which would look on a hub) nor a hub client is ever imported."""
    script = textwrap.dedent("""
        import socket, sys
        def refuse(*args, **kwargs):
            raise AssertionError("the embedder opened a connection")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from infrastructure.embeddings import WordLlamaEmbedder
        embedder = WordLlamaEmbedder()
        vectors = embedder.embed(["parental leave", "a text"])
        assert len(vectors) == 2 and len(vectors[0]) == embedder.dimensions
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("huggingface_hub", "requests", "wordllama", "urllib3"))
        print(embedder.model, loaded)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={"HF_HUB_OFFLINE": "0", "PATH": "/usr/bin:/bin"}, cwd=_root())
    assert done.returncode == 0, done.stderr
    model, loaded = done.stdout.strip().split(" ", 1)
    assert model.startswith("wordllama/l2_supercat_256@")
    assert loaded == "[]"


def test_vectors_are_unit_length_one_per_text_and_an_empty_text_is_zero() -> None:
    embedder = default_embedder()
    vectors = embedder.embed_array(["The cafeteria serves lunch at noon.", "Laptops are replaced every three years.", ""])
    assert vectors.shape == (3, DIMENSIONS) and embedder.dimensions == DIMENSIONS
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0, abs=1e-5)
    assert np.linalg.norm(vectors[1]) == pytest.approx(1.0, abs=1e-5)
    assert not vectors[2].any()
    assert embedder.embed([]) == []
    assert embedder.embed(["same words"]) == embedder.embed(["same words"])  # deterministic


def test_texts_alike_in_meaning_are_nearer_than_texts_apart() -> None:
    embedder = default_embedder()
    question, near, far = embedder.embed_array([
        "How much time off do new parents get?",
        "Staff who become mothers or fathers receive sixteen weeks of paid absence following a birth or adoption.",
        "The server room is cooled by two chillers on the roof.",
    ])
    assert float(question @ near) > float(question @ far) + 0.1


def test_vectors_travel_as_float32_bytes_and_back() -> None:
    vectors = default_embedder().embed_array(["one", "two"])
    data = to_bytes(vectors)
    assert len(data) == 2 * DIMENSIONS * 4
    assert np.array_equal(from_bytes(data, DIMENSIONS), vectors)
    with pytest.raises(ValueError):
        from_bytes(data[:-1], DIMENSIONS)


def test_the_model_is_named_with_its_version() -> None:
    from importlib.metadata import version

    assert WordLlamaEmbedder().model == f"wordllama/l2_supercat_256@{version('wordllama')}"


def _root() -> str:
    from pathlib import Path

    return str(Path(__file__).resolve().parents[2])
