"""Prefect Block saying who may decide ClauseGate's gates, apart from any channel's credentials.

    from clausegate.config import Deciders
    Deciders(people={"lou": ["U0LOU", "lou@example.com"], "fay": ["U0FAY", "fay@example.com"]},
             roles={"legal": ["lou"], "finance": ["fay"]}, reviewers=["lou", "fay"]).save("clausegate")

A person is a name with identities: Slack user ids (what a Slack answer proves) and e-mail addresses
(what a signed e-mail link proves). Roles, reviewers and submitters name people (or an identity
directly). The flows, the gateway and the sweeper load the block with the Slack block's name
(``CLAUSEGATE_SLACK_BLOCK``, default ``clausegate``); without it, the older fields of the SlackSettings
block (``role_members``, ``allowed_reviewer_ids``, ...) still say who decides
(``CG-GATE-DECIDERS-IN-SLACK-BLOCK`` says how to move them).
"""

from __future__ import annotations

from prefect.blocks.core import Block
from pydantic import Field

__all__ = ["Deciders"]


class Deciders(Block):
    """Who may decide gates: people and their identities, roles, reviewers, submitters."""

    _block_type_name = "ClauseGate Deciders"
    _block_type_slug = "clausegate-deciders"
    _description = "People (Slack user ids, e-mail addresses), gate roles, reviewers and submitters of ClauseGate."

    people: dict[str, list[str]] = Field(default_factory=dict, description="Per person (a name), their identities: "
                                         "Slack user ids (U...) and e-mail addresses.")
    roles: dict[str, list[str]] = Field(default_factory=dict, description="Per gate role a playbook names "
                                        "(gates[].roles, e.g. legal, finance), its people (names or identities).")
    reviewers: list[str] = Field(default_factory=list, description="People who may answer any gate. Empty: anyone "
                                 "in the gate's Slack channel (`clausegate up` warns about that).")
    category_reviewers: dict[str, list[str]] = Field(default_factory=dict, description="Per gated category, people "
                                                     "who may answer gates on it (added to reviewers).")
    submitters: dict[str, list[str]] = Field(default_factory=dict, description="Per inbox sender (the API key's "
                                             "sender name), the people who submit as it: they may not approve "
                                             "gates on its contracts.")
