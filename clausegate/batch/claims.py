"""Work sharing between a batch run and its chunk runs: each contract is reviewed by whichever run claims it first.

Splitting a batch's contracts up front (every run a fixed share) would leave the batch run idle: a chunk run
starts seconds after the batch run (a worker must pick it up and start a process), and contracts differ in size,
so the batch run would wait for the slowest share.  So every run goes through the *whole* list in the same
order and reviews a contract only after claiming it: a claim is a file named by the contract id in the batch's
claims folder, created exclusively (``O_CREAT | O_EXCL``: exactly one run wins), holding the claiming run's id.
The runs finish together, and the batch run reports each contract from the run that claimed it (a claimed
contract a chunk run never reported was lost with that run: ``CG-RUN-CRASHED``).

The claims folder sits next to the chunk manifest (``<out_dir>/batches``): the storage every worker already
shares with the batch run for the manifest and the chunk summaries.  The manifest names it in its first line
(``# claims: <folder>``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CLAIMS_LINE = "# claims: "


@dataclass(frozen=True)
class Claims:
    folder: Path
    owner: str  # the claiming run's id

    def take(self, contract_id: str) -> bool:
        """Claim ``contract_id`` for this run; False when another run has it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.folder / contract_id, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(self.owner)
        return True

    def owners(self) -> dict[str, str]:
        """Contract id (first 12 characters, as in the summary rows) -> the id of the run that claimed it."""
        if not self.folder.is_dir():
            return {}
        return {p.name[:12]: p.read_text(encoding="utf-8").strip() for p in self.folder.iterdir() if p.is_file()}


def claims_of_manifest(manifest: Path) -> Path | None:
    """The claims folder a chunk manifest names (its first line), else None (a plain list)."""
    try:
        with Path(manifest).open(encoding="utf-8") as fh:
            first = fh.readline().rstrip("\n")
    except OSError:
        return None
    return Path(first[len(CLAIMS_LINE):]) if first.startswith(CLAIMS_LINE) else None
