"""Text reuse and the summary path as plain logic: what counts as the same text (``text_id``), prompts without the
file's identity, and the summary path's offline summary and prompt size."""

from __future__ import annotations

from clausegate.review.llm.extract import PromptPassage, render_extraction_prompt
from clausegate.review.llm.redlines import build_generation_prompt
from clausegate.review.llm.summary import fit_summary_prompt, key_terms, render_summary_prompt
from clausegate.review.playbook import load_playbook
from clausegate.review.schemas import Clause, FilteredDocument, Page, ParsedDocument, Passage


def _doc(*texts: str, contract: str = "a", name: str = "x.pdf") -> ParsedDocument:
    return ParsedDocument(contract_id=contract * 64, filename=name,
                          pages=[Page(number=i + 1, text=t) for i, t in enumerate(texts)])


def test_text_id_is_the_normalised_text_with_its_page_breaks_not_the_file():
    one = _doc("The Supplier's liability\nshall not  exceed the fees.", "Page two.")
    assert _doc("The Supplier's liability shall not exceed the fees. ", "Page two.", contract="b",
                name="y.pdf").text_id == one.text_id  # another file, same text
    assert _doc("The Supplier\u2019s liability shall not exceed the fees.", "Page two.").text_id != one.text_id
    assert _doc("The Supplier's liability shall not exceed the \ufb01xed fees.", "Page two.").text_id == \
        _doc("The Supplier's liability shall not exceed the fixed fees.", "Page two.").text_id  # NFKC: the ligature
    assert _doc("The Supplier's liability shall not exceed the fees. Page two.").text_id != one.text_id  # pages


def test_prompts_carry_no_file_hash_or_name():
    passages = [PromptPassage(id="p0", page=1, text="Liability is capped at the fees paid.", score=0.9)]
    prompt = render_extraction_prompt(["Cap on Liability"], passages)
    assert "contract_id" not in prompt.model_dump() and "a" * 64 not in prompt.user
    clause = Clause(category="Cap on Liability", text="Liability is capped at the fees paid.", pages=[1],
                    confidence=0.9, source="offline")
    generation = build_generation_prompt([clause], load_playbook("default"))
    assert "contract_id" not in generation.model_dump()


def test_key_terms_cite_page_and_section_and_the_summary_prompt_fits_below_the_refused_one():
    cap = Clause(category="Cap on Liability", text="In no event shall liability exceed the fees paid. " * 6,
                 pages=[3], confidence=0.8, source="offline", section="11.3 Limitation of Liability")
    terms = key_terms([cap])
    liability = next(t for t in terms.terms if t.topic == "liability")
    assert (liability.category, liability.pages, liability.section) == ("Cap on Liability", [3],
                                                                          "11.3 Limitation of Liability")
    assert len(liability.text) <= 160 and {t.topic for t in terms.terms if not t.category} >= {"parties", "term"}
    filtered = FilteredDocument(contract_id="a" * 64, pages_kept=[3], tokens_total=1, tokens_kept=1, passages=[
        Passage(page=3, text=cap.text.strip(), score=0.8, categories={"Cap on Liability": 0.8})])
    full = render_summary_prompt(terms, ["Cap on Liability"], [
        PromptPassage(id="p0", page=3, text=cap.text.strip(), score=0.8)])
    fitted = fit_summary_prompt(filtered, [cap], terms, ["Cap on Liability"], below=full.tokens)
    assert fitted is not None and fitted.tokens < full.tokens and fitted.passages[0].id == "p0"
    assert "11.3 Limitation of Liability" in fitted.user and "<key_terms>" in fitted.user
    assert fit_summary_prompt(filtered, [cap], terms, ["Cap on Liability"], below=10) is None
