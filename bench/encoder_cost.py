"""What a small contextual encoder would cost per contract, against the shipped offline model, in one run.

    python bench/encoder_cost.py [--n 20] [--max-len 256]

The offline extractor's budget is <= 100 ms of CPU per contract on one core after parsing.  A
pretrained contextual encoder (the usual way past a bag-of-words ranker) has to run over every passage
the pre-filter keeps.  This script times, on the same contracts and in the same process:

- the shipped model: ``extract_offline(prefilter(doc))`` (pre-filter + extraction);
- the forward pass of an encoder shaped like MiniLM-L6 (6 layers, width 384, 12 heads, feed-forward
  1536; the smallest widely used sentence encoder, ~22 M parameters) in numpy float32 over the kept
  passages, each cut to ``--max-len`` tokens.  The weights are random: they do not change the time.
  The token count of a passage is its word-and-punctuation count (``count_tokens``); a sub-word
  tokenizer gives about 1.2-1.4 times more, so the figure is a lower bound.

The contracts are ``--n`` TRAIN contracts picked by a hash of the file name (the holdout is not read).
BLAS runs on one thread.  Prints median / p95 ms per contract for both and their ratio.
CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prefilter import parsed_document  # noqa: E402  (bench/prefilter.py, next to this script)

from clausegate.review.categories import CATEGORIES  # noqa: E402
from clausegate.review.offline.extract import extract_offline  # noqa: E402
from clausegate.review.passages import count_tokens  # noqa: E402
from clausegate.review.prefilter import prefilter  # noqa: E402
from tools import cuad  # noqa: E402

LAYERS, WIDTH, HEADS, FFN = 6, 384, 12, 1536


def encoder_weights(rng: np.random.Generator) -> list[dict[str, np.ndarray]]:
    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    return [
        {"qkv": w(WIDTH, 3 * WIDTH), "out": w(WIDTH, WIDTH), "up": w(WIDTH, FFN), "down": w(FFN, WIDTH)}
        for _ in range(LAYERS)
    ]


def layer_norm(x: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)


def encode(n_tokens: int, layers: list[dict[str, np.ndarray]], rng: np.random.Generator) -> np.ndarray:
    """One passage of ``n_tokens`` through the encoder; returns the mean-pooled vector."""
    x = rng.standard_normal((n_tokens, WIDTH)).astype(np.float32)
    d = WIDTH // HEADS
    for p in layers:
        q, k, v = np.split(x @ p["qkv"], 3, axis=-1)
        q, k, v = (t.reshape(n_tokens, HEADS, d).transpose(1, 0, 2) for t in (q, k, v))
        att = q @ k.transpose(0, 2, 1) * np.float32(1.0 / np.sqrt(d))  # keeps float32
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(1, 0, 2).reshape(n_tokens, WIDTH)
        x = layer_norm(x + ctx @ p["out"])
        h = x @ p["up"]
        h = 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))  # GELU
        x = layer_norm(x + h @ p["down"])
    return x.mean(0)


def sample_train(n: int) -> list[dict]:
    train = [e for e in cuad.load_manifest() if not cuad.is_holdout(e["filename"])]
    train.sort(key=lambda e: hashlib.sha256(e["filename"].encode()).hexdigest())
    return train[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20, help="TRAIN contracts to time (default 20)")
    ap.add_argument("--max-len", type=int, default=256, help="tokens per passage at most (default 256)")
    args = ap.parse_args()
    with threadpool_limits(limits=1):  # BLAS on one thread: the limit is per core
        run(args.n, args.max_len)


def run(n: int, max_len: int) -> None:
    cats = list(CATEGORIES)
    rng = np.random.default_rng(0)
    layers = encoder_weights(rng)
    docs = [parsed_document(e, cuad.load_pages(e)) for e in sample_train(n + 1)]
    extract_offline(prefilter(docs[-1], cats), cats)  # warm-up, not timed
    shipped, encoder, tokens = [], [], []
    for doc in docs[:-1]:
        t0 = time.process_time()
        filtered = prefilter(doc, cats)
        extract_offline(filtered, cats)
        shipped.append(time.process_time() - t0)
        lengths = [min(max_len, max(1, count_tokens(p.text))) for p in filtered.passages]
        t0 = time.process_time()
        for n_tokens in lengths:
            encode(n_tokens, layers, rng)
        encoder.append(time.process_time() - t0)
        tokens.append(sum(lengths))
    ms_shipped, ms_encoder = np.array(shipped) * 1000, np.array(encoder) * 1000
    print(
        f"{len(shipped)} TRAIN contracts; kept passages' tokens per contract: median {np.median(tokens):.0f}, "
        f"p95 {np.percentile(tokens, 95):.0f}"
    )
    print(f"{'CPU ms per contract':<44}{'median':>10}{'p95':>10}")
    print(
        f"{'shipped model (pre-filter + extraction)':<44}{np.median(ms_shipped):>10.0f}"
        f"{np.percentile(ms_shipped, 95):>10.0f}"
    )
    print(
        f"{'MiniLM-L6-shaped encoder, forward pass only':<44}{np.median(ms_encoder):>10.0f}"
        f"{np.percentile(ms_encoder, 95):>10.0f}"
    )
    print(
        f"encoder / shipped, median of per-contract ratios: {np.median(ms_encoder / ms_shipped):.0f}x "
        f"(limit: 100 ms per contract)"
    )


if __name__ == "__main__":
    main()
