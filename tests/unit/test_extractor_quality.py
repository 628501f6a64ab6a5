"""The shipped offline model on real CUAD contracts (skipped when ../shared/data/cuad is absent).

* training is deterministic (two runs on the same TRAIN contracts give the same artifact);
* the artifact is trained on TRAIN only and loads without pickle;
* regression floor: contract-level micro-F1 on a small fixed sample of HOLDOUT contracts may
  not drop more than 0.02 below the figure recorded in ``tests/unit/extractor_floor.json`` (written
  by ``bench/extractor.py``'s evaluation for the shipped model).

The first and the last are ``slow`` (out of the ``-m "not slow"`` working loop; CI runs them): they train twice and
evaluate on CUAD pages, which a clean clone first reads from the PDFs with pypdf (``.bench/pages/`` is empty); with
that cache filled they take about 7 s and 2 s (tests/README.md gives the command).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clausegate.review.offline.model import MODEL_DIR
from tools import cuad

REPO = Path(__file__).resolve().parents[2]
CUAD = REPO.parent / "shared" / "data" / "cuad"
FLOOR = json.loads((Path(__file__).parent / "extractor_floor.json").read_text())
pytestmark = pytest.mark.skipif(not (CUAD / "manifest.json").is_file(),
                                reason="CUAD data (../shared/data/cuad) not present")


def _train(out: Path) -> None:
    subprocess.run([sys.executable, str(REPO / "tools" / "train_offline_model.py"), "--limit", "12", "--folds", "2",
                    "--out", str(out)], check=True, capture_output=True, timeout=600)


@pytest.mark.slow
def test_training_is_deterministic(tmp_path):
    _train(tmp_path / "a")
    _train(tmp_path / "b")
    with np.load(tmp_path / "a" / "offline_model.npz", allow_pickle=False) as a, \
            np.load(tmp_path / "b" / "offline_model.npz", allow_pickle=False) as b:
        assert set(a.files) == set(b.files)
        for name in a.files:
            assert np.array_equal(a[name], b[name]), name
    meta_a, meta_b = (json.loads((tmp_path / x / "offline_model.json").read_text()) for x in "ab")
    meta_a.pop("trained_at"), meta_b.pop("trained_at")
    assert meta_a == meta_b


def test_shipped_model_is_trained_on_train_only():
    meta = json.loads((MODEL_DIR / "offline_model.json").read_text())
    train = sorted(e["filename"] for e in cuad.load_manifest() if not cuad.is_holdout(e["filename"]))
    assert meta["split"] == cuad.SPLIT_NAME and meta["n_train_contracts"] == len(train)
    assert meta["train_contracts_sha256"] == hashlib.sha256("\n".join(train).encode()).hexdigest()
    assert not any(cuad.is_holdout(f) for f in train)
    assert all(cuad.is_holdout(f) for f in FLOOR["contracts"])


def test_shipped_model_is_what_the_training_script_writes():
    """The artifact's metadata names the training script's version, features, priors and the TRAIN-only
    cross-validated metrics (one command, ``python tools/train_offline_model.py``, rebuilds it)."""
    from tools import train_offline_model as trainer  # local import: the training script, for its constants

    meta = json.loads((MODEL_DIR / "offline_model.json").read_text())
    assert meta["version"] == trainer.MODEL_VERSION == FLOOR["model_version"]
    assert {k: meta["features"][k] for k in trainer.FEATURES} == json.loads(json.dumps(trainer.FEATURES))
    assert set(meta["keyword_priors"]) <= set(trainer.KEYWORD_PRIORS)
    assert all(meta["keyword_priors"][c]["pattern"] == trainer.KEYWORD_PRIORS[c] for c in meta["keyword_priors"])
    assert {"contract_micro_f1", "contract_macro_f1", "findings_ece_calibrated"} <= set(meta["cv"])
    assert "holdout is never read" in meta["split_rule"]


@pytest.mark.slow
def test_holdout_sample_micro_f1_does_not_regress():
    sys.path.insert(0, str(REPO / "bench"))
    from extractor import evaluate  # local import: bench/extractor.py, importable once bench/ is on sys.path
    from prefilter import load_holdout  # local import: bench/prefilter.py, likewise

    docs = load_holdout(0, only=set(FLOOR["contracts"]))  # reads (and caches) only these contracts' pages
    assert len(docs) == len(FLOOR["contracts"])
    res = evaluate(docs)
    micro = res["contract_micro"][2]
    assert micro >= FLOOR["contract_micro_f1"] - 0.02, (
        f"contract-level micro-F1 {micro:.3f} on the {len(docs)} holdout contracts of tests/unit/extractor_floor.json "
        f"is more than 0.02 below the recorded {FLOOR['contract_micro_f1']:.3f} ({FLOOR['model_version']})")
