"""The contract-review custom-run form in the Prefect UI, in headless Chromium (tests/support/browser.py; skipped
without it): each alternative of ``playbook`` and ``extractor`` can be entered (typing in the typed one does not
flip the form back to the drop-down), the extractor drop-down offers the saved model blocks, and the run the form
creates gets what was entered.

The server is Prefect's own with its UI (tests/support/prefect_ui.py: SQLite in the test's folder, no API
credential: the form is what is tested); the deployment carries the schema `prefect deploy` stores
(``parameter_schema``) with the blocks `clausegate up` offers (``offer_model_blocks``).  The UI at the run page is
Prefect's default there (V1)."""

from __future__ import annotations

import time

import pytest
from prefect.utilities.callables import parameter_schema

from clausegate.pipeline import parameters
from flows.contract_review import contract_review
from tests.support.browser import headless_chromium, wait_until
from tests.support.prefect_ui import api_call, prefect_ui_server

pytestmark = pytest.mark.slow
BLOCK = "anthropic-model/fake-claude"


@pytest.fixture(scope="module")
def driver():
    browser = headless_chromium(offline=True)  # skips the module when Chromium is missing, before any server
    yield browser
    browser.quit()


@pytest.fixture(scope="module")
def ui(driver, tmp_path_factory):
    """A Prefect server with its UI; yields its URL (API at URL/api)."""
    with prefect_ui_server(tmp_path_factory.mktemp("ui-server")) as url:
        yield url


def section(driver, name: str):
    """The form's block of parameter ``name``."""
    labels = driver.find_elements("xpath", f"//span[contains(@class, 'schema-form-property__label')]"
                                           f"[starts-with(normalize-space(.), '{name}')]")
    return labels[0].find_element("xpath", "ancestor::div[contains(concat(' ', normalize-space(@class), ' '), "
                                           "' schema-form-property ')][1]")


def tabs(driver, name: str):
    return section(driver, name).find_elements("css selector", ".p-button-group > button")


def selected_tab(driver, name: str) -> int:
    return [b.get_attribute("aria-selected") for b in tabs(driver, name)].index("true")


def typed_field(driver, name: str):
    return wait_until(lambda: [e for e in section(driver, name).find_elements("css selector", "textarea")
                               if e.is_displayed()][0], 10)


def alternative(options: list[dict], json_type: str) -> int:
    """The tab of the (last) alternative of that JSON type: the typed one for "string"."""
    return max(i for i, option in enumerate(options) if option.get("type") == json_type)


def type_into(driver, name: str, text: str) -> None:
    for i, char in enumerate(text):  # key by key, as a person types: the form re-renders on each
        field = typed_field(driver, name)
        assert field is not None, (f"after typing {text[:i]!r} the {name} text field is gone: the form flipped to "
                                   f"tab {selected_tab(driver, name)}")
        field.send_keys(char)
        time.sleep(0.05)


def test_both_alternatives_can_be_entered_and_the_run_gets_them(ui, driver):
    schema = parameters.offer_model_blocks(parameter_schema(contract_review).model_dump(), [BLOCK])
    flow = api_call("POST", f"{ui}/api/flows/", json={"name": "contract-review"})
    deployment = api_call("POST", f"{ui}/api/deployments/", json={
        "name": "ui-form", "flow_id": flow["id"], "parameter_openapi_schema": schema,
        "enforce_parameter_schema": True})
    driver.get(f"{ui}/deployments/deployment/{deployment['id']}/run")
    assert wait_until(lambda: tabs(driver, "extractor") and tabs(driver, "playbook"), 90), \
        driver.find_element("tag name", "body").text[:3000]

    playbook, extractor = (schema["properties"][p]["anyOf"] for p in ("playbook", "extractor"))
    typed_book, typed_model = alternative(playbook, "string"), alternative(extractor, "string")
    tabs(driver, "playbook")[typed_book].click()
    typed_field(driver, "playbook").clear()
    type_into(driver, "playbook", "/srv/books/ours.yaml")
    tabs(driver, "extractor")[typed_model].click()
    type_into(driver, "extractor", "anthropic-model/claude")
    time.sleep(1)
    assert selected_tab(driver, "playbook") == typed_book, "typing a path flipped the playbook back"
    assert selected_tab(driver, "extractor") == typed_model, "typing a model block flipped the extractor back"
    assert typed_field(driver, "playbook").get_attribute("value") == "/srv/books/ours.yaml"
    assert typed_field(driver, "extractor").get_attribute("value") == "anthropic-model/claude"

    # the drop-down offers the saved blocks (and stays on its tab when one is picked)
    tabs(driver, "extractor")[alternative(extractor, "object")].click()
    choices = wait_until(lambda: section(driver, "extractor").find_element("css selector", "select"), 10)
    assert [o.text for o in choices.find_elements("css selector", "option")] == ["offline", BLOCK]
    from selenium.webdriver.support.ui import Select  # local import: the module skips before, without selenium

    Select(choices).select_by_visible_text(BLOCK)
    time.sleep(1)
    assert selected_tab(driver, "extractor") == alternative(extractor, "object")

    source = section(driver, "source").find_element("css selector", "textarea")
    source.send_keys("/data/contracts/acme.pdf")
    next(b for b in driver.find_elements("tag name", "button") if b.text.strip() == "Submit").click()

    def created():
        runs = api_call("POST", f"{ui}/api/flow_runs/filter", json={
            "deployments": {"id": {"any_": [deployment["id"]]}}})
        return runs[0] if runs else None

    run = wait_until(created, 60)
    assert run, driver.find_element("tag name", "body").text[:2000]
    assert run["parameters"]["playbook"] == "/srv/books/ours.yaml"
    assert contract_review.validate_parameters(run["parameters"]) == {
        "source": "/data/contracts/acme.pdf", "playbook": "/srv/books/ours.yaml", "extractor": BLOCK,
        "out_dir": "reports", "revises": None}
