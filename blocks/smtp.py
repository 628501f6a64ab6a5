"""Prefect Block with the SMTP credentials ClauseGate sends gate e-mails with: one block per mail account.

    from clausegate.config import SmtpSettings
    SmtpSettings(host="smtp.example.com", port=587, username="clausegate", password="...",
                 sender="ClauseGate <clausegate@example.com>", link_base_url="https://gates.example.com").save("clausegate")

Loaded with ``clausegate.config.load_smtp_settings`` under the Slack block's name (``CLAUSEGATE_SLACK_BLOCK``,
default ``clausegate``); without the block, gates ask nobody by e-mail. ``password`` is a ``SecretStr``:
masked in ``repr``, the Prefect UI and logs. The links in the e-mails are signed with a key derived from
ClauseGate's at-rest key (never stored here); ``link_base_url`` is where people reach the gateway.
"""

from __future__ import annotations

from prefect.blocks.core import Block
from pydantic import Field, SecretStr

__all__ = ["SmtpSettings"]


class SmtpSettings(Block):
    """The SMTP account that e-mails gate questions, reminders and escalations."""

    _block_type_name = "ClauseGate SMTP"
    _block_type_slug = "clausegate-smtp"
    _description = "SMTP server and account ClauseGate e-mails the people who decide gates with."

    host: str = Field(description="SMTP server host name.")
    port: int = Field(587, gt=0, lt=65536, description="SMTP port (587 STARTTLS, 465 TLS, 25 plain).")
    security: str = Field("starttls", pattern=r"^(starttls|tls|none)$", description="starttls, tls or none (a "
                          "local relay).")
    username: str | None = Field(None, description="Login; empty: no authentication.")
    password: SecretStr | None = Field(None, description="Password of the login.")
    sender: str = Field(description="From address, e.g. 'ClauseGate <clausegate@example.com>'.")
    link_base_url: str = Field("http://127.0.0.1:8000", description="Base URL of the ClauseGate gateway as the "
                               "people who get the e-mails reach it (the links point there).")
    link_hours: float = Field(72.0, gt=0, description="Hours a decision link stays valid (a reminder sends fresh "
                              "links).")
    escalation_to: list[str] = Field(default_factory=list, description="Addresses told about escalations.")
    timeout_seconds: float = Field(10.0, gt=0, description="Seconds per SMTP connection.")
