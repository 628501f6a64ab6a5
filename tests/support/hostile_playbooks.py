"""Hostile playbook files: nested 20,000 deep, a megabyte-long key, a YAML tag.

Each file carries ``MARKER`` so a test can check that no error message echoes the file's contents.
"""

from __future__ import annotations

from pathlib import Path

MARKER = "HOSTILE-PLAYBOOK-CONTENT"


def hostile_playbooks(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    texts = {
        "deep": f"name: {MARKER.lower()}\ncategories: " + "[" * 20_000 + "]" * 20_000 + "\n",
        "large": f"name: x\ncategories: [Insurance]\n{MARKER}-{'a' * 1_000_000}: 1\n",
        "tag": f"name: !!python/object/apply:os.system ['{MARKER}']\ncategories: [Insurance]\n",
    }
    paths = {}
    for kind, text in texts.items():
        paths[kind] = folder / f"hostile-{kind}.yaml"
        paths[kind].write_text(text)
    return paths
