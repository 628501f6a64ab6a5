"""The CG-* codes: the source, the registry (``clausegate.errors.CODES``) and the runbook's code index agree.

Each check is a function that returns what is wrong; it runs on the real tree and on a small synthetic
tree that breaks it, so no check passes vacuously.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from clausegate.errors import CODES

ROOT = Path(__file__).resolve().parents[2]
SOURCE_PACKAGES = ("clausegate", "flows", "tools")
DOCUMENTS = ("README.md", "docs/*.md", "deployments/*.yaml", "prefect.yaml")
CODE = r"CG-[A-Z0-9]+(?:-[A-Z0-9]+)*"
_MENTION = re.compile(CODE + r"(?P<after>-?[*{\"'…]|\"\s*\+)?")
_INDEX_HEADING = "## Code index"


def _sources(root: Path) -> list[Path]:
    return sorted(p for pkg in SOURCE_PACKAGES if (root / pkg).is_dir() for p in (root / pkg).rglob("*.py")
                  if "__pycache__" not in p.parts)


def _documents(root: Path) -> list[Path]:
    return sorted(p for pattern in DOCUMENTS for p in root.glob(pattern))


def _mentions(text: str) -> tuple[set[str], set[str]]:
    """(codes, code prefixes built dynamically) in ``text``; a ``CG-PDF-*`` family in prose is neither."""
    codes, dynamic = set(), set()
    for match in _MENTION.finditer(text):
        code, after = match.group(0), match.group("after") or ""
        code = code[:len(code) - len(after)]
        if after.endswith("*") or after == "…":
            continue  # a family named in prose ("the CG-PDF-* codes")
        if after.endswith("{") or after.endswith("+") or (after.startswith("-") and after[-1] in "\"'"):
            dynamic.add(code)  # f"CG-PDF-{x}", "CG-PDF-" + x: a code the registry cannot list
            continue
        codes.add(code)
    return codes, dynamic


def unregistered_codes(root: Path, registry=CODES, files=_sources, prefixes_ok: bool = False) -> list[str]:
    """Codes (or dynamically built code families) in ``files`` that the registry does not list.
    ``prefixes_ok``: a prefix of registered codes counts too (docs say ``grep CG-BUDGET``)."""
    known = set(registry) | ({code.rsplit("-", i)[0] for code in registry for i in range(1, code.count("-"))}
                             if prefixes_ok else set())
    problems = []
    for path in files(root):
        codes, dynamic = _mentions(path.read_text(encoding="utf-8"))
        where = path.relative_to(root)
        problems += [f"{where}: {code} is not in clausegate.errors.CODES" for code in sorted(codes - known)]
        problems += [f"{where}: builds codes {code}-… at run time (spell each code out)" for code in sorted(dynamic)]
    return problems


def _index_rows(runbook: str) -> list[tuple[str, str]]:
    """(codes cell, section cell) of each row of the runbook's code index table."""
    if _INDEX_HEADING not in runbook:
        return []
    index = runbook.split(_INDEX_HEADING, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in index.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 3 and not set(cells[0]) <= set("-: ") and cells[0] != "Codes":
            rows.append((cells[0], cells[-1]))
    return rows


def indexed_codes(runbook: str) -> dict[str, str]:
    """Code → the section cell of its index row.  A row names codes in full (`CG-AUDIT-WRITE`) or as a
    family with its members (`CG-PDF-*` (`NOT-FOUND`, `UNREADABLE`)); a family alone documents nothing."""
    found: dict[str, str] = {}
    for codes_cell, section_cell in _index_rows(runbook):
        family = None
        for token in re.findall(r"`([^`]+)`", codes_cell):
            if re.fullmatch(CODE, token):
                found[token] = section_cell
            elif re.fullmatch(CODE + r"-\*", token):
                family = token[:-1]
            elif family and re.fullmatch(r"[A-Z0-9]+(?:-[A-Z0-9]+)*", token):
                found[family + token] = section_cell
    return found


def undocumented_codes(runbook: str, registry=CODES) -> list[str]:
    """Registered codes missing from the index (or under another section), and indexed codes nobody registered."""
    indexed = indexed_codes(runbook)
    sections = set(re.findall(r"^## (\d+)\. ", runbook, flags=re.MULTILINE))
    problems = [f"{code} is not in the runbook's code index" for code in registry if code not in indexed]
    problems += [f"{code} is in the code index but not in clausegate.errors.CODES" for code in indexed
                 if code not in registry]
    for code, entry in registry.items():
        if entry.section and entry.section not in sections:
            problems.append(f"{code}: runbook section {entry.section} does not exist")
        elif entry.section and code in indexed and not re.search(rf"\b{entry.section}\b", indexed[code]):
            problems.append(f"{code}: registered under section {entry.section}, indexed under {indexed[code]!r}")
    return problems


def _assigned_codes(tree: ast.AST) -> set[str]:
    """Codes assigned to a name in ``tree`` (``NOT_FOUND = "CG-PDF-NOT-FOUND"``, ``code = ...``, tuples too)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            found |= {v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)
                      and re.fullmatch(CODE, v.value)}
    return found


def codes_with_several_homes(root: Path) -> list[str]:
    """Codes assigned to a constant in more than one module (one home per code; others import it)."""
    homes: dict[str, list[str]] = {}
    for path in _sources(root):
        for code in _assigned_codes(ast.parse(path.read_text(encoding="utf-8"))):
            homes.setdefault(code, []).append(str(path.relative_to(root)))
    return [f"{code} is assigned in {', '.join(where)}" for code, where in sorted(homes.items()) if len(where) > 1]


# ------------------------------------------------------------------------------------ the real tree
def test_every_code_in_the_source_is_registered():
    assert unregistered_codes(ROOT) == []


def test_every_code_the_docs_cite_is_registered():
    assert unregistered_codes(ROOT, files=_documents, prefixes_ok=True) == []


def test_every_registered_code_is_in_the_runbook_index():
    assert undocumented_codes((ROOT / "docs" / "runbook.md").read_text(encoding="utf-8")) == []


def test_each_code_has_one_home():
    assert codes_with_several_homes(ROOT) == []


def test_registry_entries_are_one_line_each():
    for code, entry in CODES.items():
        assert re.fullmatch(CODE, code) and entry.meaning and "\n" not in entry.meaning, code


# ------------------------------------------------------------------------------------ the checks can fail
def test_the_checks_catch_a_broken_tree(tmp_path):
    package = tmp_path / "clausegate"
    package.mkdir()
    (package / "a.py").write_text('NOT_FOUND = "CG-PDF-NOT-FOUND"\nNEW = "CG-NEW-THING"\n'
                                  '"""the CG-PDF-* codes"""\n')
    (package / "b.py").write_text('class E:\n    code, status = "CG-PDF-NOT-FOUND", 404\n'
                                  'def f(x):\n    return f"CG-PDF-{x}"\n')
    assert unregistered_codes(tmp_path) == ["clausegate/a.py: CG-NEW-THING is not in clausegate.errors.CODES",
                                            "clausegate/b.py: builds codes CG-PDF-… at run time (spell each code out)"]
    assert codes_with_several_homes(tmp_path) == ["CG-PDF-NOT-FOUND is assigned in clausegate/a.py, clausegate/b.py"]

    runbook = ("## 6. PDFs\n\n## Code index\n\n| Codes | Raised by | Section |\n|---|---|---|\n"
               "| `CG-PDF-*` (`NOT-FOUND`, `GONE`) | x | 6 |\n| `CG-PDF-ENCRYPTED` | x | 9 |\n"
               "| `CG-MODEL-*` | x | 14 |\n")
    registry = {code: CODES[code] for code in ("CG-PDF-NOT-FOUND", "CG-PDF-ENCRYPTED", "CG-MODEL-AUTH")}
    assert undocumented_codes(runbook, registry) == [
        "CG-MODEL-AUTH is not in the runbook's code index",
        "CG-PDF-GONE is in the code index but not in clausegate.errors.CODES",
        "CG-PDF-ENCRYPTED: registered under section 6, indexed under '9'",
        "CG-MODEL-AUTH: runbook section 14 does not exist",
    ]
