"""A gate e-mail's link clicked through in headless Chromium (tests/support/browser.py; skipped, saying what to
install, without Chromium): the page shows the finding and a Confirm button; the decision happens only on the
click (a POST), recorded ``via: email`` with the address verified."""

from __future__ import annotations

import pytest

from clausegate.gates.email_channel import EmailChannel
from clausegate.gateway import GatewayConfig, create_app
from tests.support.browser import headless_chromium
from tests.support.email_gates import per_finding_gate, progress_of, smtp_of
from tests.support.gates import GatewayThread, state_of
from tests.support.mailbox import Mailbox
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")


@pytest.fixture(scope="module")
def browser():
    driver = headless_chromium(offline=True)  # skips here when Chromium is missing, before any server starts
    yield driver
    driver.quit()


def test_the_link_page_shows_the_finding_and_only_the_confirming_click_decides(browser):
    from selenium.webdriver.common.by import By  # local import: the module skips before, without selenium

    with GatewayThread(create_app(GatewayConfig())) as gateway, Mailbox() as mailbox:
        record = per_finding_gate()
        assert EmailChannel(smtp_of(mailbox.port, gateway.url)).post(record).ok
        mailbox.wait_for(2)
        url = mailbox.links("lou@example.com")[("F1", "approve")]

        browser.get(url)
        assert "unlimited" in browser.find_element(By.ID, "finding").text
        button = browser.find_element(By.ID, "confirm")
        assert button.text == "Confirm: Approve F1"
        assert state_of(record.flow_run_id)[0] == "PAUSED"  # opening the page decided nothing
        assert progress_of(record).get("F1").open_slots == ["legal"]

        button.click()
        wait_until(lambda: "Recorded" in browser.title, 240, what="the confirmation page")
        assert "F1 approved by lou@example.com (via e-mail)" in browser.find_element(By.ID, "message").text
        answer = progress_of(record).get("F1").answers["legal"]
        assert (answer.via, answer.verified_user) == ("email", "lou@example.com")

        browser.get(url)  # the same link again: it already gave its answer
        assert browser.find_element(By.ID, "state").text.startswith("legal: approved by lou@example.com via email")
