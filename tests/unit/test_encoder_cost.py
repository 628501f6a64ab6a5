"""bench/encoder_cost.py times an encoder of MiniLM-L6's shape: check the shape, so its figure means what docs say."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from encoder_cost import encode, encoder_weights  # noqa: E402  (bench/ is not a package)

MINILM_L6_LAYER_MATRICES = 6 * (384 * 3 * 384 + 384 * 384 + 384 * 1536 + 1536 * 384)  # q, k, v, out, up, down


def test_the_timed_encoder_has_minilm_l6s_layer_matrices():
    layers = encoder_weights(np.random.default_rng(0))
    assert len(layers) == 6
    assert sum(w.size for layer in layers for w in layer.values()) == MINILM_L6_LAYER_MATRICES == 10_616_832


def test_encode_returns_one_float32_vector_of_the_encoders_width():
    rng = np.random.default_rng(0)
    vector = encode(37, encoder_weights(rng), rng)
    assert vector.shape == (384,) and np.isfinite(vector).all() and vector.dtype == np.float32
