"""`clausegate` command line. Each concern registers its commands from its own module."""

from clausegate.cli.app import app
from clausegate.cli import review  # noqa: F401  (registers `review`, `playbooks`)
from clausegate.cli import models  # noqa: F401  (registers `model-block`, `fake-model`)
from clausegate.cli import gates  # noqa: F401  (registers `gates`, `resolve`, `gateway`)
from clausegate.cli import batch  # noqa: F401  (registers `batch`)
from clausegate.cli import stack  # noqa: F401  (registers `up`, `down`, `status`)
from clausegate.cli import inbox  # noqa: F401  (registers `inbox keys`, `inbox audit`)
from clausegate.cli import auth  # noqa: F401  (registers `auth show`, `auth rotate`)

__all__ = ["app"]
