"""The two machine secrets ClauseGate generates for itself, kept outside the repository.

- the **Prefect API credential** (``user:password`` for Prefect's basic auth): the server gets it as
  ``PREFECT_SERVER_API_AUTH_STRING``, every client (worker, flow runs, gateway, CLI) as
  ``PREFECT_API_AUTH_STRING``;
- the **at-rest key** (a Fernet key) that encrypts uploads and persisted task results.

Both live in ``CLAUSEGATE_SECRETS_DIR`` (default ``$XDG_CONFIG_HOME/clausegate``, i.e.
``~/.config/clausegate``): a folder with mode 0700, files with mode 0600, created on first use.
The environment wins over the files (``PREFECT_API_AUTH_STRING``, ``CLAUSEGATE_AT_REST_KEY``), so a
deployment can take them from its own secret store.  Nothing here logs a secret's value.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from cryptography.fernet import Fernet

from clausegate.config import settings
from clausegate.errors import ConfigurationError

AUTH_FILE = "prefect-api-auth"
AT_REST_KEY_FILE = "at-rest.key"
AUTH_USER = "clausegate"


def secrets_dir() -> Path:
    """``CLAUSEGATE_SECRETS_DIR``, default ``$XDG_CONFIG_HOME/clausegate`` (``clausegate.config.Settings``)."""
    return settings().secrets_dir


def _ensure_dir(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)


def _read_private(path: Path) -> str:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise ConfigurationError(
            f"the secret file {path.name} in {path.parent} is readable by other users (mode {mode:o})",
            hint=f"run `chmod 600 {path}` (and `chmod 700 {path.parent}`), then retry")
    return path.read_text(encoding="utf-8").strip()


def _write_private(path: Path, value: str) -> None:
    _ensure_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(value + "\n")
    os.replace(tmp, path)


def _get_or_create(name: str, make, create: bool) -> str | None:
    path = secrets_dir() / name
    if path.exists():
        return _read_private(path)
    if not create:
        return None
    value = make()
    _ensure_dir(path.parent)
    # Written whole to a private temp file, then hard-linked into place: link() fails if the name exists, so
    # processes racing to create the secret agree on the first one, and nobody ever reads a half-written file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(value + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return _read_private(path)
    finally:
        tmp.unlink(missing_ok=True)
    return value


def new_auth_string() -> str:
    return f"{AUTH_USER}:{secrets.token_urlsafe(32)}"


def api_auth_string(*, create: bool = False) -> str | None:
    """The Prefect API credential (``user:password``): the environment's, else the secret file's."""
    explicit = os.environ.get("PREFECT_API_AUTH_STRING")
    if explicit:
        return explicit
    return _get_or_create(AUTH_FILE, new_auth_string, create)


def rotate_api_auth_string() -> str:
    """Write a new credential; the server and every client must be restarted to use it."""
    value = new_auth_string()
    _write_private(secrets_dir() / AUTH_FILE, value)
    return value


def new_at_rest_key() -> str:
    return Fernet.generate_key().decode("ascii")


def at_rest_key(*, create: bool = True) -> str | None:
    """The Fernet key for uploads and persisted results: the environment's, else the secret file's."""
    explicit = settings().at_rest_key_value()
    if explicit:
        return explicit
    return _get_or_create(AT_REST_KEY_FILE, new_at_rest_key, create)
