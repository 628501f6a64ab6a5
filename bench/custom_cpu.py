"""CPU per contract of the custom-category step, without and with an encoder stage, on one thread.

    python bench/custom_cpu.py [--n 30] [--candidates 10] [--playbook samples/playbooks/team-clauses.yaml]

On the first ``--n`` HOLDOUT contracts by file name (CUAD's pages as ``tools/cuad.py`` caches them):

* ``tfidf``: the shipped step, ``find_custom`` (passages of every text page, then the playbook's custom categories
  by TF-IDF similarity);
* ``+ encoder``: the stage measured by ``bench/custom_categories.py --scorer encoder|blend`` on top of it: the
  ``--candidates`` passages of highest similarity per category (their union over the categories) embedded by
  all-MiniLM-L6-v2 in numpy (``bench/minilm.py``) and their cosines with the embedded examples.

The model is loaded and the examples embedded before timing (once per process / playbook).  Process CPU time
(the machine is shared), BLAS on one thread.  Prints median / p95 / max ms per contract.
CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from minilm import load_encoder  # noqa: E402  (bench/minilm.py, next to this script)
from prefilter import parsed_document  # noqa: E402  (bench/prefilter.py)

from clausegate.review.custom_categories import find_custom, similarities  # noqa: E402
from clausegate.review.offline.model import load_model  # noqa: E402
from clausegate.review.passages import page_passages  # noqa: E402
from clausegate.review.playbook import load_playbook  # noqa: E402
from tools import cuad  # noqa: E402


def encoder_stage(doc, categories, examples: list[np.ndarray], candidates: int, model, encoder) -> None:
    texts = [t for ps in page_passages([p.text for p in doc.pages if p.text.strip()]) for t, _ in ps]
    if not texts:
        return
    top = [np.argsort(-similarities(texts, c, model), kind="stable")[:candidates] for c in categories]
    union = sorted({int(i) for t in top for i in t})
    where = {i: k for k, i in enumerate(union)}
    vectors = encoder.embed([texts[i] for i in union])
    for t, e in zip(top, examples, strict=True):
        (vectors[[where[int(i)] for i in t]] @ e.T).max()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--candidates", type=int, default=10)
    ap.add_argument("--playbook", default="samples/playbooks/team-clauses.yaml")
    args = ap.parse_args()
    categories = load_playbook(args.playbook).custom_categories
    hold = sorted((e for e in cuad.load_manifest() if cuad.is_holdout(e["filename"])), key=lambda e: e["filename"])
    docs = [parsed_document(e, cuad.load_pages(e)) for e in hold[: args.n]]
    model, encoder = load_model(), load_encoder()
    examples = [encoder.embed(list(c.examples)) for c in categories]
    find_custom(docs[0], categories)  # warm-up
    encoder_stage(docs[0], categories, examples, args.candidates, model, encoder)
    base, extra = [], []
    for doc in docs:
        start = time.process_time()
        find_custom(doc, categories)
        middle = time.process_time()
        encoder_stage(doc, categories, examples, args.candidates, model, encoder)
        base.append(1000 * (middle - start))
        extra.append(1000 * (time.process_time() - start))
    print(f"custom-category step, {len(categories)} categories, {len(docs)} HOLDOUT contracts, CPU ms per contract")
    for name, ms in (("tfidf", base), ("+ encoder", extra)):
        print(f"  {name:<10} median {np.median(ms):6.0f}  p95 {np.percentile(ms, 95):6.0f}  max {max(ms):6.0f}")


if __name__ == "__main__":
    with threadpool_limits(limits=1):
        main()
