"""Which Prefect server a `clausegate` command talks to, found the same way by every command:

1. the configured one: ``PREFECT_API_URL`` (or an API URL in Prefect's own settings: a profile, ``prefect.toml``);
2. else the running local stack of this project folder (`clausegate up`; ``CLAUSEGATE_PROJECT_DIR`` or the current
   folder), found as `clausegate status` finds it: its state file and the server's health check; with the
   stack's API credential;
3. else, only for a command whose work makes sense without a stack (``review``, ``batch``, ``model-block``,
   ``fake-model --save-block``), a temporary server on ``PREFECT_HOME``'s database
   (clausegate/stack/temporary_server.py).  A command that needs the real one (``gates``, ``resolve``,
   ``gateway``, ``inbox …``) stops instead with ``CG-STACK-NO-SERVER`` and says how to start one.

Left alone, Prefect starts a temporary server of its own for any API call with no URL; no command leaves it that.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import typer
from rich.console import Console

from clausegate.errors import ClauseGateError
from clausegate.stack import temporary_server
from clausegate.stack.state import NO_SERVER, START_FAILED, StackPaths, read_state

CONFIGURED, STACK, TEMPORARY = "configured", "stack", "temporary"
CREDENTIAL = "CG-STACK-CREDENTIAL"
_ACTIVE_SETTINGS: list = []
_errors = Console(stderr=True)


@dataclass(frozen=True)
class Server:
    url: str | None  # None: a temporary server Prefect starts itself (a command not started by the launcher)
    kind: str        # CONFIGURED, STACK or TEMPORARY
    where: str       # how the command says which server it uses


def restore_prefect_settings() -> None:
    """Leave the Prefect settings commands entered for the rest of the process (the API credential, the stack's
    URL), newest first: for callers that run several commands in one process (tests with ``CliRunner``)."""
    while _ACTIVE_SETTINGS:
        _ACTIVE_SETTINGS.pop().__exit__(None, None, None)


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


def use_api_url(url: str) -> None:
    """Prefect reads its settings when first imported: set the variable *and* the live settings."""
    from prefect.settings import PREFECT_API_URL, temporary_settings  # local import: keeps start-up lean

    os.environ["PREFECT_API_URL"] = url
    # Keep the context manager referenced: a collected one would close and restore the old settings.
    _ACTIVE_SETTINGS.append(temporary_settings(updates={PREFECT_API_URL: url}))
    _ACTIVE_SETTINGS[-1].__enter__()


def project_dir() -> Path:
    from clausegate.config import settings  # local import: keeps `clausegate` start-up lean

    return Path(settings().project_dir or Path.cwd()).resolve()


def _configured_url() -> str | None:
    """PREFECT_API_URL, else an API URL from Prefect's other settings sources (a profile, prefect.toml)."""
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    from prefect.settings import get_current_settings  # local import: Prefect; keeps `clausegate` start-up lean

    return get_current_settings().api.url or None


def find_server() -> Server | None:
    """The configured server, else the running local stack's (its URL and credential now in Prefect's settings),
    else ``None``; a temporary server the launcher started for this command counts as itself."""
    started = temporary_server.started_url()
    if started:
        return Server(started, TEMPORARY, "a temporary Prefect server (no local stack is up; `clausegate up` "
                                          "starts one, and reviews on it start in seconds)")
    url = _configured_url()
    if url:
        use_api_credential()
        source = "PREFECT_API_URL" if os.environ.get("PREFECT_API_URL") else "Prefect's settings"
        return Server(url, CONFIGURED, f"Prefect server {url} ({source})")
    from clausegate.stack.processes import api_healthy  # local import: httpx; keeps `clausegate` start-up lean

    state = read_state(StackPaths.for_project(project_dir())) or {}
    if state.get("api_url") and api_healthy(state["api_url"]):
        use_api_credential()
        _credential_accepted(state["api_url"])
        use_api_url(state["api_url"])
        return Server(state["api_url"], STACK, f"the local stack's Prefect server {state['api_url']}")
    return None


def _credential_accepted(url: str) -> None:
    """The stack's API takes this command's credential; else CG-STACK-CREDENTIAL on stderr and exit 2 (rather
    than Prefect's 401 traceback at the first call)."""
    import httpx  # local import: keeps `clausegate` start-up lean

    from clausegate.security import credentials  # local import: Prefect; keeps `clausegate` start-up lean

    auth = os.environ.get("PREFECT_API_AUTH_STRING")
    try:
        answer = httpx.get(f"{url.rstrip('/')}/admin/version", timeout=10,
                           auth=tuple(auth.split(":", 1)) if auth and ":" in auth else None)
    except httpx.HTTPError:
        return  # it answered its health check a moment ago: the command's own call will say what is wrong
    if answer.status_code != 401:
        return
    source = ("PREFECT_API_AUTH_STRING" if os.environ.get("PREFECT_API_AUTH_STRING") else
              f"{credentials.secrets_dir() / credentials.AUTH_FILE}")
    why = "does not take this credential" if auth else "needs its API credential, and there is none"
    _errors.print(f"[red][{CREDENTIAL}] the local stack's Prefect server {url} {why} (looked in {source}).[/red] "
                  "Next step: run the command as the user who ran `clausegate up`, or set CLAUSEGATE_SECRETS_DIR to "
                  "that user's secrets folder, or PREFECT_API_AUTH_STRING to what `clausegate auth show` prints "
                  "there.", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def no_server_message(command: str, why: str) -> ClauseGateError:
    """CG-STACK-NO-SERVER for ``command``: what it needs the server for, where it looked, how to start one."""
    paths = StackPaths.for_project(project_dir())
    state = read_state(paths) or {}
    looked = (f"the stack of {paths.project} ({paths.state_file}) does not answer at {state['api_url']}"
              if state.get("api_url") and not state.get("stopped_at") else
              f"no `clausegate up` stack is running in {paths.project}")
    return ClauseGateError(
        f"`clausegate {command}` needs a Prefect server ({why}): PREFECT_API_URL is not set and {looked}.",
        code=NO_SERVER,
        hint="`clausegate up` in the project folder (or run this command there, or set CLAUSEGATE_PROJECT_DIR "
             "to it); for another server set PREFECT_API_URL (and PREFECT_API_AUTH_STRING)")


def require_server(command: str, why: str) -> Server:
    """The real server ``command`` needs (configured or the stack's); none: CG-STACK-NO-SERVER on stderr, exit 2.
    Never a temporary one: what it reads or writes lives in the stack's database."""
    server = find_server()
    if server is None or server.kind == TEMPORARY:
        _errors.print(f"[red]{no_server_message(command, why)}[/red]", highlight=False)
        raise typer.Exit(2)
    return server


def server_or_temporary() -> Server:
    """The configured or the stack's server, else a temporary one started now (on PREFECT_HOME's database, which
    later temporary servers read too) and answering; for commands whose work makes sense without a stack."""
    server = find_server()
    if server is not None:
        return server
    url = temporary_server.start()
    if url is None:  # PREFECT_HOME not writable, or a settings file names a server Prefect did not load
        raise ClauseGateError("could not start a temporary Prefect server.", code=START_FAILED,
                              hint=f"check that {temporary_server.prefect_home()} is writable, or `clausegate up`")
    use_api_url(url)
    temporary_server.wait_until_ready()
    return Server(url, TEMPORARY, f"a temporary Prefect server on the database in {temporary_server.prefect_home()} "
                                  "(no local stack is up; `clausegate up` starts one)")
