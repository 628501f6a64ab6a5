"""`clausegate` command line: one Typer ``app`` (clausegate/cli/app.py); each concern's module registers its
commands on it when imported: review (`review`, `playbooks`), models (`model-block`, `fake-model`), gates
(`gates`, `resolve`, `gateway`), batch (`batch`), stack (`up`, `down`, `status`), inbox (`inbox keys`,
`inbox audit`), auth (`auth show`, `auth rotate`), reports (`report-text`, `gate-text`)."""

from clausegate.cli import auth, batch, gates, inbox, models, reports, review, stack
from clausegate.cli.app import app

__all__ = ["app", "auth", "batch", "gates", "inbox", "models", "reports", "review", "stack"]
