"""The contract-review flow with a model provider, for the model-flow tests: a model block pointing at a
fake server, a playbook that uses it, and one in-process review with its task states.

    book = playbook(tmp_path, save_block("anthropic", server), generate=save_block("openai", other))
    state, states = review(tmp_path, pdf, book)      # states: task name -> final state name

Fake servers for these tests expect the key ``KEY``.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from pathlib import Path

from pydantic import SecretStr

from clausegate.config import AnthropicModel, OpenAICompatibleModel
from clausegate.demo.model_server import FakeModelServer, prompts_of
from flows.contract_review import contract_review
from tests.support.flow_runs import review_task_states

KEY = "sk-ant-test-SECRET-abcdef0123456789"


def save_block(kind: str, server: FakeModelServer, **fields) -> str:
    """A saved model block ("anthropic" or "openai"-compatible) for ``server``; returns 'block-type/name'."""
    cls = AnthropicModel if kind == "anthropic" else OpenAICompatibleModel
    name = f"t-{uuid.uuid4().hex[:8]}"
    options = dict(base_url=server.url, model=f"{kind}-primary", fallback_model=f"{kind}-fallback",
                   api_key=SecretStr(KEY), read_timeout_seconds=1.5, eur_per_million_input_tokens=3.0,
                   eur_per_million_output_tokens=15.0)
    options.update(fields)
    cls(**options).save(name, overwrite=True)
    return f"{cls.get_block_type_slug()}/{name}"


def playbook(tmp_path: Path, extractor: str, *, generate: str | None = None, budgets: str = "", extract: str = "",
             high_risk: str = "[Uncapped Liability, Liquidated Damages]", gates: str = "[]",
             key_terms: str = "never") -> str:
    """A playbook file extracting with ``extractor`` (a block name or "offline") and generating with ``generate``.
    ``key_terms``: ``steps.extract.key_terms``; "never" by default here, so that a test's fault schedule and call
    counts are the extraction's own (tests/integration/test_key_terms_model_flow.py tests the key-terms call)."""
    text = f"""
name: test-model
categories: [Governing Law, Cap on Liability, Uncapped Liability, Liquidated Damages, Insurance, Audit Rights]
high_risk: {high_risk}
gates: {gates}
steps:
  extract: {{extractor: "{extractor}", retries: 3, retry_delay_seconds: [0.1, 0.1, 0.1],
             max_output_tokens: 800, key_terms: "{key_terms}" {extract}}}
  generate: {{provider: {json.dumps(generate)}, retries: 2, retry_delay_seconds: [0.1, 0.1]}}
{budgets}
"""
    path = tmp_path / f"playbook-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(text)
    return str(path)


def review(tmp_path, pdf, book, out="reports"):
    """One in-process contract-review run: (its final state, task name -> final state name)."""
    state = asyncio.run(contract_review(str(pdf), playbook=book, out_dir=str(tmp_path / out), return_state=True))
    return state, review_task_states(state)


_PASSAGE = re.compile(r'<contract_passage id="(?P<id>[^"]+)" page="\d+">\n(?P<text>.*?)\n</contract_passage>', re.S)


def confirming_at(confidence: float, findings):
    """A responder that "confirms" each (category, text) finding by quoting its text exactly, at ``confidence``."""

    def responder(request):
        _, user = prompts_of(request)
        passages = [m.groupdict() for m in _PASSAGE.finditer(user)]
        clauses = []
        for category, text in findings:
            passage = next((p for p in passages if " ".join(text.split()) in " ".join(p["text"].split())), None)
            if passage is not None:
                clauses.append({"category": category, "passage_id": passage["id"], "text": text,
                                "confidence": confidence})
        return json.dumps({"clauses": clauses})

    return responder
