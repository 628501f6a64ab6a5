"""The annotated .docx: one ClauseGate comment on each finding's exact text, the playbook's fallback wording as a
tracked insertion, the counterparty's tracked changes and comments kept, every other part byte for byte, counted by
reading the file back with the review's own .docx reader; a file the reader refuses is never annotated."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime

import pytest
from lxml import etree

from clausegate.review import annotate as annotating
from clausegate.review.annotate import docx as annotate_docx
from clausegate.review.annotate import readback
from clausegate.review.annotate.notes import fallback_wording, notes_for
from clausegate.review.document import docx as reader
from clausegate.review.document.office_zip import Refused
from clausegate.review.locate import place
from clausegate.review.positions import Position
from clausegate.review.schemas import (
    Clause,
    GateDecision,
    GateReason,
    ParsedDocument,
    PositionCheck,
    Review,
)

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
NS = f'xmlns:w="{W}"'
TYPES = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/'
         'package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
         'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/'
         'document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"'
         '/><Override PartName="/word/comments.xml" ContentType="application/vnd.openxmlformats-officedocument.'
         'wordprocessingml.comments+xml"/></Types>')
RELS = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.'
        'org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
        'officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>')
DOC_RELS = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.'
            'openxmlformats.org/package/2006/relationships"><Relationship Id="rId7" Type="http://schemas.'
            'openxmlformats.org/officeDocument/2006/relationships/comments" Target="comments.xml"/></Relationships>')
COMMENTS = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:comments {NS}><w:comment w:id="0" '
            'w:author="Counterparty" w:date="2026-11-30T10:00:00Z"><w:p><w:r><w:t>Why unlimited?</w:t></w:r></w:p>'
            '</w:comment></w:comments>')
LIABILITY = ('<w:p><w:r><w:t xml:space="preserve">8.2 The liability of </w:t></w:r><w:commentRangeStart w:id="0"/>'
             '<w:r><w:rPr><w:b/></w:rPr><w:t>Supplier</w:t></w:r><w:commentRangeEnd w:id="0"/>'
             '<w:r><w:commentReference w:id="0"/></w:r><w:r><w:t xml:space="preserve"> </w:t></w:r>'
             '<w:ins w:id="1" w:author="Counterparty" w:date="2026-11-30T10:00:00Z"><w:r>'
             '<w:t xml:space="preserve">under this Agreement </w:t></w:r></w:ins>'
             '<w:r><w:t>shall be unlimited</w:t></w:r>'
             '<w:del w:id="2" w:author="Counterparty" w:date="2026-11-30T10:00:00Z"><w:r>'
             '<w:delText xml:space="preserve"> except as capped below</w:delText></w:r></w:del>'
             '<w:r><w:t>. Each party shall bear its own costs.</w:t></w:r></w:p>')
DOCUMENT = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {NS}><w:body>'
            '<w:p><w:r><w:t>1. Definitions. Fees means the fees set out in Schedule 1.</w:t></w:r></w:p>'
            f'{LIABILITY}'
            '<w:p><w:r><w:t>9. Payment is due within thirty (30) days of the invoice.</w:t></w:r></w:p>'
            '<w:sectPr/></w:body></w:document>')
STYLES = f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:styles {NS}/>'
QUOTE = "The liability of Supplier under this Agreement shall be unlimited."
FALLBACK = "Each party's liability is capped at the fees paid in the twelve months before the claim."


def package(document: str = DOCUMENT) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in (("[Content_Types].xml", TYPES), ("_rels/.rels", RELS), ("word/document.xml", document),
                           ("word/_rels/document.xml.rels", DOC_RELS), ("word/comments.xml", COMMENTS),
                           ("word/styles.xml", STYLES), ("docProps/custom.bin", "\x00opaque\x01")):
            z.writestr(name, body)
    return out.getvalue()


def review_of(data: bytes, *, quotes=((QUOTE, "Uncapped Liability"),), decisions=()) -> Review:
    result = {k: v for k, v in reader.extract(data, {"max_chars": 10 ** 6}).items() if k != "ok"}
    parsed = ParsedDocument.model_validate({**result, "contract_id": "0" * 64, "filename": "msa.docx"})
    clauses = [Clause(category=cat, text=text, pages=[1], confidence=0.91, source="offline") for text, cat in quotes]
    placed, revisions, comments = place(parsed, clauses, ["Uncapped Liability"])
    return Review(contract_id="0" * 64, filename="msa.docx", playbook="test", status="pending_decision",
                  extractor="offline", clauses=placed, format="docx", revisions=revisions, comments=comments,
                  gated_categories=["Uncapped Liability"],
                  gate_reasons=[GateReason(category="Uncapped Liability", why="found",
                                           detail="found by the offline reader at confidence 0.91")],
                  positions=[PositionCheck(category="Uncapped Liability", verdict="deviates", clause=0,
                                           reason="walk-away: liability must be capped")],
                  decisions=list(decisions))


POSITIONS = [Position(category="Uncapped Liability", fallback=[FALLBACK])]


def annotated(data: bytes, review: Review):
    found = notes_for(review, fallback_wording(POSITIONS))
    out, placed = annotate_docx.annotate(data, found, now=datetime(2026, 12, 7, tzinfo=UTC))
    return found, out, placed


def test_one_comment_on_the_exact_quote_and_the_fallback_as_a_tracked_insertion():
    data = package()
    found, out, placed = annotated(data, review_of(data))
    assert placed.commented == [0] and placed.inserted == [0] and placed.skipped == []
    count = readback.docx(out, found)
    assert count.exactly_one(found) == [0]
    assert count.wrong == []
    assert count.insertions == {0: 1}
    root = etree.fromstring(zipfile.ZipFile(io.BytesIO(out)).read("word/document.xml"))
    ours = [i for i in root.iter(f"{{{W}}}ins") if i.get(f"{{{W}}}author") == "ClauseGate"]
    assert ["".join(t.text for t in i.iter(f"{{{W}}}t")) for i in ours] == [" " + FALLBACK]


def test_the_counterpartys_tracked_changes_and_comments_are_kept():
    data = package()
    _, out, _ = annotated(data, review_of(data))
    before = reader.extract(data, {"max_chars": 10 ** 6})
    after = reader.extract(out, {"max_chars": 10 ** 6})
    theirs = [r for r in after["revisions"] if r["author"] == "Counterparty"]
    assert [(r["kind"], r["text"]) for r in theirs] == [(r["kind"], r["text"]) for r in before["revisions"]]
    kept = [c for c in after["comments"] if c["author"] == "Counterparty"]
    assert [(c["text"], c["anchor"]) for c in kept] == [("Why unlimited?", "Supplier")]
    ours = [c for c in after["comments"] if c["author"] == "ClauseGate"]
    assert len(ours) == 1 and "Uncapped Liability" in ours[0]["text"] and "deviates" in ours[0]["text"]


def test_every_other_part_is_unchanged_byte_for_byte():
    data = package()
    _, out, _ = annotated(data, review_of(data))
    src, dst = zipfile.ZipFile(io.BytesIO(data)), zipfile.ZipFile(io.BytesIO(out))
    assert [i.filename for i in dst.infolist()] == [i.filename for i in src.infolist()]
    changed = [n for n in src.namelist() if src.read(n) != dst.read(n)]
    assert changed == ["word/document.xml", "word/comments.xml"]


def test_a_file_without_comments_gets_a_comments_part_its_type_and_its_relationship():
    body = DOCUMENT.replace('<w:commentRangeStart w:id="0"/>', "").replace('<w:commentRangeEnd w:id="0"/>', "")
    body = body.replace('<w:r><w:commentReference w:id="0"/></w:r>', "")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("[Content_Types].xml", TYPES.replace('<Override PartName="/word/comments.xml" ContentType="'
                                                        'application/vnd.openxmlformats-officedocument.'
                                                        'wordprocessingml.comments+xml"/>', ""))
        z.writestr("_rels/.rels", RELS)
        z.writestr("word/document.xml", body)
    data = out.getvalue()
    found, annotated_bytes, _ = annotated(data, review_of(data))
    assert readback.docx(annotated_bytes, found).exactly_one(found) == [0]
    z = zipfile.ZipFile(io.BytesIO(annotated_bytes))
    assert b"comments+xml" in z.read("[Content_Types].xml")
    assert b'Target="comments.xml"' in z.read("word/_rels/document.xml.rels")


def test_overlapping_findings_each_get_their_own_comment():
    data = package()
    review = review_of(data, quotes=((QUOTE, "Uncapped Liability"),
                                     ("Supplier under this Agreement", "Cap on Liability"),
                                     ("Payment is due within thirty (30) days of the invoice.",
                                      "Revenue/Profit Sharing")))
    found, out, placed = annotated(data, review)
    assert sorted(placed.commented) == [0, 1, 2]
    count = readback.docx(out, found)
    assert count.exactly_one(found) == [0, 1, 2] and count.wrong == []


def test_the_decision_who_and_when_once_decided():
    data = package()
    decision = GateDecision(gate="g", categories=["Uncapped Liability"], decision="changes", reviewer="alice@firm",
                            comment="cap it", via="slack", decided_at=datetime(2026, 12, 7, 9, 30, tzinfo=UTC))
    _, out, _ = annotated(data, review_of(data, decisions=[decision]))
    text = zipfile.ZipFile(io.BytesIO(out)).read("word/comments.xml").decode()
    assert "Decision: changes by alice@firm via slack, 2026-12-07 09:30 UTC: cap it" in text
    assert "Decision: pending" not in text


def test_a_decision_on_a_tracked_change_is_on_the_finding_holding_it_and_every_time_is_utc():
    from datetime import timedelta, timezone

    from clausegate.review.tracked_changes import DecidedChange, TrackedChange

    data = package()
    other = "Payment is due within thirty (30) days of the invoice."
    review = review_of(data, quotes=((QUOTE, "Uncapped Liability"), (other, "Uncapped Liability")))
    start = review.clauses[0].span[0] + QUOTE.index("under")  # the counterparty's insertion, in the first finding
    change = TrackedChange(id="C2", finding="F1", category="Uncapped Liability", kind="insertion",
                           text="under this Agreement", paragraph=2, start=start)
    paris = timezone(timedelta(hours=1))
    on_change = GateDecision(gate="g", categories=["Uncapped Liability"], decision="changes", reviewer="bo",
                             via="cli", decided_at=datetime(2026, 12, 7, 10, 5, tzinfo=paris),
                             change=DecidedChange(change=change, decision="counter", counter="no cap removed"))
    on_finding = GateDecision(gate="g", categories=["Uncapped Liability"], decision="approve", reviewer="lou",
                              via="slack", decided_at=datetime(2026, 12, 7, 11, 0, tzinfo=paris), finding="F1",
                              role="legal")
    found = notes_for(review.model_copy(update={"decisions": [on_change, on_finding]}))
    first, second = (n.text for n in found)
    said = "Decision on tracked change C2 (counter): changes by bo via cli, 2026-12-07 09:05 UTC: no cap removed"
    assert said in first and said not in second  # the change is in the first finding's text only
    assert "Decision (F1, legal): approve by lou via slack, 2026-12-07 10:00 UTC" in first
    assert "Decision (F1, legal)" in second and "Decision: pending" not in first + second


def test_a_file_the_reader_refuses_is_never_annotated():
    data = package()
    twice = io.BytesIO()
    with zipfile.ZipFile(twice, "w") as z, zipfile.ZipFile(io.BytesIO(data)) as src:
        for name in src.namelist():
            z.writestr(name, src.read(name))
        with pytest.warns(UserWarning):
            z.writestr("word/document.xml", DOCUMENT.replace("Supplier", "Customer"))  # a second entry, same name
    found = notes_for(review_of(data))
    with pytest.raises(Refused):
        annotate_docx.annotate(twice.getvalue(), found)
    failed = review_of(data).model_copy(update={"status": "failed"})
    assert annotating.annotate(failed, twice.getvalue(), None, memory_mb=512, timeout_seconds=30) is None


def test_through_the_capped_child():
    data = package()
    review = review_of(data)
    copy = annotating.annotate(review, data, None, POSITIONS, memory_mb=1024, timeout_seconds=60)
    assert copy is not None and copy.suffix == ".docx" and copy.inserted == [0]
    found = notes_for(review, fallback_wording(POSITIONS))
    assert readback.docx(copy.data, found).exactly_one(found) == [0]


SCATTERED = "1. Definitions. Fees means the fees set out in Payment is due within thirty (30) days of the invoice."


def test_a_quote_joining_two_places_gets_its_note_on_the_first_piece_and_the_second_marked_continued():
    data = package()
    review = review_of(data, quotes=((SCATTERED, "Revenue/Profit Sharing"),))
    found, out, placed = annotated(data, review)
    assert placed.commented == [0] and placed.skipped == []
    ours = [c for c in reader.extract(out, {"max_chars": 10 ** 6})["comments"] if c["author"] == "ClauseGate"]
    assert [c["anchor"] for c in ours] == ["1. Definitions. Fees means the fees set out in",
                                           "Payment is due within thirty (30) days of the invoice."]
    assert ours[0]["text"].startswith("ClauseGate #1 · Revenue/Profit Sharing") and \
        ours[1]["text"] == "ClauseGate #1 (continued)"
    count = readback.docx(out, found)
    assert count.exactly_one(found) == [0] and count.wrong == []


def test_the_read_back_of_pieces_fails_on_other_text_and_on_a_second_note():
    data = package()
    review = review_of(data, quotes=((SCATTERED, "Revenue/Profit Sharing"),))
    found, out, _ = annotated(data, review)
    longer = [n.__class__(index=0, clause=n.clause.model_copy(update={"text": SCATTERED + " Extra words."}),
                          lines=n.lines) for n in found]
    count = readback.docx(out, longer)
    assert count.exactly_one(longer) == [] and [i for i, _ in count.wrong] == [0]
    with zipfile.ZipFile(io.BytesIO(out)) as z:
        comments = z.read("word/comments.xml").decode()
    two_notes = comments.replace("ClauseGate #1 (continued)", "ClauseGate #1 · Revenue/Profit Sharing")
    rewritten = annotate_docx._rewrite(out, {"word/comments.xml": two_notes.encode()})
    count = readback.docx(rewritten, found)
    assert count.anchored == {0: 2} and count.exactly_one(found) == []


def test_a_quote_joined_from_fragments_of_the_text_is_not_placed():
    data = package()
    # every word is in the text, in order (pieces of 14, 8, 26 and 45 characters), but a fifth of it in short pieces
    confetti = ("1. Definitions. Supplier shall be unlimited. Each party Payment is due within thirty (30) days of the "
                "invoice.")
    review = review_of(data, quotes=((confetti, "Revenue/Profit Sharing"),))
    _, _, placed = annotated(data, review)
    assert placed.commented == [] and [i for i, _ in placed.skipped] == [0]


TABLE = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {NS}><w:body>'
         '<w:p><w:r><w:t>2.3 Milestones.</w:t></w:r></w:p><w:tbl>'
         '<w:tr><w:tc><w:p><w:r><w:t>Milestone</w:t></w:r></w:p></w:tc>'
         '<w:tc><w:p><w:r><w:t>Payment</w:t></w:r></w:p></w:tc></w:tr>'
         '<w:tr><w:tc><w:p><w:r><w:t>Proof of Concept</w:t></w:r></w:p></w:tc>'
         '<w:tc><w:p><w:r><w:t>US $250,000.00</w:t></w:r></w:p></w:tc></w:tr></w:tbl>'
         '<w:p><w:r><w:t>2.4 Missed Milestones.</w:t></w:r></w:p><w:sectPr/></w:body></w:document>')


def test_a_quote_over_table_cells_gets_one_comment_from_its_first_to_its_last_cell():
    data = package(TABLE)
    review = review_of(data, quotes=(("Milestone Payment Proof of Concept US $250,000.00", "Minimum Commitment"),))
    found, out, placed = annotated(data, review)
    assert placed.commented == [0]
    ours = [c for c in reader.extract(out, {"max_chars": 10 ** 6})["comments"] if c["author"] == "ClauseGate"]
    assert len(ours) == 1
    assert " ".join(ours[0]["anchor"].split()) == "Milestone Payment Proof of Concept US $250,000.00"
    root = etree.fromstring(zipfile.ZipFile(io.BytesIO(out)).read("word/document.xml"))
    cells = list(root.iter(f"{{{W}}}tc"))
    assert len(list(root.iter(f"{{{W}}}commentRangeStart"))) == 1
    assert cells[0].find(f".//{{{W}}}commentRangeStart") is not None
    assert cells[-1].find(f".//{{{W}}}commentRangeEnd") is not None
    assert readback.docx(out, found).exactly_one(found) == [0]


def test_through_the_parse_pools_warm_worker():
    from clausegate.review.document import pool
    from clausegate.review.document.codes import POOL_MAX_PARSES

    pool.shutdown()
    try:
        data = package()
        review = review_of(data)
        first = annotating.annotate(review, data, None, POSITIONS, memory_mb=1024, timeout_seconds=60, pool_size=1)
        workers = pool.get(1, POOL_MAX_PARSES).pids()
        again = annotating.annotate(review, data, None, POSITIONS, memory_mb=1024, timeout_seconds=60, pool_size=1)
        assert len(workers) == 1 and pool.get(1, POOL_MAX_PARSES).pids() == workers  # the same warm worker
        assert first.data == again.data and first.inserted == [0]
        found = notes_for(review, fallback_wording(POSITIONS))
        assert readback.docx(first.data, found).exactly_one(found) == [0]
    finally:
        pool.shutdown()
