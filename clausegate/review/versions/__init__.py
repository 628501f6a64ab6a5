"""Two versions of one contract compared clause by clause (plain Python, no Prefect).

* :mod:`.units`: a parsed document as its clauses (sentences of the read text, page furniture removed, line-end
  hyphenation joined), each with a comparison key that a re-layout, a line break or a change of format
  (PDF ↔ .docx) does not move;
* :mod:`.align`: the clauses of two versions aligned by content (a moved clause is a move), each unchanged,
  changed (with a word-level redline), moved, added or removed; a .docx change that is no tracked change is
  flagged untracked;
* :mod:`.carry`: a person's decision on a finding carried to the next version only when the decided clause's
  normalised text and the playbook are unchanged (the receipt's hashes); anything else is asked again, with the
  earlier decision, its reason and the redline.
"""
