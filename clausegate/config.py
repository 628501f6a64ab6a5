"""ClauseGate's configuration: the one ``CLAUSEGATE_*`` settings object, and the only door to ``blocks/``.

Every other module reads settings through :func:`settings` (a fresh read of the environment on each
call, so tests can set variables with ``monkeypatch``) and loads or names Prefect blocks through the
functions here; none imports ``blocks`` itself (tests/unit/test_import_rules.py enforces it).

    settings().retention_days            # CLAUSEGATE_RETENTION_DAYS
    settings().inbox.max_upload_bytes    # CLAUSEGATE_INBOX_MAX_UPLOAD_MB
    settings().gateway.max_body_bytes    # CLAUSEGATE_GATEWAY_MAX_BODY_BYTES

An empty variable counts as unset.  A value that does not parse stops the caller with a
``ConfigurationError`` (``CG-CONFIG``) naming the variable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from blocks.deciders import Deciders
from blocks.models import AnthropicModel, OpenAICompatibleModel
from blocks.slack import DEFAULT_BLOCK_NAME, SlackSettings
from blocks.smtp import SmtpSettings
from clausegate.errors import ConfigurationError
from clausegate.review.playbook import builtin_playbooks

__all__ = ["AnthropicModel", "OpenAICompatibleModel", "SlackSettings", "Deciders", "SmtpSettings",
           "BLOCK_CLASSES", "MODEL_BLOCK_KINDS",
           "Settings", "InboxSettings", "GatewaySettings", "settings", "slack_block_name", "load_slack_settings",
           "load_model_block", "strict_text", "load_deciders", "load_smtp_settings"]

MODEL_BLOCK_KINDS = {"anthropic-model": AnthropicModel, "openai-compatible-model": OpenAICompatibleModel}
# registered by `clausegate up`
BLOCK_CLASSES = (AnthropicModel, OpenAICompatibleModel, SlackSettings, Deciders, SmtpSettings)
DEFAULT_RETENTION_DAYS = 30.0
DEFAULT_REQUEUE_STOP_SECONDS = 120.0


def _config(prefix: str) -> SettingsConfigDict:
    return SettingsConfigDict(env_prefix=prefix, extra="ignore", env_ignore_empty=True)


# ------------------------------------------------------------------------------------ inbox
class InboxSettings(BaseSettings):
    """The inbox (``CLAUSEGATE_INBOX_*``): where it keeps files, which sources it may read, its limits.

    Safe defaults for the local stack; ``settings().inbox`` reads them from the environment."""

    model_config = _config("CLAUSEGATE_INBOX_")

    data_dir: Path = Field(Path(".clausegate/inbox"), description="uploads/ and reports/ live here; the workers "
                           "must see the same path (a shared folder when they run on other machines)")
    source_dir: Path | None = Field(None, description="clients may reference files inside this folder by path; "
                                    "unset = path references are refused")
    url_allow_list: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="http(s) sources allowed by URL, compared exactly after parsing: 'host' "
        "(ports 80/443), 'host:port' (that port, http or https) or 'scheme://host[:port][/path-prefix]'; "
        "comma-separated in the environment; empty = URL references are refused (see clausegate.security.fetch)")
    url_allow_private_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="hosts (names or IP literals, no port) on the allow-list that may resolve "
        "to loopback/private/link-local addresses, e.g. an intranet document server; comma-separated; "
        "empty = every URL must resolve to public addresses only")
    playbooks_dir: Path | None = Field(None, description="extra playbooks clients may name (NAME.yaml in this "
                                       "folder), besides the built-in ones")
    max_upload_mb: float = Field(20.0, gt=0, description="largest accepted document (PDF, .docx, text; also each "
                                 "attachment of an e-mail and a JSON submission's text)")
    max_message_mb: float | None = Field(None, gt=0, description="largest accepted .eml upload; unset = 1.5 × "
                                         "max_upload_mb (an attachment at the limit, base64-encoded, is a third "
                                         "larger than the file)")
    max_attachments: int = Field(20, ge=1, description="an e-mail's PDF/DOCX attachments reviewed at most; the "
                                 "others are refused one by one (CG-INBOX-EML-TOO-MANY-ATTACHMENTS)")
    eml_timeout_seconds: float = Field(30.0, gt=0, description="an .eml must be read (parsed and taken apart, in "
                                       "a sandboxed child process) within this time, else CG-INBOX-EML-TOO-COMPLEX")
    eml_memory_mb: int = Field(1024, ge=128, description="the address-space cap of the child process that reads an "
                               ".eml; over it: CG-INBOX-EML-TOO-COMPLEX")
    url_timeout_seconds: float = Field(20.0, gt=0, description="a URL source must arrive within this time")
    deployment: str = Field("contract-review/contract-review", description="the deployment each task runs as")
    rate_per_minute: int = Field(30, ge=1, description="submissions per sender per minute (burst = the same "
                                 "number) when the sender's key was created without its own limit")

    @field_validator("url_allow_list", "url_allow_private_hosts", mode="before")
    @classmethod
    def _split(cls, value):
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value


    def playbooks(self) -> dict[str, str]:
        """Playbook names clients may ask for → the value the flow gets (built-in name or file path)."""
        found = {name: name for name in builtin_playbooks()}
        if self.playbooks_dir is not None and self.playbooks_dir.is_dir():
            for path in sorted(self.playbooks_dir.glob("*.yaml")):
                found.setdefault(path.stem, str(path.resolve()))
        return found

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir.resolve() / "uploads"

    @property
    def reports_dir(self) -> Path:
        return self.data_dir.resolve() / "reports"

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

    @property
    def max_message_bytes(self) -> int:
        return int((self.max_message_mb or 1.5 * self.max_upload_mb) * 1024 * 1024)


# ------------------------------------------------------------------------------------ gateway
class GatewaySettings(BaseSettings):
    """The gateway's limits (``CLAUSEGATE_GATEWAY_*``); its Slack block and inbox come from the rest of
    :class:`Settings`.  Every request body is capped while it streams (clausegate/gateway/security.py)."""

    model_config = _config("CLAUSEGATE_GATEWAY_")

    http_timeout_seconds: float = Field(10.0, gt=0, description="timeout of the gateway's own calls out "
                                        "(Slack response URLs)")
    max_body_bytes: int = Field(256 * 1024, gt=0, description="largest Slack request (interactions, commands)")
    max_other_body_bytes: int = Field(16 * 1024, gt=0, description="largest body of every other route (none "
                                      "of them reads a body today)")
    form_overhead_bytes: int = Field(64 * 1024, ge=0, description="an inbox submission may be this much larger "
                                     "than CLAUSEGATE_INBOX_MAX_UPLOAD_MB, for the rest of the form")
    public_url: str = Field("http://127.0.0.1:8787", description="the gateway as people reach it (from Slack, the "
                            "Prefect UI, e-mail): the signed links to annotated copies (/annotated/{token}) start "
                            "with it")
    annotated_link_hours: float | None = Field(None, gt=0, description="hours a gate's signed link to the annotated "
                                               "copy stays valid; unset: the gate's SLA (sla_hours)")


# ------------------------------------------------------------------------------------ everything
def _default_secrets_dir() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "clausegate"


class Settings(BaseSettings):
    """Every ``CLAUSEGATE_*`` variable ClauseGate reads, with its default; the inbox's and the gateway's
    own groups are ``inbox`` and ``gateway``."""

    model_config = _config("CLAUSEGATE_")

    project_dir: Path | None = Field(None, description="the project folder (prefect.yaml, flows/) the deployments "
                                     "pull their code from; `clausegate up` sets it for the processes it starts; "
                                     "default: the current folder")
    secrets_dir: Path = Field(default_factory=_default_secrets_dir, description="owner-only folder of the Prefect "
                              "API credential and the at-rest key file; default $XDG_CONFIG_HOME/clausegate "
                              "(~/.config/clausegate)")
    at_rest_key: SecretStr | None = Field(None, description="the Fernet key that encrypts uploads and run results "
                                          "at rest; unset: the file at-rest.key in the secrets folder (created on "
                                          "first use)")
    retention_days: float = Field(DEFAULT_RETENTION_DAYS, gt=0, description="the longest time results, uploads "
                                  "and reports are kept (the retention flow's `days` and a playbook's "
                                  "retention.days may shorten it)")
    zombie_seconds: int | None = Field(None, description="seconds without a heartbeat after which the zombie "
                                       "automation marks a run Crashed (at least 45: heartbeats come every 30 s); "
                                       "unset: deployments/automations.yaml's 150")
    requeue_stop_seconds: float = Field(DEFAULT_REQUEUE_STOP_SECONDS, description="how long the dead-letter flow "
                                        "waits for a worker to stop a hung attempt before requeueing it (at least "
                                        "1; a value that is not a number means the default)")
    stuck_seconds: float = Field(300.0, ge=30, description="how long a contract-review run may sit Pending "
                                 "(claimed, not started) or Late after a requeue before the stuck-run sweep "
                                 "(dead-letters' schedule) crashes it for dead-letters to requeue")
    reminder_lead_days: float = Field(30.0, ge=0, description="how many days before a contract's renewal notice "
                                      "deadline its reminder run is scheduled (clausegate/pipeline/deadlines.py)")
    slack_block: str = Field(DEFAULT_BLOCK_NAME, description="the SlackSettings block the flows, the gateway and "
                             "the sweepers load")
    timezone: str | None = Field(None, description="IANA time zone of the nightly schedule (`clausegate up`); "
                                 "default: this machine's")
    nightly_cron: str | None = Field(None, description="cron of the nightly batch (`clausegate up`); default: "
                                     "prefect.yaml's 0 2 * * *")
    database: str = Field("postgres", description="the database `clausegate up` starts for its Prefect server: "
                          "postgres (embedded) or sqlite (`clausegate up --database`)")
    warmstart_socket: Path | None = Field(None, description="Unix socket of the warm-start zygote; set by "
                                          "`clausegate up` for the worker (unset: flow runs start a new Python)")
    parse_pool_size: int = Field(2, ge=0, description="sandboxed PDF parser processes each flow-run process keeps "
                                 "running and reuses (clausegate/review/document/pool.py); 0 = a new parser "
                                 "process per contract")
    strict_text: bool = Field(False, description="strict text mode (docs/security.md): no clause text in Prefect's "
                              "database or an unsealed file; artifacts, gate records, Slack and reports show "
                              "categories, pages and confidence, the text is read back by `clausegate gates show` "
                              "or the inbox API")
    seal_reports: bool = Field(False, description="in strict text mode, also write the full review next to each "
                               "report, sealed with the at-rest key (`<report>.json.sealed`; read it with "
                               "`clausegate report-text PATH`)")
    inbox: InboxSettings = Field(default_factory=InboxSettings, description="CLAUSEGATE_INBOX_*")
    gateway: GatewaySettings = Field(default_factory=GatewaySettings, description="CLAUSEGATE_GATEWAY_*")

    @field_validator("secrets_dir")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("requeue_stop_seconds", mode="before")
    @classmethod
    def _lenient_seconds(cls, value: Any) -> float:
        try:
            return max(1.0, float(value))
        except (TypeError, ValueError):
            return DEFAULT_REQUEUE_STOP_SECONDS

    def at_rest_key_value(self) -> str | None:
        """``CLAUSEGATE_AT_REST_KEY`` as text, or None when it is not set."""
        return self.at_rest_key.get_secret_value() if self.at_rest_key is not None else None


_PREFIXES = {"Settings": "CLAUSEGATE_", "InboxSettings": "CLAUSEGATE_INBOX_", "GatewaySettings": "CLAUSEGATE_GATEWAY_"}


def settings() -> Settings:
    """The ``CLAUSEGATE_*`` settings, read from the environment now (cheap; call it where the value is needed)."""
    try:
        return Settings()
    except ValidationError as exc:
        prefix = _PREFIXES.get(exc.title, "CLAUSEGATE_")
        problems = "; ".join(f"{prefix}{'_'.join(map(str, e['loc'])).upper()}={e.get('input')!r}: {e['msg']}"
                             for e in exc.errors())
        raise ConfigurationError(f"invalid setting: {problems}.",
                                 hint="fix or unset the variable (defaults: clausegate/config.py)") from None


# ------------------------------------------------------------------------------------ blocks
def slack_block_name() -> str:
    """The SlackSettings block the flows and the gateway use (``CLAUSEGATE_SLACK_BLOCK``)."""
    return settings().slack_block


def load_slack_settings(name: str | None = None) -> SlackSettings | None:
    """The SlackSettings block, or None when it is not configured (the gate still works without Slack)."""
    try:
        return SlackSettings.load(name or slack_block_name())
    except (ValueError, KeyError):
        return None


def load_deciders(name: str | None = None) -> Deciders | None:
    """The Deciders block (who may decide gates), or None: then the SlackSettings block's older fields say."""
    try:
        return Deciders.load(name or slack_block_name())
    except (ValueError, KeyError):
        return None


def load_smtp_settings(name: str | None = None) -> SmtpSettings | None:
    """The SmtpSettings block, or None when gates are not asked by e-mail."""
    try:
        return SmtpSettings.load(name or slack_block_name())
    except (ValueError, KeyError):
        return None


def load_model_block(name: str) -> AnthropicModel | OpenAICompatibleModel:
    """Load 'anthropic-model/NAME' or 'openai-compatible-model/NAME' (a saved Prefect block)."""
    kind, _, block_name = name.partition("/")
    if kind not in MODEL_BLOCK_KINDS or not block_name:
        raise ConfigurationError(f"unknown model provider {name!r}",
                                 hint="use 'offline', 'anthropic-model/NAME' or 'openai-compatible-model/NAME' "
                                      "(create the block with `clausegate model-block` or the Prefect UI)")
    try:
        return MODEL_BLOCK_KINDS[kind].load(block_name)
    except ValueError as exc:
        raise ConfigurationError(f"model block {name!r} not found: {exc}",
                                 hint="create it in the Prefect UI (Blocks) or with `clausegate model-block`") from None


def strict_text() -> bool:
    """Strict text mode (``CLAUSEGATE_STRICT_TEXT``): no clause text in Prefect's database or unsealed files."""
    return settings().strict_text
