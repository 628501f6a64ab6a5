"""The machine's IANA time zone for the nightly schedule (clausegate.stack.environment.local_timezone):
TZ first, then tzlocal, then the /etc/localtime link, else UTC; whatever it returns is a name zoneinfo knows.
(``clausegate up --timezone`` / ``CLAUSEGATE_TIMEZONE`` override it in the CLI.)"""

from __future__ import annotations

import os
from zoneinfo import ZoneInfo

import pytest

from clausegate.stack import environment
from clausegate.stack.environment import local_timezone

REAL_REALPATH = os.path.realpath


class FakeTzlocal:
    def __init__(self, name: str | None = None, error: Exception | None = None):
        self.name, self.error = name, error

    def get_localzone_name(self) -> str | None:
        if self.error:
            raise self.error
        return self.name


def localtime_links_to(monkeypatch, target: str | None) -> None:
    """/etc/localtime resolves to ``target`` (None: it does not exist / is no zoneinfo link)."""
    def realpath(path, *args, **kwargs):
        if path == "/etc/localtime":
            return target if target is not None else "/etc/localtime"
        return REAL_REALPATH(path, *args, **kwargs)

    monkeypatch.setattr(environment.os.path, "realpath", realpath)


@pytest.fixture
def no_tz(monkeypatch):
    monkeypatch.delenv("TZ", raising=False)


def test_the_machines_zone_is_an_iana_name_zoneinfo_accepts():
    name = local_timezone()
    assert name and not name.startswith(":") and ZoneInfo(name).key == name


@pytest.mark.parametrize("tz, expected",
                         [("America/New_York", "America/New_York"), (":Europe/Berlin", "Europe/Berlin")])
def test_tz_wins_over_everything_else(monkeypatch, tz, expected):
    monkeypatch.setenv("TZ", tz)
    monkeypatch.setattr(environment, "tzlocal", FakeTzlocal("Asia/Tokyo"))
    localtime_links_to(monkeypatch, "/usr/share/zoneinfo/Australia/Sydney")
    assert local_timezone() == expected
    ZoneInfo(expected)


def test_a_tz_that_is_no_iana_name_is_ignored(monkeypatch):
    monkeypatch.setenv("TZ", "CET-1CEST")  # POSIX rule, not a zone name
    monkeypatch.setattr(environment, "tzlocal", FakeTzlocal("Asia/Tokyo"))
    assert local_timezone() == "Asia/Tokyo"


def test_tzlocal_then_the_localtime_link(monkeypatch, no_tz):
    monkeypatch.setattr(environment, "tzlocal", FakeTzlocal("Asia/Tokyo"))
    localtime_links_to(monkeypatch, "/usr/share/zoneinfo/Australia/Sydney")
    assert local_timezone() == "Asia/Tokyo"
    for confused in (FakeTzlocal(None), FakeTzlocal(error=ValueError("no zone")), None):  # None: not installed
        monkeypatch.setattr(environment, "tzlocal", confused)
        assert local_timezone() == "Australia/Sydney"


def test_utc_when_nothing_tells(monkeypatch, no_tz):
    monkeypatch.setattr(environment, "tzlocal", None)
    localtime_links_to(monkeypatch, None)
    assert local_timezone() == "UTC"
    localtime_links_to(monkeypatch, "/etc/some-file-not-in-zoneinfo")
    assert local_timezone() == "UTC"
