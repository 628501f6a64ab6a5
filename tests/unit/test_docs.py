"""The docs name only things that exist: repository paths, importable modules, every deployment, real CLI commands.

Each check is a pure function over a text; the tests run it on the real docs and on a small synthetic sample of
broken text, so a check that finds nothing cannot pass unnoticed."""

import importlib.util
import re
from pathlib import Path

import pytest
import typer.main
import yaml

from clausegate.cli import app
from clausegate.config import GatewaySettings, InboxSettings, Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "deployments" / "README.md",
        ROOT / "tests" / "README.md"]
TOP_FOLDERS = ("clausegate", "flows", "blocks", "tools", "bench", "prompts", "tests", "scripts", "samples", "docs",
               "deployments")

# `clausegate/x/y.py`, `flows/a.py:flow`, `tests/unit/` — a path with a file extension or a trailing slash.
_FOLDERS = "|".join(TOP_FOLDERS)
_PATH = re.compile(rf"(?<![\w./-])(?:\.\./)?((?:{_FOLDERS})/[\w./*-]*?(?:\.[A-Za-z0-9]+|/))(?![\w/-])")
# `python -m clausegate.x` or a dotted `clausegate.x.y[.attr]` (not a domain, not a file name).
_MODULE = re.compile(r"(?<![\w./-])(clausegate(?:\.[A-Za-z_]\w*)+)")
# `clausegate <command> [<subcommand>]` inside inline code or a code block.
_COMMAND = re.compile(r"(?:^|[`$(]|&& |\| )\s*clausegate ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?", re.MULTILINE)


# Dotted names that are not modules: Prefect event names (`clausegate.audit.gate.decided`), file names, host names.
EVENT_NAMESPACES = ("clausegate.audit", "clausegate.review.failed", "clausegate.review.completed",
                    "clausegate.contract")
NOT_MODULES = {"md", "py", "yaml", "json", "toml", "com", "org", "net"}
# Names the code no longer has: the docs must not send a reader to them.
RETIRED = re.compile(r"(?<![\w/.])(model_tasks|model_extraction|model_steps|review_pipeline|pdf_worker"
                     r"|offline_model\.py|gates/notify|clausegate[/.]fakes|scripts/|cuad_split|local_secrets|inline_as|chunk_reviews"
                     r"|inline_threads|`dispatch`|inbox/settings|stack\.up\b|stack\.py|steps\.py|repair_error)")


def _exists(path: str) -> bool:
    if "*" in path:
        return any(ROOT.glob(path))
    return (ROOT / path).exists()


def missing_paths(text: str) -> list[str]:
    """Repository paths named in `text` that do not exist."""
    found = {m.group(1) for m in _PATH.finditer(text)}
    return sorted(p for p in found if not _exists(p.rstrip(".")))


def missing_modules(text: str) -> list[str]:
    """Dotted `clausegate...` names in `text` whose module part does not import (attributes may follow)."""
    bad = set()
    for name in {m.group(1).rstrip(".") for m in _MODULE.finditer(text)}:
        parts = name.split(".")
        if parts[-1] in NOT_MODULES or name.startswith(EVENT_NAMESPACES):
            continue
        # The longest importable prefix must be a module; anything after it must be attributes of it.
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            try:
                spec = importlib.util.find_spec(module)
            except ModuleNotFoundError:
                spec = None
            if spec is not None:
                break
        obj = importlib.import_module(module)
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                bad.add(name)
                break
            obj = getattr(obj, attr)
    return sorted(bad)


def retired_names(text: str) -> list[str]:
    return sorted({m.group(1) for m in RETIRED.finditer(text)})


def cli_commands() -> dict[str, set[str]]:
    group = typer.main.get_command(app)
    return {name: set(getattr(cmd, "commands", {})) for name, cmd in group.commands.items()}


def missing_commands(text: str, commands: dict[str, set[str]]) -> list[str]:
    """`clausegate <command> [<subcommand>]` in `text` that the CLI does not have."""
    bad = set()
    for m in _COMMAND.finditer(text):
        name, sub = m.group(1), m.group(2)
        if name not in commands:
            bad.add(name)
        elif commands[name] and sub and sub not in commands[name]:
            bad.add(f"{name} {sub}")
    return sorted(bad)


