"""`clausegate` command line. Each concern registers its commands from its own module."""

from clausegate.cli.app import app
from clausegate.cli import review  # noqa: F401  (registers `review`, `playbooks`)

__all__ = ["app"]
