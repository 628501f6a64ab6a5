"""The policies of the checked fetcher's uses (``clausegate.security.fetch``): a client's ``source_url`` under the
inbox's allow-list (parsed here, so a bad entry fails where the inbox starts), and Slack's ``response_url``."""

from __future__ import annotations

import logging
from typing import Any

from clausegate.security.fetch import SLACK_HOOKS, Policy, Refused, parse_url, private_literal

log = logging.getLogger("clausegate.security.fetch")


def inbox_policy(inbox: Any) -> Policy:
    """The policy for a client's ``source_url`` from the inbox settings (``CLAUSEGATE_INBOX_*``): the allow-list
    and private hosts parsed here (a bad entry raises ValueError naming it), the upload cap and the timeout."""
    return Policy.build(list(inbox.url_allow_list), list(inbox.url_allow_private_hosts),
                        max_bytes=inbox.max_upload_bytes, timeout=inbox.url_timeout_seconds)


def slack_policy(settings: Any | None, timeout: float = 10.0) -> Policy:
    """Slack's ``response_url``: https://hooks.slack.com, plus the origin of the configured Slack API base URL
    (e.g. the fake Slack in tests); that host may be private only if written as a private IP literal or localhost."""
    allow, private = [SLACK_HOOKS], []
    base = getattr(settings, "api_base_url", None)
    if base:
        try:
            api = parse_url(base)
        except Refused as refusal:
            log.warning("Slack api_base_url is not a valid http(s) URL [%s]: %s", refusal.code, refusal.detail)
        else:
            allow.append(api.origin)
            if private_literal(api.host):
                private.append(api.host)
    return Policy.build(allow, private, max_bytes=64 * 1024, timeout=timeout, max_redirects=0)
