"""bench/cascade_responders.py: the oracle answers only about the passages the product's prompt shows, its quotes
pass the product's own grounding, and the noisy oracle flips the share of answers it is given (fixed seed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from cascade_responders import Noisy, Oracle, flips  # noqa: E402  bench/cascade_responders.py

from clausegate.review.llm.extract import (  # noqa: E402
    ModelAnswer,
    PromptPassage,
    ground_answer,
    min_quote_words,
    render_extraction_prompt,
)

CAP = ("IN NO EVENT SHALL EITHER PARTY'S AGGREGATE LIABILITY UNDER THIS AGREEMENT EXCEED THE FEES PAID BY "
       "CUSTOMER IN THE TWELVE (12) MONTHS PRECEDING THE CLAIM.")
MFN = "Supplier shall offer Customer prices no less favorable than those it offers any other customer."
PASSAGES = [
    PromptPassage(id="p3", page=2, score=0.9, text=(
        "11. Limitation of Liability. Except for breaches of Section 8 (<Confidentiality>), "
        + CAP.replace("(12) ", "(12)\n") + " This limit applies in the aggregate.")),
    PromptPassage(id="p7", page=4, score=0.4, text=(
        "14. Notices. All notices shall be in writing and delivered by hand or by registered mail to the "
        "addresses set out above.")),
    PromptPassage(id="p9", page=5, score=0.3, text="Fees. Customer shall pay $100."),
]
LABELS = {"acme.pdf": [
    {"category": "Cap on Liability", "text": CAP, "pdf_page": 2},
    {"category": "Most Favored Nation", "text": MFN, "pdf_page": 6},  # in a passage the prompt does not show
    {"category": "Revenue/Profit Sharing", "text": "Customer shall pay", "pdf_page": 5},  # short: widened
]}
ASKED = ["Cap on Liability", "Most Favored Nation", "Revenue/Profit Sharing", "Liquidated Damages"]


def ask(responder, passages=PASSAGES, categories=ASKED):
    prompt = render_extraction_prompt(categories, passages)
    request = {"model": "m", "max_tokens": 2048, "system": prompt.system,
               "messages": [{"role": "user", "content": prompt.user}]}
    return prompt, json.loads(responder(request))


def test_oracle_quotes_only_shown_passages_and_passes_the_products_grounding():
    oracle = Oracle(LABELS, contract="acme.pdf")
    prompt, answer = ask(oracle)
    shown = {p.id for p in PASSAGES}
    assert [(c["category"], c["passage_id"]) for c in answer["clauses"]] == [("Cap on Liability", "p3")]
    cap = answer["clauses"][0]
    assert cap["confidence"] == 0.95 and cap["reason"]
    assert "AGGREGATE LIABILITY" in cap["text"] and "Confidentiality" not in cap["text"]  # clipped to the span
    # the span of "Most Favored Nation" is in no shown passage; the short revenue span is too short to quote
    # alone and widens to its sentence, which still has fewer words than the category needs: both absent
    assert min_quote_words("Revenue/Profit Sharing") > len("Fees. Customer shall pay $100.".split())
    absent = {a["category"]: a for a in answer["absent"]}
    assert set(absent) == {"Most Favored Nation", "Revenue/Profit Sharing", "Liquidated Damages"}
    assert all(a["passage_ids"] and set(a["passage_ids"]) <= shown and a["reason"] for a in absent.values())
    clauses, notices = ground_answer(ModelAnswer.model_validate(answer), prompt, model="fake")
    assert notices == [] and [(c.category, c.pages) for c in clauses] == [("Cap on Liability", [2])]
    # another contract: nothing of acme's labels leaks into it
    oracle.contract = "other.pdf"
    assert ask(oracle)[1]["clauses"] == []


def test_oracle_widens_a_short_span_to_its_sentence():
    labels = {"x.pdf": [{"category": "Revenue/Profit Sharing", "text": "royalty of five percent", "pdf_page": 1}]}
    text = ("3. Royalties. Licensee shall pay Licensor a royalty of five percent (5%) of Net Sales each quarter. "
            "Payments are due within thirty days.")
    passages = [PromptPassage(id="p0", page=1, score=1.0, text=text)]
    prompt, answer = ask(Oracle(labels, contract="x.pdf"), passages, ["Revenue/Profit Sharing"])
    assert [c["text"] for c in answer["clauses"]] == [
        "Licensee shall pay Licensor a royalty of five percent (5%) of Net Sales each quarter."]
    assert ground_answer(ModelAnswer.model_validate(answer), prompt, model="fake")[1] == []


def test_noise_rate_is_honoured_on_a_fixed_seed():
    pairs = [(f"contract-{i}.pdf", c) for i in range(400) for c in ASKED]
    flipped = [flips(7, contract, category, 0.15) for contract, category in pairs]
    assert abs(sum(flipped) / len(pairs) - 0.15) < 0.02
    assert flipped == [flips(7, contract, category, 0.15) for contract, category in pairs]  # the same every time
    assert flipped != [flips(8, contract, category, 0.15) for contract, category in pairs]
    assert not any(flips(7, contract, category, 0.0) for contract, category in pairs)


def test_noisy_flips_the_oracles_answers_at_the_set_rate():
    truth = {c["category"] for c in ask(Oracle(LABELS, contract="acme.pdf"))[1]["clauses"]}
    changed = total = 0
    for i in range(150):
        contract = f"c{i}.pdf"
        noisy = Noisy({contract: LABELS["acme.pdf"]}, contract=contract, noise=0.2, seed=3)
        prompt, answer = ask(noisy)
        present = {c["category"] for c in answer["clauses"]}
        for category in ASKED:
            total += 1
            flipped = (category in present) != (category in truth)
            assert flipped == flips(3, contract, category, 0.2)
            changed += flipped
        clauses, notices = ground_answer(ModelAnswer.model_validate(answer), prompt, model="fake")
        assert notices == []  # a wrong "present" still quotes a shown passage verbatim
        assert {c.category for c in clauses} == present
    assert abs(changed / total - 0.2) < 0.05
