"""`clausegate auth`: where the Prefect API credential lives, and rotating it."""

from __future__ import annotations

import typer

from clausegate.cli.typer_app import app, console
from clausegate.security import credentials

auth_app = typer.Typer(help="The Prefect API credential (basic auth) of the local stack.", no_args_is_help=True)
app.add_typer(auth_app, name="auth")


@auth_app.command("show")
def show() -> None:
    """Print the credential the UI asks for (user:password) and the file that holds it."""
    value = credentials.api_auth_string()
    if not value:
        console.print("no API credential yet: `clausegate up` creates one")
        raise typer.Exit(1)
    console.print(f"{value}\n[dim](from PREFECT_API_AUTH_STRING or "
                  f"{credentials.secrets_dir() / credentials.AUTH_FILE}, mode 600)[/dim]")


@auth_app.command("rotate")
def rotate() -> None:
    """Write a new credential. Then restart the stack (`clausegate down && clausegate up`): the server and every
    client (worker, gateway, flow runs) read it when they start."""
    credentials.rotate_api_auth_string()
    console.print(f"new credential written to {credentials.secrets_dir() / credentials.AUTH_FILE}. "
                  "Next step: `clausegate down && clausegate up`, then log in to the UI with `clausegate auth show`.")
