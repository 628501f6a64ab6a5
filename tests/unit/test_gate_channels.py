"""The channel seam (clausegate/gates/channel.py): Slack and e-mail implement one protocol, and each proves who
answered its own way: Slack's signed request (slack-sdk's SignatureVerifier), the e-mail link's signature."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from urllib.parse import urlencode

import pytest
from pydantic import TypeAdapter, ValidationError

from blocks.slack import SlackSettings
from blocks.smtp import SmtpSettings
from clausegate.errors import CODES
from clausegate.gates import email_links
from clausegate.gates.channel import Channel, not_updated_code, proves_person, reaches, undelivered_code
from clausegate.gates.channels import CHANNELS, gateway_routers, names
from clausegate.gates.email_channel import EmailChannel
from clausegate.gates.slack_channel import SlackChannel
from clausegate.review.schemas import Via

SECRET = "unit-signing-secret"


def signed(body: str, secret: str = SECRET) -> tuple[str, str, str]:
    stamp = str(int(time.time()))
    digest = hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return body, stamp, f"v0={digest}"


def test_both_channels_implement_the_protocol_and_reach_their_own_identities():
    slack = SlackChannel(SlackSettings(bot_token="xoxb-x", signing_secret=SECRET, channel="C0GATES"))
    email = EmailChannel(SmtpSettings(host="127.0.0.1", sender="gates@example.com"))
    assert isinstance(slack, Channel) and isinstance(email, Channel)
    assert (slack.name, email.name) == ("slack", "email")
    people = ["U0LOU", "lou@example.com", "U0FAY"]
    assert reaches(people, "slack") == ["U0LOU", "U0FAY"] and reaches(people, "email") == ["lou@example.com"]


def test_slack_proves_the_user_of_a_signed_request_and_nobody_otherwise():
    slack = SlackChannel(SlackSettings(bot_token="xoxb-x", signing_secret=SECRET, channel="C0GATES"))
    click = urlencode({"payload": json.dumps({"type": "block_actions", "user": {"id": "U0LOU"}})})
    command = urlencode({"command": "/resolve", "user_id": "U0FAY", "text": "RUN F1 approve"})
    assert slack.verify(signed(click)) == "U0LOU"
    assert slack.verify(signed(command)) == "U0FAY"
    assert slack.verify(signed(click, secret="another-app")) is None
    body, stamp, signature = signed(click)
    assert slack.verify((body.replace("U0LOU", "U0EVE"), stamp, signature)) is None


def test_e_mail_proves_the_address_of_a_link_it_signed():  # the key: the test session's at-rest key
    email = EmailChannel(SmtpSettings(host="127.0.0.1", sender="gates@example.com"))
    token = email_links.issue("run-1", "gate-r1-abc", "F1", "approve", "Lou@Example.com", hours=1)
    assert email.verify(token) == "lou@example.com"
    assert email.verify(token[:-1] + ("0" if token[-1] != "0" else "1")) is None


def test_slack_verify_answers_for_events_and_checks_the_window_on_the_given_clock():
    slack = SlackChannel(SlackSettings(bot_token="xoxb-x", signing_secret=SECRET, channel="C0GATES"))
    event = json.dumps({"type": "event_callback", "event": {"type": "message", "user": "U0LOU"}})
    check = json.dumps({"type": "url_verification", "challenge": "c"})
    assert slack.verify(signed(event)) == "U0LOU"
    assert slack.verify(signed(check)) == ""  # signed, names nobody: not None
    late = SlackChannel(slack.settings, clock=lambda: time.time() + 600)  # 10 minutes on: outside the window
    assert late.verify(signed(event)) is None


def test_the_channels_are_one_table_each_row_declaring_its_parts():
    assert [row.name for row in CHANNELS] == list(names()) == ["slack", "email"]
    for row in CHANNELS:
        assert TypeAdapter(Via).validate_python(row.name) == row.name and proves_person(row.name)
        assert undelivered_code(row) in CODES and not_updated_code(row) in CODES
        assert row.block.__name__ and row.ref.model_fields["ok"] and callable(row.load)
    assert gateway_routers() == ["clausegate.gateway.slack", "clausegate.gateway.slack_events",
                                 "clausegate.gateway.email_links"]


def test_slack_and_e_mail_keep_their_codes_a_channel_without_codes_gets_the_generic_ones():
    assert (undelivered_code(SlackChannel), not_updated_code(SlackChannel)) == ("CG-SLACK-UNDELIVERED",
                                                                                "CG-SLACK-NOT-UPDATED")
    assert undelivered_code(EmailChannel) == not_updated_code(EmailChannel) == "CG-EMAIL-UNDELIVERED"

    class Pager:  # declares no codes
        name = "pager"

    assert (undelivered_code(Pager), not_updated_code(Pager)) == ("CG-CHANNEL-UNDELIVERED", "CG-CHANNEL-NOT-UPDATED")
    assert {"CG-CHANNEL-UNDELIVERED", "CG-CHANNEL-NOT-UPDATED"} <= set(CODES)


def test_via_is_a_channel_name_or_a_non_channel_path_and_only_channels_prove_the_person():
    assert [proves_person(v) for v in ("ui", "cli", "sla", "slack", "email", "pager")] == [False] * 3 + [True] * 3
    for bad in ("", "Slack", "e mail", "x" * 40, "1slack"):
        with pytest.raises(ValidationError):
            TypeAdapter(Via).validate_python(bad)
