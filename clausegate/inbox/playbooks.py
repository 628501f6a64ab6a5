"""The playbooks a client may name: the built-in ones and a team's own (``NAME.yaml`` in
``CLAUSEGATE_INBOX_PLAYBOOKS_DIR``), listed by ``GET /inbox/playbooks`` and checked at submission.

A team's playbook is read afresh each time (an edited file counts at once) and must load: a malformed one is
listed with its error and refused at submission with that error, never accepted to fail in the review.  A
file named like a built-in playbook is not used (the built-in one is): it is listed as unusable, saying so.
No server path appears in an answer.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from clausegate.config import InboxSettings
from clausegate.errors import PlaybookError
from clausegate.inbox.errors import BadSubmission, clip
from clausegate.review.playbook import MAX_PLAYBOOK_BYTES, builtin_playbooks, load_playbook, parse_playbook


class PlaybookInfo(BaseModel):
    name: str = Field(description="what to send as 'playbook'")
    source: Literal["built-in", "team"] = Field(description="shipped with ClauseGate, or a file in the team's "
                                                "folder (CLAUSEGATE_INBOX_PLAYBOOKS_DIR)")
    description: str = ""
    usable: bool = True
    error: str | None = Field(None, description="why a team playbook cannot be used (fix the file)")


class PlaybookList(BaseModel):
    playbooks: list[PlaybookInfo]
    team_folder: bool = Field(description="whether this inbox reads a team folder (CLAUSEGATE_INBOX_PLAYBOOKS_DIR)")


def _team_files(settings: InboxSettings) -> dict[str, object]:
    folder = settings.playbooks_dir
    if folder is None or not folder.is_dir():
        return {}
    return {path.stem: path for path in sorted(folder.glob("*.yaml"))}


def _load_team(name: str, path) -> PlaybookInfo:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_PLAYBOOK_BYTES + 1)
        if len(raw) > MAX_PLAYBOOK_BYTES:
            raise PlaybookError(f"playbook '{name}.yaml' is larger than {MAX_PLAYBOOK_BYTES // 1024} KB")
        book = parse_playbook(raw.decode("utf-8"), origin=f"{name}.yaml")
    except (PlaybookError, OSError, UnicodeDecodeError) as error:
        why = str(error) if isinstance(error, PlaybookError) else f"{name}.yaml cannot be read as UTF-8 text"
        return PlaybookInfo(name=name, source="team", usable=False, error=clip(why, 600))
    return PlaybookInfo(name=name, source="team", description=book.description)


def list_playbooks(settings: InboxSettings) -> PlaybookList:
    """Every name a client may send (built-in first), with whether a team's file loads."""
    builtin = builtin_playbooks()
    out = [PlaybookInfo(name=name, source="built-in", description=load_playbook(name).description)
           for name in builtin]
    for name, path in _team_files(settings).items():
        if name in builtin:
            out.append(PlaybookInfo(name=name, source="team", usable=False,
                                    error=f"'{name}.yaml' has the name of a built-in playbook, which is used instead; "
                                          "rename the file"))
        else:
            out.append(_load_team(name, path))
    return PlaybookList(playbooks=out, team_folder=settings.playbooks_dir is not None)


def check_usable(settings: InboxSettings, name: str) -> None:
    """``BadSubmission`` (422) when ``name`` is a team playbook that does not load (built-in names always do)."""
    path = _team_files(settings).get(name)
    if path is None or name in builtin_playbooks():
        return
    info = _load_team(name, path)
    if not info.usable:
        raise BadSubmission(f"field 'playbook': the team playbook '{clip(name)}' cannot be used: {info.error}",
                            hint="fix the file in the team's playbook folder (GET /inbox/playbooks shows the error), "
                                 "or name another playbook")
