"""Fixtures of the end-to-end tests (real processes: workers, served deployments, the gateway)."""

from __future__ import annotations

import pytest

from clausegate.config import SlackSettings
from clausegate.demo.slack_server import FakeSlack
from tests.support.deployments import SLACK_BLOCK


@pytest.fixture(scope="module")
def fake_slack():
    """A fake Slack (real HTTP on loopback), saved as the SlackSettings block ``SLACK_BLOCK``
    (tests.support.deployments) that workers started with ``CLAUSEGATE_SLACK_BLOCK=SLACK_BLOCK`` use:
    gates post to C0GATES, alerts to C0ALERTS."""
    slack = FakeSlack(token="xoxb-deploy-test").start()
    SlackSettings(bot_token="xoxb-deploy-test", signing_secret="s" * 32, channel="C0GATES", alert_channel="C0ALERTS",
                  api_base_url=slack.api_url).save(SLACK_BLOCK, overwrite=True)
    yield slack
    slack.stop()
