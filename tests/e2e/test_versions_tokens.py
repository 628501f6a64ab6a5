"""Only the change is paid for: the model's answers are remembered per passage and category, so a one-word change
in one clause of a 20-page contract asks the model about that clause's passage only.  Counted on the fake model's own
log (the tokens it billed), not on ClauseGate's figures."""

from __future__ import annotations

import re
import uuid

import pytest

from clausegate.demo.model_server import FakeModelServer, prompts_of
from clausegate.demo.responders import contract_responder
from clausegate.review.text_identity import normalise
from tests.support.model_flow import KEY, review, save_block
from tools import make_revisions

pytestmark = pytest.mark.usefixtures("prefect_server")
_PASSAGE = re.compile(r'<contract_passage id="[^"]+" page="\d+">\n(?P<text>.*?)\n</contract_passage>', re.S)
CATEGORIES = ("Governing Law, Cap on Liability, Uncapped Liability, Liquidated Damages, Insurance, Audit Rights, "
              "Termination For Convenience, Exclusivity, Non-Compete, License Grant, Warranty Duration, "
              "Minimum Commitment, Revenue/Profit Sharing, Anti-Assignment")


def _twenty_pages() -> dict:
    """The first TRAIN contract (the corpus's order) of 7,000–11,000 words: about 20 pages."""
    for item in make_revisions.train_contracts(40):
        if 7_000 <= sum(len(p.split()) for p in item["paragraphs"]) <= 11_000:
            return item
    pytest.skip("no TRAIN contract of about 20 pages")


def _billed(server: FakeModelServer) -> int:
    return sum(server.billed_tokens())


@pytest.mark.slow
def test_a_one_word_change_in_a_20_page_contract_costs_at_most_a_fifth(tmp_path, cuad_dir):
    item = _twenty_pages()
    paras = [*item["paragraphs"], f"Schedule R. Reference {uuid.uuid4().hex}."]  # a text of this test's own
    v1 = tmp_path / "v1.docx"
    v1.write_bytes(make_revisions.docx_bytes(paras))
    with FakeModelServer("anthropic", api_key=KEY, responder=contract_responder).start() as server:
        book = tmp_path / "playbook.yaml"
        book.write_text(f"""
name: test-versions
categories: [{CATEGORIES}]
high_risk: [Uncapped Liability, Cap on Liability]
steps:
  extract: {{extractor: "{save_block('anthropic', server)}", retries: 1, retry_delay_seconds: [0.1]}}
""")
        first, _ = review(tmp_path, v1, str(book))
        assert first.is_completed(), first.message
        tokens_first, calls_first = _billed(server), server.calls
        sent = [normalise(m["text"]) for r in server.billed for m in _PASSAGE.finditer(prompts_of(r.body)[1])]
        # one clause the model was shown, one word of it changed
        index, edited = next((i, new) for i in item["clauses"]
                             if any(normalise(paras[i]) in passage for passage in sent)
                             and (new := make_revisions.swap_words(paras[i], 1, make_revisions.random.Random(i))))
        v2 = tmp_path / "v2.docx"
        v2.write_bytes(make_revisions.docx_bytes([*paras[:index], edited, *paras[index + 1:]]))
        second, _ = review(tmp_path, v2, str(book))
        assert second.is_completed(), second.message
        tokens_second, calls_second = _billed(server) - tokens_first, server.calls - calls_first
    print(f"\nfirst review: {calls_first} model calls, {tokens_first} tokens billed; one word changed: "
          f"{calls_second} calls, {tokens_second} tokens ({tokens_second / tokens_first:.1%})")
    asked_first = [prompts_of(r.body)[1] for r in server.billed[:calls_first]]
    assert sum("<contract_passage" in user for user in asked_first) == 1, \
        "the first review asks about every passage in one prompt"
    assert 0 < tokens_second <= 0.2 * tokens_first
