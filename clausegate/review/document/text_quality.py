"""Does a page's extracted text read as words?  A text-quality score for garbled extraction.

A PDF can show a perfectly readable page whose text layer is nonsense: a font without a
``/ToUnicode`` map and with a private encoding (glyph ids, ``/g12`` glyph names, Type 3 fonts)
makes pypdf return mojibake.  Reviewing that text finds nothing and says so with confidence.

``assess(text)`` measures

* ``score``: the share of word-like tokens (two or more letters) that are known English words —
  a small list of function words shipped here plus the unigram vocabulary of the offline model
  in ``clausegate/review/offline/models/`` (read from the ``.npz`` without numpy, so the sandboxed worker stays
  small);
* ``bad``: characters no real text layer contains: U+FFFD, private-use, unassigned, surrogate and
  control characters (other than tab and line breaks).

``garbled(quality, suspicious_fonts)`` decides; ``suspicious_fonts(page)`` names the page's fonts
that have no Unicode map and a non-standard encoding (evidence that lowers the bar).
Thresholds were calibrated on CUAD's contracts (see docs/security.md §6).
"""

from __future__ import annotations

import ast
import re
import unicodedata
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

MODEL_NPZ = Path(__file__).resolve().parents[1] / "offline" / "models" / "offline_model.npz"

# Calibrated on 2,102 pages of 102 CUAD contracts (docs/security.md §6): the median page scores
# 0.99, the 1st percentile 0.69, the lowest page with 20+ word-like tokens 0.44; mojibake scores < 0.1.
MIN_CHARS = 20  # fewer non-space characters: too little text to judge at all
MAX_BAD_SHARE = 0.10  # share of impossible characters above which a page is garbled
MIN_TOKENS = 20  # fewer word-like tokens (a table of figures, a signature block): judged only with font evidence
MIN_SCORE = 0.25  # share of dictionary words below which a page is garbled
MIN_SCORE_SUSPICIOUS_FONT = 0.5  # the same, when a font on the page has no Unicode map and a private encoding

# Function words and frequent words the model's vocabulary lacks (it drops words in > 50% of passages).
COMMON_WORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each either few for from further had has
have having he her here hers herself him himself his how however i if in into is it its itself just may
me might more most must my myself neither no nor not now of off on once one only or other otherwise our
ours ourselves out over own per same shall she should so some such than that the their theirs them
themselves then there thereby therefore therein thereof thereto these they this those through thus to
too under until up upon us very was we were what when where whereas whether which while who whom whose
why will with within without would you your yours yourself yourselves herein hereby hereof hereto
hereunder thereunder agreement party parties section date including include includes each any all
""".split())

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_STANDARD_GLYPH = re.compile(r"^/(?:[A-Za-z]+(?:\.[A-Za-z0-9]+)?|uni[0-9A-Fa-f]{4,}|u[0-9A-Fa-f]{4,6}|"
                             r"(?:zero|one|two|three|four|five|six|seven|eight|nine)(?:\.\w+)?|[a-z]+_[a-z_]+)$")
_ODD_GLYPH = re.compile(r"^/(?:g|G|glyph|cid|index|C|c|a|char)?\d+$")


@dataclass(frozen=True)
class Quality:
    chars: int  # non-space characters
    bad: int  # impossible characters
    tokens: int  # word-like tokens (2+ letters)
    words: int  # of which known words

    @property
    def score(self) -> float:
        return self.words / self.tokens if self.tokens else 1.0

    @property
    def bad_share(self) -> float:
        return self.bad / self.chars if self.chars else 0.0

    def describe(self) -> str:
        parts = [f"{self.score:.0%} of {self.tokens} word-like tokens are dictionary words"]
        if self.bad:
            parts.append(f"{self.bad} of {self.chars} characters are replacement/private-use/control characters")
        return "; ".join(parts)


@lru_cache(maxsize=1)
def vocabulary() -> frozenset[str]:
    """Known words: ``COMMON_WORDS`` plus the offline model's alphabetic unigrams (lower case)."""
    words = set(COMMON_WORDS)
    try:
        words |= {w for w in _npz_strings(MODEL_NPZ, "vocabulary") if w.isalpha()}
    except (OSError, KeyError, ValueError, SyntaxError):  # no model shipped: the small list still works
        pass
    return frozenset(words)


