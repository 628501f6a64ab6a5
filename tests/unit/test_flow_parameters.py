"""The Prefect UI's custom-run form: every parameter of every flow in flows/ has a description, and the playbook and
extractor offer real choices (shipped playbooks; 'offline' or a model block of a known kind) while a playbook path
is still accepted.  The schema is the one `prefect deploy` stores: ``parameter_schema(flow)``."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from prefect import Flow
from prefect.exceptions import ParameterTypeError
from prefect.utilities.callables import parameter_schema

from clausegate.config import MODEL_BLOCK_KINDS
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
    assert len(flows()) == 6 and checked >= 25


def test_playbook_offers_the_shipped_playbooks_and_still_takes_a_path():
    for flow in (contract_review, nightly_batch):
        shipped, path = schema(flow)["properties"]["playbook"]["anyOf"]
        assert shipped["enum"] == builtin_playbooks() and {"default", "payment-liability"} <= set(shipped["enum"])
        assert path == {"type": "string", "title": path["title"]} and "YAML" in path["title"]
    assert contract_review.validate_parameters({"source": "a.pdf", "playbook": "/srv/books/ours.yaml"})["playbook"] \
        == "/srv/books/ours.yaml"


def test_extractor_is_offline_or_a_model_block_of_a_known_kind():
    for flow in (contract_review, nightly_batch):
        offline, block, empty = schema(flow)["properties"]["extractor"]["anyOf"]
        assert offline["enum"] == ["offline"] and empty == {"type": "null"}
        assert all(kind in block["pattern"] and kind in block["title"] for kind in MODEL_BLOCK_KINDS)
    for good in ("offline", "anthropic-model/claude", "openai-compatible-model/local", None):
        assert contract_review.validate_parameters({"source": "a.pdf", "extractor": good})["extractor"] == good
    with pytest.raises(ParameterTypeError):
        contract_review.validate_parameters({"source": "a.pdf", "extractor": "claude"})


def test_nightly_batch_queue_stays_a_choice():
    assert schema(nightly_batch)["properties"]["work_queue"]["enum"] == ["high", "normal", "low"]
