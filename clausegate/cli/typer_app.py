"""The one Typer app and console every CLI module registers on."""

import os

import typer
from rich.console import Console

from clausegate.cli.server import use_api_credential, use_api_url
from clausegate.stack import temporary_server

app = typer.Typer(help="ClauseGate: contract review as a Prefect flow.", no_args_is_help=True, add_completion=False)
console = Console()


@app.callback()
def _prefect_credential() -> None:
    """Every command that talks to a configured Prefect server sends the API credential; a temporary Prefect
    server a command starts (no API URL, no stack) runs without analytics (this machine may have no internet:
    "Failed to send telemetry")."""
    from clausegate.stack.environment import no_analytics  # local import: Prefect; keeps `clausegate` start-up lean

    no_analytics()
    if os.environ.get("PREFECT_API_URL") and not temporary_server.started_url():
        use_api_credential()


def quiet_if_temporary_server() -> None:
    """Call right before a command's flow runs.  The temporary server the launcher started for this command
    (clausegate/stack/temporary_server.py): while it is still starting, load the offline model and the
    sentence splitter (its first reviews would, ~1.5 s), then wait until it answers.  With no API URL at all
    (the command was not started by the launcher) Prefect starts one, which stays quiet on the console
    (``clausegate.stack.environment.quiet_temporary_server``)."""
    from prefect.settings import get_current_settings  # local import: Prefect; keeps `clausegate` start-up lean

    from clausegate.errors import ClauseGateError  # local import: keeps `clausegate` start-up lean
    from clausegate.stack.environment import quiet_temporary_server  # local import: Prefect; keeps start-up lean

    resolved = get_current_settings().api.url
    if temporary_server.claimed_by_prefect_settings(resolved):
        if resolved is None:  # Prefect was loaded before the launcher set PREFECT_API_URL: set the live settings
            use_api_url(temporary_server.started_url())
        if not temporary_server.answers():
            _load_review_models()
        try:
            temporary_server.wait_until_ready()
        except ClauseGateError as error:
            console.print(f"[red]{error}[/red]", highlight=False)
            raise typer.Exit(1) from None
    elif not get_current_settings().api.url:
        quiet_temporary_server()


def _load_review_models() -> None:
    from clausegate.review.offline.model import load_model  # local import: numpy + the artifact; CLI start-up
    from clausegate.review.passages import warm_up  # local import: nltk; keeps `clausegate` start-up lean

    try:
        load_model()
        warm_up()
    except Exception:  # the review reports it where it needs them, with the step and run
        pass
