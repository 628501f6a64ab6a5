"""The Prefect UI's custom-run form: every parameter of every flow in flows/ has a description, and the playbook and
extractor offer real choices (shipped playbooks; 'offline' or a saved model block) while a typed playbook path or
model block is still accepted, each alternative of its own JSON type.  The schema is the one `prefect deploy`
stores: ``parameter_schema(flow)``.  The form itself in a browser: tests/e2e/test_ui_form.py."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from prefect import Flow
from prefect.exceptions import ParameterTypeError
from prefect.utilities.callables import parameter_schema

from clausegate.config import MODEL_BLOCK_KINDS
from clausegate.pipeline.parameters import offer_model_blocks
from clausegate.review.playbook import builtin_playbooks
from flows.contract_review import contract_review
from flows.nightly_batch import nightly_batch

ROOT = Path(__file__).resolve().parents[2]
FLOW_MODULES = sorted(p.stem for p in (ROOT / "flows").glob("*.py") if p.stem != "__init__")


def flows() -> list[Flow]:
    found = []
    for name in FLOW_MODULES:
        module = importlib.import_module(f"flows.{name}")
        found += [obj for obj in vars(module).values() if isinstance(obj, Flow) and obj.__module__ == module.__name__]
    return found


def schema(flow: Flow) -> dict:
    return parameter_schema(flow).model_dump()


def test_every_flow_parameter_has_a_description():
    checked = 0
    for flow in flows():
        props = schema(flow)["properties"]
        assert props, flow.name
        for name, prop in props.items():
            assert len(prop.get("description", "")) > 20, f"{flow.name}.{name} has no description in the UI form"
            checked += 1
    assert len(flows()) == 8 and checked >= 32


def anyofs(node, where="") -> list[tuple[str, list[dict]]]:
    """Every anyOf in a schema, with where it is."""
    found = []
    if isinstance(node, dict):
        if "anyOf" in node:
            found.append((where, node["anyOf"]))
        for key, value in node.items():
            found += anyofs(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += anyofs(value, f"{where}[{i}]")
    return found


def test_every_either_or_has_one_alternative_per_json_type():
    """The Prefect UI shows the tab of an anyOf whose type matches the value's JSON type: of two alternatives of one
    type the second cannot be entered (typing in it flips the form back to the first)."""
    checked = 0
    for flow in flows():
        for where, options in anyofs(schema(flow)):
            types = [o.get("type") for o in options]
            assert None not in types and len(types) == len(set(types)), f"{flow.name}{where}: {types}"
            checked += 1
    assert checked >= 4


def test_playbook_offers_the_shipped_playbooks_and_still_takes_a_path():
    for flow in (contract_review, nightly_batch):
        shipped, typed = schema(flow)["properties"]["playbook"]["anyOf"]
        assert shipped["type"] == "object" and shipped["properties"]["name"]["enum"] == builtin_playbooks()
        assert {"default", "payment-liability"} <= set(shipped["properties"]["name"]["enum"])
        assert typed == {"type": "string", "title": typed["title"]} and "YAML" in typed["title"]
    for given, got in (("/srv/books/ours.yaml", "/srv/books/ours.yaml"), ("default", "default"),
                       ({"name": "payment-liability"}, "payment-liability")):  # the flow gets a plain string
        assert contract_review.validate_parameters({"source": "a.pdf", "playbook": given})["playbook"] == got


def test_extractor_is_offline_or_a_model_block_of_a_known_kind():
    for flow in (contract_review, nightly_batch):
        offered, typed, empty = schema(flow)["properties"]["extractor"]["anyOf"]
        assert offered["type"] == "object" and offered["properties"]["name"]["enum"] == ["offline"]
        assert typed["type"] == "string" and "pattern" not in typed and empty["type"] == "null"
        assert all(kind in typed["title"] for kind in MODEL_BLOCK_KINDS)
    for given, got in (("offline", "offline"), ("anthropic-model/claude", "anthropic-model/claude"), (None, None),
                       ("openai-compatible-model/local", "openai-compatible-model/local"),
                       ({"name": "anthropic-model/fake-claude"}, "anthropic-model/fake-claude")):
        assert contract_review.validate_parameters({"source": "a.pdf", "extractor": given})["extractor"] == got
    for bad in ("claude", {"name": "claude"}, "anthropic-model/"):
        with pytest.raises(ParameterTypeError, match=r"\[CG-CONFIG\] extractor .* is neither 'offline' nor"):
            contract_review.validate_parameters({"source": "a.pdf", "extractor": bad})


def test_the_extractor_drop_down_offers_the_saved_model_blocks():
    base = schema(contract_review)
    offered = offer_model_blocks(base, ["openai-compatible-model/local", "anthropic-model/claude"])
    choices = offered["properties"]["extractor"]["anyOf"][0]["properties"]["name"]["enum"]
    assert choices == ["offline", "anthropic-model/claude", "openai-compatible-model/local"]
    assert offered["properties"]["extractor"]["anyOf"][1:] == base["properties"]["extractor"]["anyOf"][1:]
    assert offered["properties"]["playbook"] == base["properties"]["playbook"]
    assert base["properties"]["extractor"]["anyOf"][0]["properties"]["name"]["enum"] == ["offline"]  # not changed
    retention = schema(next(f for f in flows() if f.name == "retention"))
    assert offer_model_blocks(retention, ["anthropic-model/claude"]) == retention  # no extractor, nothing to offer


def test_nightly_batch_queue_stays_a_choice():
    assert schema(nightly_batch)["properties"]["work_queue"]["enum"] == ["high", "normal", "low"]
