"""What every process and client of the stack runs with: its environment (Prefect home, API URL, API
credential), the Prefect client settings for the stack's server, the command lines it starts, and the
machine's time zone."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from prefect.settings import (
    PREFECT_API_AUTH_STRING,
    PREFECT_API_URL,
    PREFECT_CLIENT_CSRF_SUPPORT_ENABLED,
    PREFECT_SERVER_ANALYTICS_ENABLED,
    get_current_settings,
    temporary_settings,
)

from clausegate.security import credentials
from clausegate.stack.state import StackPaths

try:
    import tzlocal
except ImportError:  # optional: /etc/localtime and TZ are read without it
    tzlocal = None


def local_timezone() -> str:
    """The machine's IANA time zone (for "02:00 local time"); UTC if it cannot be told."""
    if os.environ.get("TZ", "").count("/"):
        return os.environ["TZ"].lstrip(":")
    if tzlocal is not None:
        try:
            name = tzlocal.get_localzone_name()
            if name:
                return name
        except Exception:  # tzlocal confused by this machine's configuration
            pass
    try:
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    except OSError:
        pass
    return "UTC"


# Every Prefect server ClauseGate starts or causes (`clausegate up`'s, the temporary server of a command run
# without a stack) runs without analytics: no "Failed to send telemetry" on a machine without internet.
NO_ANALYTICS = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
_NO_ANALYTICS_SETTINGS: list = []
CSRF_CLIENT_ENV = "PREFECT_CLIENT_CSRF_SUPPORT_ENABLED"


def csrf_client_env() -> dict[str, str]:
    """Clients of a server that checks no CSRF token (Prefect's default, and the stack's unless the operator switched
    ``PREFECT_SERVER_CSRF_PROTECTION_ENABLED`` on, in the environment or a profile) ask for none: otherwise every new
    Prefect client first sends ``GET /csrf-token``, has it refused (422, "CSRF protection is disabled") and only then
    its own request.  A client setting the operator made stays."""
    current = get_current_settings()
    if current.server.api.csrf_protection_enabled or "csrf_support_enabled" in current.client.model_fields_set:
        return {}
    return {CSRF_CLIENT_ENV: "false"}


def no_analytics() -> None:
    """Analytics off for a temporary Prefect server this process may start: Prefect starts it with this
    process's environment overlaid with its explicitly set settings (prefect/server/api/server.py), so set the
    variable, and the setting too when a profile or the environment had switched analytics on."""
    os.environ.update(NO_ANALYTICS)
    server = get_current_settings().server
    if server.analytics_enabled and "analytics_enabled" in server.model_fields_set and not _NO_ANALYTICS_SETTINGS:
        # kept referenced: a collected context would restore the old settings
        _NO_ANALYTICS_SETTINGS.append(temporary_settings(updates={PREFECT_SERVER_ANALYTICS_ENABLED: False}))
        _NO_ANALYTICS_SETTINGS[0].__enter__()


def quiet_temporary_server() -> None:
    """Only the throwaway server of a one-off command (`clausegate review` / `batch` without a stack): no server
    log lines on the console (this process configured its own logging when it imported Prefect).  Prefect stops
    that server as the command exits, and its task-run recorder and SQLAlchemy then log an ERROR traceback for
    each event still in flight (the command's reports are written by then); an error during the run still
    reaches the command as an API error.  Levels already set in the environment win."""
    os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
    os.environ.setdefault("PREFECT_LOGGING_ROOT_LEVEL", "CRITICAL")  # e.g. SQLAlchemy's pool on the way out


def base_env(paths: StackPaths, api_url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every process the stack starts: its Prefect home, API URL and API credential."""
    env = dict(os.environ)
    env.pop("PREFECT_API_KEY", None)  # would take precedence over the basic-auth string and fail (401)
    auth = credentials.api_auth_string()
    if auth:
        env["PREFECT_API_AUTH_STRING"] = auth
    env.update({
        "PREFECT_HOME": str(paths.prefect_home),
        "PREFECT_API_URL": api_url,
        **NO_ANALYTICS,
        **csrf_client_env(),
        "CLAUSEGATE_PROJECT_DIR": str(paths.project),
        "PYTHONUNBUFFERED": "1",
    })
    env.update(extra or {})
    return env


def client_settings(api_url: str):
    """Prefect client settings for the stack's server: its URL and, when there is one, the API credential."""
    updates: dict[Any, Any] = {PREFECT_API_URL: api_url}
    if csrf_client_env():
        updates[PREFECT_CLIENT_CSRF_SUPPORT_ENABLED] = False
    auth = credentials.api_auth_string()
    if auth:
        updates[PREFECT_API_AUTH_STRING] = auth
    return temporary_settings(updates=updates)


def prefect_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "prefect", *args]


def clausegate_argv(*args: str) -> list[str]:
    script = Path(sys.executable).with_name("clausegate")
    if script.exists():
        return [str(script), *args]
    code = "from clausegate.cli.launch import main; main()"
    return [sys.executable, "-c", code, *args]


def gateway_available() -> bool:
    return importlib.util.find_spec("clausegate.gateway") is not None