def _npz_strings(path: Path, name: str) -> list[str]:
    """A 1-d unicode array from a ``.npz`` (a zip of ``.npy`` files), read without numpy."""
    with zipfile.ZipFile(path) as archive:
        raw = archive.read(f"{name}.npy")
    if raw[:6] != b"\x93NUMPY":
        raise ValueError("not a .npy file")
    if raw[6] == 1:
        size, start = int.from_bytes(raw[8:10], "little"), 10
    else:
        size, start = int.from_bytes(raw[8:12], "little"), 12
    header = ast.literal_eval(raw[start:start + size].decode("latin-1"))
    descr = header["descr"]
    if not (isinstance(descr, str) and descr[:2] in ("<U", "|U") and len(header["shape"]) == 1):
        raise ValueError(f"unsupported array type {descr!r}")
    width = int(descr[2:]) * 4
    data = raw[start + size:]
    return [data[i:i + width].decode("utf-32-le").rstrip("\x00") for i in range(0, header["shape"][0] * width, width)]


_BAD = re.compile("[\ufffd\ue000-\uf8ff\U000f0000-\U0010ffff\ud800-\udfff\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _bad_count(text: str) -> int:
    """U+FFFD, private-use, surrogate and control characters (not tab/line breaks), and unassigned ones."""
    unassigned = sum(1 for c in _NON_ASCII.findall(text) if unicodedata.category(c) == "Cn")
    return len(_BAD.findall(text)) + unassigned


def _known(token: str, known: frozenset[str]) -> bool:
    if token in known:
        return True
    for suffix in ("'s", "’s", "s", "es", "ed", "ing", "ly"):
        if token.endswith(suffix) and len(token) > len(suffix) + 2 and token[: -len(suffix)] in known:
            return True
    return False


def assess(text: str) -> Quality:
    """Score raw extracted text (before control characters are normalised away)."""
    chars = len("".join(text.split()))  # str.split() splits at exactly the characters str.isspace() accepts
    bad = _bad_count(text)
    known = vocabulary()
    tokens = words = 0
    for match in _WORD.findall(text):
        token = match.lower()
        if len(token) < 2:
            continue
        tokens += 1
        words += token in known or _known(token, known)
    return Quality(chars=chars, bad=bad, tokens=tokens, words=words)


def garbled(quality: Quality, suspicious_fonts: list[str] = ()) -> bool:
    """True when the text does not read as text: many impossible characters, or too few real words."""
    if quality.chars < MIN_CHARS:
        return False
    if quality.bad_share > MAX_BAD_SHARE:
        return True
    if suspicious_fonts:  # a font that cannot be mapped to letters: little text is enough evidence
        return quality.tokens == 0 or quality.score < MIN_SCORE_SUSPICIOUS_FONT
    return quality.tokens >= MIN_TOKENS and quality.score < MIN_SCORE


def _dict(obj: Any) -> Any:
    try:
        return obj.get_object() if obj is not None else None
    except Exception:  # a broken reference is "absent"
        return None


def suspicious_fonts(page: Any) -> list[str]:
    """Fonts on the page with no ``/ToUnicode`` map and an encoding that does not say which letters
    its codes are: Identity-encoded CID fonts, Type 3 fonts, ``/Differences`` with glyph-id names."""
    out: list[str] = []
    try:
        resources = _dict(page.get_inherited("/Resources", None))
        fonts = _dict(resources.get("/Font")) if resources is not None else None
        items = list(fonts.items()) if fonts is not None else []
    except Exception:  # malformed resources: no evidence either way
        return out
    for name, ref in items[:64]:
        font = _dict(ref)
        if font is None or not hasattr(font, "get") or font.get("/ToUnicode") is not None:
            continue
        subtype = str(font.get("/Subtype", ""))
        encoding = _dict(font.get("/Encoding"))
        why = ""
        if subtype == "/Type0" and str(encoding) in ("/Identity-H", "/Identity-V"):
            why = f"{subtype[1:]}, {str(encoding)[1:]}"
        elif subtype == "/Type3" and encoding is None:
            why = "Type3 without an encoding"
        elif hasattr(encoding, "get"):
            differences = _dict(encoding.get("/Differences")) or []
            names = [str(x) for x in differences if isinstance(x, str)]
            odd = [n for n in names if _ODD_GLYPH.match(n) or not _STANDARD_GLYPH.match(n)]
            if names and len(odd) * 2 >= len(names):
                why = f"{subtype[1:] or 'font'}, glyph names like {odd[0][1:]}"
        if why:
            base = str(font.get("/BaseFont", "")).lstrip("/")
            out.append(f"{str(name).lstrip('/')} ({base + ': ' if base else ''}{why}, no ToUnicode map)")
    return out
