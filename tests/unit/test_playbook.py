import pytest

from clausegate.errors import PlaybookError
from clausegate.review.categories import CATEGORIES
from clausegate.review.playbook import builtin_playbooks, load_playbook, parse_playbook


def test_builtin_playbooks_load():
    assert set(builtin_playbooks()) >= {"default", "payment-liability"}
    default = load_playbook("default")
    assert default.categories == list(CATEGORIES)
    narrow = load_playbook("payment-liability")
    assert len(narrow.categories) == 6
    assert "Uncapped Liability" in narrow.gated_categories
    assert narrow.steps.extract.extractor == "offline"


def test_category_names_are_canonicalised():
    book = parse_playbook("name: x\ncategories: [cap on liability, GOVERNING LAW]\n")
    assert book.categories == ["Cap on Liability", "Governing Law"]


@pytest.mark.parametrize(
    "text, field",
    [
        ("name: x\ncategories: [Not A Category]\n", "categories"),
        ("name: x\ncategories: [Insurance]\nsteps: {parse: {timeout_secs: 3}}\n", "steps.parse.timeout_secs"),
        ("name: x\ncategories: [Insurance]\nsteps: {extract: {retries: -1}}\n", "steps.extract.retries"),
        ("name: x\ncategories: [Insurance]\ngates: [{category: Audit Rights}]\n",
         "gates names categories not in 'categories'"),
        ("name: X Y\ncategories: [Insurance]\n", "name"),
        ("categories: [Insurance]\n", "name"),
        ("name: x\ncategories: []\n", "categories"),
        ("name: x\ncategories: [Insurance]\nbudgets: {per_run_eur: -1}\n", "budgets.per_run_eur"),
    ],
)
def test_bad_playbook_names_the_field(text, field):
    with pytest.raises(PlaybookError) as caught:
        parse_playbook(text)
    assert field in str(caught.value)
    assert caught.value.code == "CG-PLAYBOOK-INVALID"
    assert "Next step" in str(caught.value)


def test_not_yaml_and_not_a_mapping():
    with pytest.raises(PlaybookError, match="not valid YAML"):
        parse_playbook("name: [unclosed")
    with pytest.raises(PlaybookError, match="mapping"):
        parse_playbook("- a\n- b\n")


def test_unknown_playbook_lists_the_choices():
    with pytest.raises(PlaybookError, match="payment-liability"):
        load_playbook("no-such-playbook")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("name: [unclosed", "expected ',' or ']'"),
        ("name: x\ncategories: {a: 1\n", "expected ',' or '}'"),
    ],
)
def test_yaml_error_shows_the_expected_characters(text, shown):
    """The parser's own expected characters are shown (not "expected '…' or '…'")."""
    with pytest.raises(PlaybookError) as caught:
        parse_playbook(text)
    assert shown in str(caught.value)
    assert "'…'" not in str(caught.value)


def test_yaml_error_never_quotes_the_file():
    """The problem's own words only: a long value from the file is not echoed in the message."""
    with pytest.raises(PlaybookError) as caught:
        parse_playbook('name: "The Supplier shall indemnify the secret\\q clause"\n')
    assert "secret" not in str(caught.value) and "indemnify" not in str(caught.value)


@pytest.mark.parametrize("field", ["categories", "high_risk", "gates"])
def test_unknown_category_points_at_the_command(field):
    """An unknown category names `clausegate playbooks --categories` and the closest name, never a Python symbol
    (such as "see clausegate.review.categories.CATEGORIES")."""
    body = {"categories": "categories: [Uncaped Liability]\n",
            "high_risk": "categories: [Cap On Liability]\nhigh_risk: [Uncaped Liability]\n",
            "gates": "categories: [Cap On Liability]\ngates: [{category: Uncaped Liability, sla_hours: 4}]\n"}[field]
    with pytest.raises(PlaybookError) as caught:
        parse_playbook("name: x\n" + body)
    message = str(caught.value)
    assert "clausegate playbooks --categories" in message
    assert "'Uncapped Liability'" in message
    assert "clausegate.review" not in message
