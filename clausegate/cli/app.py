"""The one Typer app and console every CLI module registers on."""

import typer
from rich.console import Console

app = typer.Typer(help="ClauseGate: contract review as a Prefect flow.", no_args_is_help=True, add_completion=False)
console = Console()
