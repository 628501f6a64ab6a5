"""The floor plan's rules, checked on the source: each rule is a function that returns the places
that break it, tested here on the real tree and on a small synthetic tree that breaks it (so no rule passes
vacuously)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("clausegate", "flows", "blocks", "tools")
MAX_MODULE_LINES = 400
MAX_FLOW_LINES = 40
LOCAL_IMPORT_MARK = "# local import:"


def python_files(root: Path, packages=PRODUCT) -> list[Path]:
    return sorted(p for pkg in packages for p in (root / pkg).rglob("*.py") if "__pycache__" not in p.parts)


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, dotted module) for every import in ``tree``; ``from a import b`` yields ``a.b`` and ``a``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def _module_of(root: Path, path: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def _starts(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def forbidden_imports(root: Path) -> list[str]:
    """Rules 1-2: clausegate never imports flows; only clausegate/config.py imports blocks;
    clausegate.review imports no prefect and, of clausegate, only clausegate.review and clausegate.errors."""
    broken = []
    for path in python_files(root):
        module = _module_of(root, path)
        for line, name in imported_modules(ast.parse(path.read_text())):
            where = f"{path.relative_to(root)}:{line} imports {name}"
            if _starts(module, "clausegate") and _starts(name, "flows"):
                broken.append(where + " (the library never imports its entry points)")
            if _starts(name, "blocks") and module != "clausegate.config" and not _starts(module, "blocks"):
                broken.append(where + " (only clausegate/config.py imports blocks/)")
            if _starts(module, "clausegate.review"):
                if _starts(name, "prefect"):
                    broken.append(where + " (clausegate/review never imports Prefect)")
                elif _starts(name, "clausegate") and not (
                    _starts(name, "clausegate.review") or _starts(name, "clausegate.errors") or name == "clausegate"
                ):
                    broken.append(where + " (clausegate/review imports only clausegate.review and clausegate.errors)")
    return broken


# Rule 5: the package order (README, "Where things are").  A package (or top-level module) of clausegate imports only
# those of a lower rank; two of one rank import neither each other.  A new package must be given its rank here.
RANKS = {
    "errors": 0,
    "runs": 1, "audit": 1,                      # run states, tags, attempts, timing; the audit log
    "review": 2,                                # one contract in plain Python
    "config": 3, "providers": 3, "demo": 3,     # the settings object; model clients; the fake servers
    "security": 4, "slack": 4,                  # at rest, fetch, credentials; the one Slack client
    "batch": 5, "gates": 5,                     # the batch job's parts; human gates (SLA, reminders in ops)
    "ops": 6,                                   # alerts, dead letters, stuck runs, budget, retention, the sweeps
    "pipeline": 7,                              # every @task and flow body
    "inbox": 8, "stack": 8,                     # the inbox service; `clausegate up`
    "gateway": 9,                               # the FastAPI gateway
    "cli": 10,                                  # the command and its launcher
}


def _unit(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if parts[0] == "clausegate" and len(parts) > 1 else None


def upward_imports(root: Path) -> list[str]:
    """Rule 5: every import between clausegate's packages runs down the ranks (``RANKS``); a package without a rank
    is reported too.  Function-local and TYPE_CHECKING imports count: an arrow is an arrow."""
    broken = []
    for path in python_files(root, ("clausegate",)):
        me = _unit(_module_of(root, path))
        if me is None:
            continue
        if me not in RANKS:
            broken.append(f"{path.relative_to(root)}: package {me!r} has no rank in RANKS")
            continue
        for line, name in imported_modules(ast.parse(path.read_text())):
            other = _unit(name)
            if other is None or other == me or other not in RANKS:  # a package without a rank: reported on its side
                continue
            if RANKS[other] >= RANKS[me]:
                broken.append(f"{path.relative_to(root)}:{line} imports {name} ({me} rank {RANKS[me]} -> "
                              f"{other} rank {RANKS[other]}: an arrow up or sideways)")
    return broken


def oversized_modules(root: Path) -> list[str]:
    """Rule 3: no module past 400 lines; a flow module is an entry point of at most 40 lines."""
    broken = []
    for path in python_files(root):
        lines = len(path.read_text().splitlines())
        limit = MAX_FLOW_LINES if path.parent.name == "flows" and path.name != "__init__.py" else MAX_MODULE_LINES
        if lines > limit:
            broken.append(f"{path.relative_to(root)}: {lines} lines (limit {limit})")
    return broken


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def unexplained_local_imports(root: Path, packages=PRODUCT) -> list[str]:
    """Rule 4: an import inside a function says why (``# local import: <reason>``: a real cycle, or a
    child process / command that must start lean)."""
    broken = []
    for path in python_files(root, packages):
        source = path.read_text()
        lines = source.splitlines()

        def visit(node: ast.AST, in_function: bool, path: Path = path, lines: list[str] = lines) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and _type_checking(child):
                    continue
                if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                    if LOCAL_IMPORT_MARK not in lines[child.lineno - 1]:
                        broken.append(f"{path.relative_to(root)}:{child.lineno}: {lines[child.lineno - 1].strip()}")
                inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                visit(child, inner)

        visit(ast.parse(source), False)
    return broken


def modules_importing_tests(root: Path) -> list[str]:
    """Test modules share helpers through tests/support and fixtures through conftest.py, never by
    importing another test module."""
    broken = []
    for path in sorted((root / "tests").rglob("*.py")):
        for line, name in imported_modules(ast.parse(path.read_text())):
            if name.split(".")[-1].startswith("test_") and _starts(name, "tests"):
                broken.append(f"{path.relative_to(root)}:{line} imports {name}")
    return broken


# ------------------------------------------------------------------------------------------ the real tree
def test_no_forbidden_imports():
    assert forbidden_imports(ROOT) == []


def test_imports_run_down_the_package_ranks():
    assert upward_imports(ROOT) == []


def test_no_oversized_modules():
    assert oversized_modules(ROOT) == []


def test_every_local_import_says_why():
    assert unexplained_local_imports(ROOT) == []


def test_test_modules_do_not_import_each_other():
    assert modules_importing_tests(ROOT) == []


def test_review_runs_without_prefect_loaded():
    """The import graph as Python sees it, not only the text: importing all of clausegate.review loads no Prefect."""
    code = ("import pkgutil, importlib, sys, clausegate.review as r\n"
            "for m in pkgutil.walk_packages(r.__path__, 'clausegate.review.'):\n"
            "    importlib.import_module(m.name)\n"
            "print(sorted(n for n in sys.modules if n == 'prefect' or n.startswith('prefect.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------------------------ the rules can fail
@pytest.fixture()
def bad_tree(tmp_path: Path) -> Path:
    files = {
        "clausegate/__init__.py": "",
        "clausegate/config.py": "import blocks.slack\n",
        "clausegate/batch.py": "from flows.contract_review import contract_review\nimport blocks.models\n",
        "clausegate/review/__init__.py": "",
        "clausegate/review/x.py": ("import prefect\nfrom clausegate.ops import budget\n"
                                   "from clausegate.errors import E\n"),
        "clausegate/big.py": "x = 1\n" * (MAX_MODULE_LINES + 1),
        "clausegate/lazy.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import json\n"
                               "def f():\n    import os\n    import sys  # local import: keeps the child lean\n"),
        "flows/__init__.py": "",
        "flows/fat.py": "x = 1\n" * (MAX_FLOW_LINES + 1),
        "blocks/__init__.py": "",
        "tools/__init__.py": "",
        "tests/unit/test_a.py": "from tests.integration.test_b import helper\n",
        "clausegate/gates/__init__.py": "",
        "clausegate/gates/step.py": "from clausegate.pipeline.tasks import t\nfrom clausegate.runs import tags\n",
        "clausegate/pipeline/__init__.py": "",
        "clausegate/pipeline/tasks.py": "from clausegate.gates import step\n",
        "clausegate/ops/__init__.py": "from clausegate.batch import x\n",
        "clausegate/newpkg/__init__.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_the_rules_catch_a_tree_that_breaks_them(bad_tree: Path):
    forbidden = forbidden_imports(bad_tree)
    assert any("clausegate/batch.py:1 imports flows" in b for b in forbidden)
    assert any("clausegate/batch.py:2 imports blocks" in b for b in forbidden)
    assert not any(b.startswith("clausegate/config.py") for b in forbidden)
    assert any("clausegate/review/x.py:1 imports prefect" in b for b in forbidden)
    assert any("clausegate/review/x.py:2 imports clausegate.ops" in b for b in forbidden)
    assert not any(b.startswith("clausegate/review/x.py:3") for b in forbidden)
    assert sorted(b.split(":")[0] for b in oversized_modules(bad_tree)) == ["clausegate/big.py", "flows/fat.py"]
    assert unexplained_local_imports(bad_tree) == ["clausegate/lazy.py:5: import os"]
    assert modules_importing_tests(bad_tree) == ["tests/unit/test_a.py:1 imports tests.integration.test_b"]
    upward = upward_imports(bad_tree)
    assert any(b.startswith("clausegate/gates/step.py:1 imports clausegate.pipeline") for b in upward)
    assert not any(b.startswith("clausegate/gates/step.py:2") for b in upward)  # runs is lower: allowed
    assert not any(b.startswith("clausegate/pipeline/tasks.py") for b in upward)  # pipeline over gates: allowed
    assert any("clausegate/newpkg/__init__.py: package 'newpkg' has no rank" in b for b in upward)
    assert any(b.startswith("clausegate/review/x.py:2 imports clausegate.ops") for b in upward)