def missing_options(text: str) -> list[str]:
    """`--option`s written after `clausegate <command> [<subcommand>]` (on the same line) that the command lacks."""
    group, bad = typer.main.get_command(app), set()
    for m in re.finditer(r"clausegate ([a-z-]+)((?: [a-z][a-z-]*)*)([^`\n|;&)]*)", text):
        cmd, words = group.commands.get(m.group(1)), m.group(2).split()
        if cmd is None:
            continue
        while words and words[0] in getattr(cmd, "commands", {}):
            cmd = cmd.commands[words.pop(0)]
        known = {opt for param in cmd.params for opt in (*param.opts, *param.secondary_opts)}
        bad.update(f"{m.group(1)} {opt}" for opt in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", m.group(3))
                   if opt not in known)
    return sorted(bad)


def deployment_names() -> list[str]:
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    return [d["name"] for d in spec["deployments"]]


def unnamed_deployments(text: str, names: list[str]) -> list[str]:
    return [n for n in names if f"`{n}`" not in text]


BROKEN = """
See `clausegate/stack.py` and `flows/contract_review.py:contract_review`, `scripts/train.py`, `tools/nothere/`,
`clausegate/review/document/sandbox.py`, `tests/unit/`. Run `python -m clausegate.stack.nowhere warm-run` or
`python -m clausegate.stack.warmstart warm-run`; `clausegate.stack.lifecycle.up` is fine,
`clausegate.stack.lifecycle.no_such_function` and `clausegate.fakes.slack` are not.
`clausegate review FILE`, `clausegate frobnicate`, `clausegate inbox keys create`, `clausegate auth explode`.
| `contract-review` | `nightly-batch` |
"""


def test_checks_find_broken_text():
    assert missing_paths(BROKEN) == ["clausegate/stack.py", "scripts/train.py", "tools/nothere/"]
    assert missing_modules(BROKEN) == ["clausegate.fakes.slack", "clausegate.stack.lifecycle.no_such_function",
                                       "clausegate.stack.nowhere"]
    assert missing_commands(BROKEN, cli_commands()) == ["auth explode", "frobnicate"]
    assert unnamed_deployments(BROKEN, ["contract-review", "nightly-batch", "dead-letters"]) == ["dead-letters"]
    assert retired_names(BROKEN) == ["clausegate.fakes", "scripts/"]
    sample = "`clausegate up --no-worker --turbo` and `clausegate inbox keys create --sender a --colour`"
    assert missing_options(sample) == ["inbox --colour", "up --turbo"]
    assert retired_names("`stack.up` starts; see `steps.py` and `tests/e2e/test_stack.py`") == ["stack.up", "steps.py"]


def test_docs_are_found_and_name_paths():
    assert all(doc.exists() for doc in DOCS[:2])
    assert sum(len(_PATH.findall(doc.read_text())) for doc in DOCS) > 50


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_paths_in_docs_exist(doc):
    if doc.exists():
        assert missing_paths(doc.read_text()) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_in_docs_import(doc):
    if doc.exists():
        assert missing_modules(doc.read_text()) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_name_no_retired_module_or_option(doc):
    if doc.exists():
        assert retired_names(doc.read_text()) == []


def test_readme_commands_exist():
    commands = cli_commands()
    text = (ROOT / "README.md").read_text()
    assert len(_COMMAND.findall(text)) > 10
    assert missing_commands(text, commands) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_commands_and_options_in_docs_exist(doc):
    if doc.exists():
        text = doc.read_text()
        assert missing_commands(text, cli_commands()) == []
        assert missing_options(text) == []


def test_every_setting_is_documented():
    text = (ROOT / "docs" / "operations.md").read_text()
    groups = [(Settings, "CLAUSEGATE_"), (InboxSettings, "CLAUSEGATE_INBOX_"), (GatewaySettings, "CLAUSEGATE_GATEWAY_")]
    names = [prefix + field.upper() for cls, prefix in groups for field in cls.model_fields
             if field not in ("inbox", "gateway")]
    assert "CLAUSEGATE_GATEWAY_MAX_BODY_BYTES" in names
    assert [name for name in names if f"`{name}`" not in text] == []


def test_every_deployment_is_listed():
    names = deployment_names()
    assert len(names) >= 6
    assert unnamed_deployments((ROOT / "deployments" / "README.md").read_text(), names) == []
    assert unnamed_deployments((ROOT / "docs" / "operations.md").read_text(), names) == []
