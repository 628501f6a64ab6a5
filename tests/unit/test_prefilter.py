"""Pre-filter on synthetic contracts (no CUAD needed) + the artifact's format."""

from __future__ import annotations

import json

import numpy as np
import pytest

from clausegate.review.categories import CATEGORIES
from clausegate.review.offline.model import MODEL_DIR, load_model, score_passages
from clausegate.review.passages import count_tokens, split_passages
from clausegate.review.prefilter import prefilter
from tests.support.contracts import BOILERPLATE, CONTRACT, GOVERNING_LAW, make_doc


def test_artifact_loads_without_pickle_and_has_metadata():
    with np.load(MODEL_DIR / "offline_model.npz", allow_pickle=False) as npz:
        assert {"vocabulary", "idf", "coef", "intercept", "categories"} <= set(npz.files)
        heads = len(npz["head_vocabulary"]) if "head_vocabulary" in npz.files else 0
        assert npz["coef"].shape == (len(CATEGORIES), len(npz["vocabulary"]) + heads)
    meta = json.loads((MODEL_DIR / "offline_model.json").read_text())
    for key in ("version", "trained_at", "split", "n_train_contracts", "sklearn_version", "features",
                "extract_threshold", "possible_threshold", "calibration", "cv", "keep_levels", "keep_threshold_grid"):
        assert key in meta, key
    assert set(meta["extract_threshold"]) == set(CATEGORIES)
    model = load_model()
    assert model.version == meta["version"] and model.categories == CATEGORIES
    size = sum(p.stat().st_size for p in MODEL_DIR.glob("offline_model.*"))
    assert size <= 30_000_000  # the shipped artifact stays <= 30 MB


def test_scores_are_probabilities_in_artifact_order():
    texts = [GOVERNING_LAW.strip(), BOILERPLATE.split("\n")[0], ""]
    s = score_passages(texts)
    assert s.shape == (3, len(CATEGORIES))
    assert np.all((s >= 0) & (s <= 1))
    gl = load_model().category_index["Governing Law"]
    assert s[0, gl] > 0.5 > s[1, gl]
    assert score_passages([]).shape == (0, len(CATEGORIES))


def test_keeps_relevant_passages_and_drops_boilerplate():
    fd = prefilter(CONTRACT, ["Governing Law", "Cap on Liability"])
    texts = " ".join(p.text for p in fd.passages)
    assert "laws of the State of New York" in texts
    assert "AGGREGATE LIABILITY" in texts
    assert "counterparts" not in texts and "Severability" not in texts
    assert fd.pages_kept == [3]
    for p in fd.passages:
        assert set(p.categories) == {"Governing Law", "Cap on Liability"}
        assert p.score == max(p.categories.values())
    gov = next(p for p in fd.passages if "State of New York" in p.text)
    assert gov.categories["Governing Law"] > gov.categories["Cap on Liability"]


def test_token_accounting():
    fd = prefilter(CONTRACT, ["Governing Law"])
    all_passages = [p for page in CONTRACT.pages for p in split_passages(page.text)]
    assert fd.tokens_total == sum(count_tokens(p) for p in all_passages)
    assert fd.tokens_kept == sum(count_tokens(p.text) for p in fd.passages)
    assert 0 < fd.tokens_kept < fd.tokens_total
    full = prefilter(CONTRACT, list(CATEGORIES), recall_target="max")
    assert full.tokens_total == fd.tokens_total
    assert full.tokens_kept == sum(count_tokens(p.text) for p in full.passages) <= full.tokens_total
    assert full.pages_kept == sorted({p.page for p in full.passages})


def test_metadata_categories_keep_the_preamble():
    fd = prefilter(CONTRACT, ["Parties", "Agreement Date"])
    assert 1 in fd.pages_kept
    assert any("Acme Widgets, Inc." in p.text for p in fd.passages)


def test_recall_levels_are_monotone_and_validated():
    cats = ["Governing Law", "Cap on Liability", "Insurance", "Audit Rights"]
    kept = [prefilter(CONTRACT, cats, recall_target=lvl).tokens_kept for lvl in ("balanced", "high", "max")]
    assert kept == sorted(kept)
    with pytest.raises(ValueError):
        prefilter(CONTRACT, cats, recall_target="everything")
    with pytest.raises(KeyError):
        prefilter(CONTRACT, ["Not A Category"])


def test_robust_on_odd_pages():
    doc = make_doc("", "   \n  ", "x" * 20000, "word " * 20000, "\x00\u00a0☃ 合同 ﬁ §§ $$", GOVERNING_LAW,
                   "scanned", needs_ocr=(7,))
    fd = prefilter(doc, list(CATEGORIES))
    assert fd.tokens_kept <= fd.tokens_total
    assert 7 not in fd.pages_kept and 1 not in fd.pages_kept and 2 not in fd.pages_kept
    assert 6 in fd.pages_kept
    empty = prefilter(make_doc("", "  "), ["Governing Law"])
    assert empty.passages == [] and empty.tokens_total == 0 and empty.pages_kept == []
    assert prefilter(CONTRACT, []).passages == []


def test_passages_carry_their_section():
    fd = prefilter(CONTRACT, ["Governing Law", "Cap on Liability"])
    gov = next(p for p in fd.passages if "State of New York" in p.text)
    assert gov.section == "12 Governing Law"
