"""The one Typer app and console every CLI module registers on."""

import os
from pathlib import Path

import typer
from rich.console import Console

from clausegate.stack import temporary_server

app = typer.Typer(help="ClauseGate: contract review as a Prefect flow.", no_args_is_help=True, add_completion=False)
console = Console()
_ACTIVE_SETTINGS: list = []


@app.callback()
def _prefect_credential() -> None:
    """Every command that talks to a configured Prefect server sends the API credential; a temporary Prefect
    server a command starts (no API URL, no stack) runs without analytics (this machine may have no internet:
    "Failed to send telemetry")."""
    from clausegate.stack.environment import no_analytics  # local import: Prefect; keeps `clausegate` start-up lean

    no_analytics()
    if os.environ.get("PREFECT_API_URL") and not temporary_server.started_url():
        use_api_credential()


def restore_prefect_settings() -> None:
    """Leave the Prefect settings commands entered for the rest of the process (the API credential, the stack's
    URL), newest first: for callers that run several commands in one process (tests with ``CliRunner``)."""
    while _ACTIVE_SETTINGS:
        _ACTIVE_SETTINGS.pop().__exit__(None, None, None)


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
            _use_api_url(temporary_server.started_url())
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


def use_api_credential() -> None:
    """Send the stack's API credential (basic auth) unless the environment already names one."""
    from clausegate.security import credentials  # local import: Prefect; keeps `clausegate` start-up lean

    if os.environ.get("PREFECT_API_AUTH_STRING"):
        return
    auth = credentials.api_auth_string()
    if not auth:
        return
    from prefect.settings import PREFECT_API_AUTH_STRING, temporary_settings  # local import: keeps start-up lean

    os.environ["PREFECT_API_AUTH_STRING"] = auth
    _ACTIVE_SETTINGS.append(temporary_settings(updates={PREFECT_API_AUTH_STRING: auth}))
    _ACTIVE_SETTINGS[-1].__enter__()


def use_stack_api_url() -> str | None:
    """PREFECT_API_URL, or the URL of a running `clausegate up` stack (with its API credential), found the way
    `clausegate status` finds it: the state file of the project folder (``CLAUSEGATE_PROJECT_DIR`` or the
    current folder) and the server's health check.  ``None``: no server but the command's temporary one."""
    if temporary_server.started_url():
        return None
    if os.environ.get("PREFECT_API_URL"):
        use_api_credential()
        return os.environ["PREFECT_API_URL"]
    from clausegate.config import settings  # local import: keeps `clausegate` start-up lean
    from clausegate.stack.processes import api_healthy  # local import: httpx; keeps `clausegate` start-up lean
    from clausegate.stack.state import StackPaths, read_state  # local import: keeps `clausegate` start-up lean

    state = read_state(StackPaths.for_project(settings().project_dir or Path.cwd()))
    if state and state.get("api_url") and api_healthy(state["api_url"]):
        use_api_credential()
        _use_api_url(state["api_url"])
        return state["api_url"]
    return None


def _use_api_url(url: str) -> None:
    """Prefect reads its settings when first imported: set the variable *and* the live settings."""
    from prefect.settings import PREFECT_API_URL, temporary_settings  # local import: keeps start-up lean

    os.environ["PREFECT_API_URL"] = url
    # Keep the context manager referenced: a collected one would close and restore the old settings.
    _ACTIVE_SETTINGS.append(temporary_settings(updates={PREFECT_API_URL: url}))
    _ACTIVE_SETTINGS[-1].__enter__()
