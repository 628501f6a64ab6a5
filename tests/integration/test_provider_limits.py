"""What a provider says about its limits, over real HTTP to the fakes: the rate-limit headers of every
answer (a used-up request limit holds the next call until its reset, in this process and in another
one) and a 400 refusing the output budget (the review asks again with a budget that fits)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from prefect import flow

from clausegate.demo.model_server import FakeModelServer
from clausegate.demo.responders import contract_responder
from clausegate.providers import CooldownRegistry, OutputLimitRejected, ProviderError
from tests.support.contracts import LIABILITY_PAGES
from tests.support.fake_model import KEY, client_for, fake_model_server
from tests.support.model_flow import KEY as FLOW_KEY
from tests.support.model_flow import playbook, review, save_block
from tests.support.pdf_factory import make_text_pdf

ROOT = Path(__file__).resolve().parents[2]
OTHER_PROCESS = """
import sys
from prefect import flow
from tests.support.fake_model import KEY, CLIENTS
from clausegate.providers.cooldown import CooldownRegistry

@flow
def use_the_limit(protocol: str, url: str) -> int:
    client = CLIENTS[protocol](base_url=url, model="m", api_key=KEY, cooldowns=CooldownRegistry())
    client.complete("sys", "the other process")
    return 0

use_the_limit(sys.argv[1], sys.argv[2])
"""


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_a_used_up_request_limit_holds_the_next_call_until_its_reset(protocol):
    with fake_model_server(protocol, request_limit=2, limit_window_seconds=3) as server:
        client = client_for(server, cooldowns=CooldownRegistry())
        for i in range(3):  # the second answer says 0 requests remain: the third waits for the reset
            client.complete("sys", f"call {i}")
        assert [r.status for r in server.requests] == [200, 200, 200]


@flow
def one_call(protocol: str, url: str) -> str:
    from tests.support.fake_model import CLIENTS

    client = CLIENTS[protocol](base_url=url, model="m", api_key=KEY, cooldowns=CooldownRegistry())
    return client.complete("sys", "this process").text


@pytest.mark.slow
def test_a_used_up_limit_seen_by_another_process_holds_this_one(prefect_server):
    protocol = "openai"  # the sharing is the same for both; each protocol's headers: the test above
    with fake_model_server(protocol, request_limit=1, limit_window_seconds=15) as server:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(OTHER_PROCESS), protocol, server.url],
                              env=prefect_server.env(), cwd=str(ROOT), capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert [r.status for r in server.requests] == [200]  # its answer said 0 requests remain
        try:
            one_call(protocol, server.url)  # a fresh process-local cooldown: only the shared one knows
        except ProviderError as error:
            pytest.fail(f"the other process's used-up limit was not honoured: {error}")
        assert [r.status for r in server.requests] == [200, 200]


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_a_refused_output_budget_is_asked_again_with_one_that_fits(prefect_server, tmp_path, protocol):
    server = FakeModelServer(protocol, api_key=FLOW_KEY, responder=contract_responder, max_output_tokens=500).start()
    try:
        book = playbook(tmp_path, save_block(protocol, server))  # extract: max_output_tokens 800
        pdf = make_text_pdf(tmp_path / "c.pdf", LIABILITY_PAGES + ["Schedule: delivery terms."])
        state, _ = review(tmp_path, pdf, book)
        assert state.is_completed(), state.message
        result = state.result()
        assert result.status != "degraded", [w.code for w in result.warnings]
        assert any(c.source == "model" for c in result.clauses)
        assert [r.status for r in server.requests] == [400, 200]
        assert [r.body["max_tokens"] for r in server.requests] == [800, 500]
        assert "CG-MODEL-OUTPUT-LIMIT" in {w.code for w in result.warnings}
    finally:
        server.stop()


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_an_output_limit_400_names_the_budget_that_fits(protocol):
    with fake_model_server(protocol, max_output_tokens=1000) as server:
        with pytest.raises(OutputLimitRejected) as caught:
            client_for(server).complete("sys", "user", max_tokens=4096)
    assert caught.value.code == "CG-MODEL-OUTPUT-LIMIT" and caught.value.allowed_output_tokens == 1000
    assert not caught.value.transient
