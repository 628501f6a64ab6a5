"""The same words in another layout are one text.  A PDF's line-end hyphen (``one-`` then ``third`` on
the next line), the .docx of its words (``one-third``) and a soft hyphen share the text's identity, and the
pre-filter's re-joined word (``onethird``) is found again in every layout; a review that computes its own does
not report another review's answers as reused."""

from __future__ import annotations

from clausegate.ops.budget import SpendMeter
from clausegate.review.relocate import relocate
from clausegate.review.schemas import Cost, FilteredDocument, Page, ParsedDocument, Passage

SENTENCE = ("Oxbow would receive one-third (1/3) of any such cost savings. Should the price of fuel delivered to "
            "the Lima Project be above the Price Basis, the commission will be reduced on a sliding scale.")


def _doc(*texts: str, contract: str = "a") -> ParsedDocument:
    return ParsedDocument(contract_id=contract * 64, filename="x", pages=[Page(number=i + 1, text=t)
                                                                         for i, t in enumerate(texts)])


def test_a_line_end_hyphen_a_soft_hyphen_and_the_docx_word_are_one_text():
    pdf = _doc(SENTENCE.replace("one-third", "one-\nthird"))
    docx = _doc(SENTENCE)
    paragraphs = _doc(SENTENCE.replace("one-third", "one-\n\nthird"))  # the .docx of the PDF's lines
    soft = _doc(SENTENCE.replace("one-third", "one\u00ad\nthird"))
    assert pdf.text_id == docx.text_id == paragraphs.text_id == soft.text_id
    assert pdf.content_id == docx.content_id == paragraphs.content_id == soft.content_id
    assert _doc(SENTENCE.replace("one-third", "two-thirds")).content_id != docx.content_id  # other words


def test_the_pre_filters_rejoined_word_is_found_in_every_layout():
    passage = Passage(page=1, text=SENTENCE.replace("one-third", "onethird"), score=0.9,  # passages: a line-end
                      categories={"Revenue/Profit Sharing": 0.9})                       # hyphen joins words
    for text in (SENTENCE, SENTENCE.replace("one-third", "one-\nthird"), SENTENCE.replace("one-third", "one- third")):
        document = _doc("Cover page of the agreement.", text)
        filtered = FilteredDocument(contract_id="a" * 64, passages=[passage], pages_kept=[1], tokens_total=90,
                                    tokens_kept=40)
        moved = relocate(document, filtered, [], [], [])
        assert [p.page for p in moved.filtered.passages] == [2], text


def test_answers_received_from_another_reviews_cache_are_forgotten_when_the_review_computes_its_own():
    meter = SpendMeter(key="run-9:c")
    cached = Cost(calls=1, input_tokens=900, output_tokens=100, eur=0.004)
    meter.received("extract", cached, "run-1:c#task-a")  # the first pass took it from the cache (another review)
    assert meter.by_step()["extract"].reused_calls == 1
    meter.discard_reused()  # its passages had no single place in this file: the review computes its own
    meter.paid("extract", "task-b", Cost(calls=1, input_tokens=800, output_tokens=90, eur=0.003))
    meter.received("extract", Cost(calls=1, input_tokens=800, output_tokens=90, eur=0.003), "run-9:c#task-b")
    extract = meter.by_step()["extract"]
    assert (extract.calls, extract.reused_calls, extract.reused_eur) == (1, 0, 0.0)
    meter.received("extract", cached, "run-1:c#task-a")  # received again (and used): reused again
    assert meter.by_step()["extract"].reused_calls == 1
