"""Prefect Block with everything ClauseGate needs to talk to Slack: one block per Slack app.

    from clausegate.config import SlackSettings, load_slack_settings
    SlackSettings(bot_token="xoxb-...", signing_secret="...", channel="C0123456789").save("clausegate")
    client = load_slack_settings().get_client()      # slack_sdk WebClient

The flows, the gateway and the SLA sweeper load the block named by ``CLAUSEGATE_SLACK_BLOCK``
(default ``clausegate``) with ``clausegate.config.load_slack_settings``; ClauseGate code reaches this
module only through ``clausegate.config``. Secrets are ``SecretStr``: masked in ``repr``, the Prefect
UI and logs. ``api_base_url`` points at Slack's Web API; tests and demos set it to the fake
(``python -m clausegate.demo.slack_server``).

Retries: ``get_client()`` returns a WebClient **without** slack-sdk's own retry handlers. One layer
owns retries (stacked retries multiply requests): the Prefect tasks that post to Slack retry
(``clausegate.slack``).
"""

from __future__ import annotations

from prefect.blocks.core import Block
from pydantic import Field, SecretStr
from slack_sdk import WebClient

__all__ = ["SlackSettings", "DEFAULT_BLOCK_NAME"]

DEFAULT_BLOCK_NAME = "clausegate"


class SlackSettings(Block):
    """The Slack app ClauseGate posts gate messages with, and how its requests are verified."""

    _block_type_name = "ClauseGate Slack"
    _block_type_slug = "clausegate-slack"
    _documentation_url = "https://api.slack.com/apps"
    _description = ("Bot token, signing secret and channels of the Slack app that asks reviewers at ClauseGate's "
                    "human gates.")

    bot_token: SecretStr = Field(
        description="Bot User OAuth Token of the Slack app (xoxb-...), needs the chat:write scope."
    )
    signing_secret: SecretStr = Field(
        description="Signing Secret of the Slack app (Basic Information page); verifies interaction and command "
                    "requests."
    )
    channel: str = Field(description="Channel id (C...) or #name where gate messages are posted; invite the app there.")
    escalation_channel: str | None = Field(
        default=None,
        description="Channel for escalations: SLA escalations and a person's Escalate (empty: the gate channel)."
    )
    alert_channel: str | None = Field(
        default=None,
        description="Channel for operational alerts, e.g. a gate the SLA sweeper could not resolve (empty: none)."
    )
    api_base_url: str = Field(
        default="https://slack.com/api/", description="Slack Web API base URL; a fake's URL in tests and demos."
    )
    prefect_ui_url: str = Field(
        default="http://127.0.0.1:4200", description="Base URL of the Prefect UI, for links to the waiting run."
    )
    allowed_reviewer_ids: list[str] = Field(
        default_factory=list,
        description="Slack user ids (U...) allowed to answer any gate from Slack. Empty: everyone in the gate "
                    "channel (`clausegate up` warns about that on a real workspace).",
    )
    category_reviewer_ids: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Per gated category, Slack user ids allowed to answer gates on it (added to allowed_reviewer_ids).",
    )
    submitter_slack_ids: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Per inbox sender (the API key's sender name), the Slack user ids of the people who submit as "
                    "it; they may not approve gates on that sender's contracts.",
    )
    role_members: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Per gate role named by a playbook (gates[].roles, e.g. legal, finance), its people: Slack user "
                    "ids (U...; what a Slack answer proves) and optionally e-mail addresses (shown, not proof).",
    )
    timeout_seconds: int = Field(default=10, gt=0, description="Seconds per Slack API request.")

    def get_client(self) -> WebClient:
        """A slack_sdk WebClient for this app (no SDK-level retries; the calling task owns retries)."""
        return WebClient(
            token=self.bot_token.get_secret_value(),
            base_url=self.api_base_url,
            timeout=self.timeout_seconds,
            retry_handlers=[],
        )

    def run_url(self, flow_run_id: str) -> str:
        """Link to a flow run in the Prefect UI."""
        return f"{self.prefect_ui_url.rstrip('/')}/runs/flow-run/{flow_run_id}"

    def reviewers_for(self, categories: list[str]) -> list[str]:
        """Slack user ids allowed to answer a gate on ``categories`` (empty list: anyone)."""
        allowed = list(self.allowed_reviewer_ids)
        for category in categories:
            allowed += self.category_reviewer_ids.get(category, [])
        return sorted(set(allowed))
