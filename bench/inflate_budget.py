"""The page inflate budget against real contracts: every CUAD PDF's pages walked as
clausegate/review/document/inflate_guard.py walks them before a reader loads a page; prints how many pages it
would refuse and the largest pages' inflated content size.

    python bench/inflate_budget.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pypdf import PdfReader  # noqa: E402  (after the path is set)

from clausegate.review.document import inflate_guard  # noqa: E402

CUAD = ROOT.parent / "shared" / "data" / "cuad"


def main() -> None:
    rows = json.loads((CUAD / "manifest.json").read_text())
    refused, pages, started = [], [], time.monotonic()
    for row in rows:
        path = CUAD / row["pdf"]
        reader = PdfReader(str(path))
        for number, page in enumerate(reader.pages, 1):
            try:
                inflate_guard.check_page(page, reader, number)
            except inflate_guard.InflateLimitReached as error:
                refused.append((path.name, number, str(error)[:100]))
            walk = inflate_guard._Walk({}, number)  # the same walk again, for its totals
            try:
                walk.contents(page.get("/Contents"))
                walk.resources(page.get_inherited("/Resources", None))
            except Exception:
                pass
            pages.append((walk.totals["content"], path.name, number))
    pages.sort(reverse=True)
    print(f"{len(rows)} PDFs, {len(pages)} pages in {time.monotonic() - started:.0f} s; budget "
          f"{inflate_guard.CONTENT_BUDGET / 1048576:.0f} MB of content per page; pages refused: {len(refused)}")
    for name, number, why in refused[:10]:
        print(f"  refused: {name} p. {number}: {why}")
    print("largest pages' inflated content:")
    for size, name, number in pages[:5]:
        print(f"  {size / 1048576:6.2f} MB  {name} p. {number}")


if __name__ == "__main__":
    main()
