"""Who may decide a gate, as identities: what the gate record fixes when the gate opens.

    who = who_decides(load_deciders(), slack_settings)
    who.role_members()          # {"legal": ["U0LOU", "lou@example.com"], ...}
    who.reviewers_for(["Uncapped Liability"]), who.submitter_ids("acme-inbox")

The Deciders block (``blocks/deciders.py``) says it apart from any channel's credentials: people with
identities (Slack user ids, e-mail addresses), roles, reviewers, submitters. A gate stores the
identities, so the one slot check (:func:`clausegate.gates.findings.why_not`) compares the identity a
channel proved (Slack's signed user id, an e-mail link's signed address) with them. Without a Deciders
block the SlackSettings block's older fields still say it (``role_members``, ``allowed_reviewer_ids``,
``category_reviewer_ids``, ``submitter_slack_ids``); :data:`LEGACY_CODE` says how to move them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

LEGACY_CODE = "CG-GATE-DECIDERS-IN-SLACK-BLOCK"
LEGACY_FIELDS = ("role_members", "allowed_reviewer_ids", "category_reviewer_ids", "submitter_slack_ids")


class WhoDecides(BaseModel):
    """People and their identities, roles, reviewers and submitters (names or identities)."""

    model_config = ConfigDict(frozen=True)

    people: dict[str, list[str]] = {}
    roles: dict[str, list[str]] = {}
    reviewers: list[str] = []
    category_reviewers: dict[str, list[str]] = {}
    submitters: dict[str, list[str]] = {}
    from_slack_block: bool = False

    def identities(self, names: list[str]) -> list[str]:
        """The identities of these people (a name that is no person is taken as an identity itself)."""
        out: list[str] = []
        for name in names:
            out += [normalise(i) for i in self.people.get(name, [name])]
        return list(dict.fromkeys(out))

    def role_members(self) -> dict[str, list[str]]:
        return {role: self.identities(names) for role, names in self.roles.items()}

    def reviewers_for(self, categories: list[str]) -> list[str]:
        """Identities allowed to answer a gate on ``categories`` (empty: anyone in the gate's channel)."""
        names = list(self.reviewers)
        for category in categories:
            names += self.category_reviewers.get(category, [])
        return sorted(set(self.identities(names)))

    def submitter_ids(self, sender: str | None) -> list[str]:
        return self.identities(self.submitters.get(sender, [])) if sender else []

    def person_of(self, identity: str) -> str:
        """The person's name an identity belongs to (the identity itself when it belongs to nobody named)."""
        wanted = normalise(identity)
        return next((name for name, ids in self.people.items() if wanted in map(normalise, ids)), identity)


def normalise(identity: str) -> str:
    """E-mail addresses compare without case; Slack ids as given."""
    identity = identity.strip()
    return identity.lower() if "@" in identity else identity


def who_decides(block=None, slack=None) -> WhoDecides:
    """From the Deciders block; without one, from the SlackSettings block's older fields (or nobody named)."""
    if block is not None:
        return WhoDecides(people=block.people, roles=block.roles, reviewers=block.reviewers,
                          category_reviewers=block.category_reviewers, submitters=block.submitters)
    if slack is None:
        return WhoDecides()
    return WhoDecides(roles=dict(getattr(slack, "role_members", None) or {}),
                      reviewers=list(getattr(slack, "allowed_reviewer_ids", None) or []),
                      category_reviewers=dict(getattr(slack, "category_reviewer_ids", None) or {}),
                      submitters=dict(getattr(slack, "submitter_slack_ids", None) or {}),
                      from_slack_block=any(getattr(slack, f, None) for f in LEGACY_FIELDS))


def legacy_warning(who: WhoDecides) -> str | None:
    """What ``clausegate up`` says when who decides still lives in the Slack credentials block."""
    if not who.from_slack_block:
        return None
    return (f"{LEGACY_CODE}: who may decide gates is read from the SlackSettings block ({', '.join(LEGACY_FIELDS)}). "
            "It keeps working; move it to a Deciders block of the same name (people with their Slack ids and "
            "e-mail addresses, roles, reviewers, submitters: docs/slack.md), then empty those fields.")
