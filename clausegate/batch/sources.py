"""Where a batch's contracts come from: a folder (default), a manifest, or any object with ``discover()``.

``load_source(spec)``: ``folder`` / ``folder:PATH`` -> :class:`FolderSource` (the format table's contract suffixes,
``*.pdf``, ``*.docx``, ``*.odt``, recursively: :func:`clausegate.review.document.registry.folder_patterns`),
``list:MANIFEST`` -> :class:`ListSource` (one path per line; how a batch hands a chunk to another run),
``python:package.module:factory`` -> whatever the factory returns (a :class:`ContractFinder`).

Error code (runbook: docs/runbook.md): ``CG-BATCH-SOURCE``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from clausegate.errors import ClauseGateError
from clausegate.review.document import registry

SOURCE_ERROR = "CG-BATCH-SOURCE"


class BatchError(ClauseGateError):
    code = SOURCE_ERROR


class ContractFinder(Protocol):
    """Anything that lists contract files.  ``discover`` returns local paths (a worker on another
    machine must see the same path: use a shared folder, or a source that downloads to one)."""

    name: str

    def discover(self) -> Iterable[Path]: ...


@dataclass
class FolderSource:
    """Every PDF, Word .docx and OpenDocument .odt under ``folder`` (recursively, sorted, hidden files and folders
    skipped).  Text files are not picked up (a folder's notes and READMEs are no contracts): list them in a manifest
    (``list:``)."""

    folder: Path
    patterns: tuple[str, ...] = registry.folder_patterns()
    recursive: bool = True

    @property
    def name(self) -> str:
        return f"folder:{self.folder}"

    def discover(self) -> list[Path]:
        folder = Path(self.folder).expanduser()
        if not folder.is_dir():
            raise BatchError(f"contract source folder {folder} does not exist or is not a folder.",
                             hint="create it, or pass another folder as the batch's `source` parameter")
        found: set[Path] = set()
        for pattern in self.patterns:
            matches = folder.rglob(pattern) if self.recursive else folder.glob(pattern)
            found.update(p for p in matches if p.is_file()
                         and not any(part.startswith(".") for part in p.relative_to(folder).parts))
        return sorted(found)


@dataclass
class ListSource:
    """The files named in a manifest (one path per line): how a batch hands a chunk to another run."""

    manifest: Path

    @property
    def name(self) -> str:
        return f"list:{self.manifest}"

    def discover(self) -> list[Path]:
        try:
            lines = Path(self.manifest).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise BatchError(f"cannot read the contract list {self.manifest}: {exc.strerror or exc}",
                             hint="the manifest must be on storage every worker can read") from None
        return [Path(line) for line in lines if line.strip() and not line.startswith("# ")]


def write_manifest(folder: str | Path, name: str, paths: Iterable[str | Path], *, header: str = "") -> Path:
    """``<folder>/<name>.txt`` listing ``paths`` (read back with ``list:<that file>``); ``header``: a first
    line starting ``# `` that ``discover`` skips (the batch's claims folder: clausegate/batch/claims.py)."""
    path = Path(folder) / f"{name}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((f"{header}\n" if header else "") + "".join(f"{p}\n" for p in paths), encoding="utf-8")
    return path


def load_source(spec: str | Path, base_dir: Path | None = None) -> ContractFinder:
    """``folder`` / ``folder:PATH`` -> :class:`FolderSource`; ``list:MANIFEST`` -> :class:`ListSource`;
    ``python:module:attr`` -> ``attr()`` (or ``attr`` itself when it already has ``discover``).  Relative
    folders are read from ``base_dir`` (default: the current directory)."""
    text = str(spec)
    if text.startswith("python:"):
        target = text[len("python:"):]
        module_name, _, attr = target.partition(":")
        try:
            obj = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, ValueError) as exc:
            raise BatchError(f"cannot load contract source {text!r}: {exc}",
                             hint="use 'python:package.module:factory' with an importable factory") from None
        source = obj() if isinstance(obj, type) or not hasattr(obj, "discover") else obj
        if not hasattr(source, "discover"):
            raise BatchError(f"contract source {text!r} has no discover() method.",
                             hint="return an object with `name` and `discover() -> paths`")
        return source
    if text.startswith("list:"):
        return ListSource(Path(text[len("list:"):]))
    if text.startswith("folder:"):
        text = text[len("folder:"):]
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    return FolderSource(path)
