"""`clausegate fake-model` (a local fake Claude/OpenAI server) and `clausegate model-block`."""

from __future__ import annotations

import time
from typing import Annotated, Literal

import typer

from clausegate.cli.server import TEMPORARY, Server, server_or_temporary
from clausegate.cli.typer_app import app, console
from clausegate.stack import temporary_server

Protocol = Literal["anthropic", "openai"]
SLUGS = {"anthropic": "anthropic-model", "openai": "openai-compatible-model"}


def _block_server() -> Server:
    """Where a block is saved: the configured or stack's server, else a temporary one on PREFECT_HOME's database
    (where later commands with no stack find it); clausegate/cli/server.py."""
    from clausegate.errors import ClauseGateError  # local import: keeps CLI start-up lean

    try:
        return server_or_temporary()
    except ClauseGateError as error:
        console.print(f"[red]{error}[/red]", highlight=False)
        raise typer.Exit(1) from None


def _offer_in_forms(server: Server) -> None:
    """A block saved on a real server is offered in the extractor drop-down of its deployments' run forms."""
    if server.kind == TEMPORARY:
        return
    from prefect.client.orchestration import get_client  # local import: keeps CLI start-up lean

    from clausegate.stack.deploy import offer_model_blocks  # local import: Prefect's client; CLI start-up

    with get_client(sync_client=True) as client:
        offer_model_blocks(client)


def _block_class(protocol: str):
    from clausegate.config import (  # local import: Prefect; keeps CLI start-up lean
        AnthropicModel,
        OpenAICompatibleModel,
    )

    return AnthropicModel if protocol == "anthropic" else OpenAICompatibleModel


@app.command("model-block")
def model_block(
    protocol: Annotated[Protocol, typer.Argument(help="anthropic or openai (any OpenAI-style server)")],
    name: Annotated[str, typer.Argument(help="block name, e.g. claude")],
    base_url: Annotated[str | None, typer.Option(help="API base URL (default: the provider's)")] = None,
    model: Annotated[str | None, typer.Option(help="model name")] = None,
    fallback_model: Annotated[str | None, typer.Option(help="model used from the second attempt on")] = None,
    eur_in: Annotated[float, typer.Option(help="EUR per 1M input tokens")] = 0.0,
    eur_out: Annotated[float, typer.Option(help="EUR per 1M output tokens")] = 0.0,
) -> None:
    """Save a model-provider block. The API key is read from ANTHROPIC_API_KEY / OPENAI_API_KEY at run
    time (or set it on the block in the Prefect UI); it is never passed on the command line."""
    cls = _block_class(protocol)
    fields = {k: v for k, v in dict(base_url=base_url, model=model, fallback_model=fallback_model).items() if v}
    server = _block_server()
    cls(**fields, eur_per_million_input_tokens=eur_in, eur_per_million_output_tokens=eur_out).save(name, overwrite=True)
    _offer_in_forms(server)
    console.print(f"saved block [bold]{SLUGS[protocol]}/{name}[/bold] on {server.where}; use it with "
                  f"`clausegate review FILE --extractor {SLUGS[protocol]}/{name}`", highlight=False)


@app.command("fake-model")
def fake_model(
    protocol: Annotated[Protocol, typer.Option(help="which real API to imitate")] = "anthropic",
    port: Annotated[int, typer.Option(help="port on 127.0.0.1")] = 8900,
    fault_rate: Annotated[float, typer.Option(help="share of requests answered with a random fault")] = 0.0,
    seed: Annotated[int | None, typer.Option(help="seed for reproducible faults")] = None,
    save_block: Annotated[str | None, typer.Option(help="also save a model block of this name pointing here")] = None,
    eur_in: Annotated[float, typer.Option(help="price to record on the saved block, EUR per 1M input tokens")] = 3.0,
    eur_out: Annotated[float, typer.Option(help="EUR per 1M output tokens")] = 15.0,
) -> None:
    """Run a fake Claude (Messages API) or OpenAI-style server that answers ClauseGate's prompts, so the
    whole pipeline runs "with a model" on this machine. Ctrl-C stops it."""
    from pydantic import SecretStr  # local import: keeps CLI start-up lean

    from clausegate.demo.model_server import DEFAULT_API_KEY, FakeModelServer  # local import: keeps CLI start-up lean
    from clausegate.demo.responders import contract_responder  # local import: keeps CLI start-up lean

    server = FakeModelServer(protocol, api_key=DEFAULT_API_KEY, port=port, fault_rate=fault_rate, seed=seed,
                             responder=contract_responder).start()
    console.print(f"fake {protocol} server on {server.url} (fault rate {fault_rate:.0%}); key: {DEFAULT_API_KEY}")
    if save_block:
        saved_on = _block_server()
        block = _block_class(protocol)(base_url=server.url, model=f"fake-{protocol}",
                                       fallback_model=f"fake-{protocol}-fallback", api_key=SecretStr(DEFAULT_API_KEY),
                                       eur_per_million_input_tokens=eur_in, eur_per_million_output_tokens=eur_out)
        block.save(save_block, overwrite=True)
        _offer_in_forms(saved_on)
        temporary_server.stop()  # a temporary server is needed for the save only, not while the fake model runs
        console.print(f"saved block {SLUGS[protocol]}/{save_block} on {saved_on.where}: "
                      f"clausegate review FILE --extractor {SLUGS[protocol]}/{save_block}", highlight=False)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        console.print(f"stopped after {server.calls} requests")
