"""Inbox settings from the environment (``CLAUSEGATE_INBOX_*``); safe defaults for the local stack."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from typing_extensions import Annotated

Priority = Literal["high", "normal", "low"]  # = the work queues of the clausegate pool (prefect.yaml)
PRIORITIES: tuple[str, ...] = Priority.__args__  # type: ignore[attr-defined]


class InboxSettings(BaseSettings):
    """Where the inbox keeps files, which sources it may read, and its limits."""

    model_config = SettingsConfigDict(env_prefix="CLAUSEGATE_INBOX_", extra="ignore")

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
    max_upload_mb: float = Field(20.0, gt=0, description="largest accepted PDF")
    url_timeout_seconds: float = Field(20.0, gt=0)
    deployment: str = Field("contract-review/contract-review", description="the deployment each task runs as")
    rate_per_minute: int = Field(30, ge=1, description="submissions per sender per minute (burst = the same "
                                 "number) when the sender's key was created without its own limit")

    @field_validator("url_allow_list", "url_allow_private_hosts", mode="before")
    @classmethod
    def _split(cls, value):
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @field_validator("url_allow_list")
    @classmethod
    def _valid_entries(cls, value: list[str]) -> list[str]:
        from clausegate.security.fetch import parse_entry

        for entry in value:
            parse_entry(entry)  # ValueError names the bad entry: fail at start-up, not on the first fetch
        return value

    @field_validator("url_allow_private_hosts")
    @classmethod
    def _valid_hosts(cls, value: list[str]) -> list[str]:
        from clausegate.security.fetch import canonical_host

        return [canonical_host(host) for host in value]

    def url_policy(self):
        """The ``clausegate.security.fetch.Policy`` for ``source_url``: allow-list, private hosts, size cap, timeout."""
        from clausegate.security.fetch import Policy

        return Policy.build(self.url_allow_list, self.url_allow_private_hosts, max_bytes=self.max_upload_bytes,
                            timeout=self.url_timeout_seconds)

    def playbooks(self) -> dict[str, str]:
        """Playbook names clients may ask for → the value the flow gets (built-in name or file path)."""
        from clausegate.review.playbook import builtin_playbooks

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
