"""The stack's database choice (clausegate/stack/database.py) without starting anything: which URL wins, that a
URL is shown without its password, and that a stale ``postmaster.pid`` naming another program's pid is cleared
(and that program left alone)."""

from __future__ import annotations

import subprocess
import sys

from clausegate.stack import database
from clausegate.stack.state import StackPaths


def test_an_operators_database_url_wins_and_is_shown_without_its_password(monkeypatch):
    monkeypatch.delenv(database.URL_ENV, raising=False)
    assert database.external_url({}) is None
    monkeypatch.setenv(database.URL_ENV, "postgresql+asyncpg://prefect:s3cret@db.internal:5432/prefect")
    assert database.external_url({}) == "postgresql+asyncpg://prefect:s3cret@db.internal:5432/prefect"
    assert database.external_url({database.URL_ENV: "sqlite+aiosqlite:///x.db"}) == "sqlite+aiosqlite:///x.db"
    shown = database.redact("postgresql+asyncpg://prefect:s3cret@db.internal:5432/prefect")
    assert "s3cret" not in shown and shown.startswith("postgresql+asyncpg://prefect:") and "db.internal" in shown
    assert "s3cret" not in database.redact("not a url://prefect:s3cret@")


def test_sqlite_is_prefects_file_in_the_stack_home(tmp_path):
    paths = StackPaths.for_project(tmp_path, home=tmp_path / "stack")
    info = database.sqlite_info(paths)
    assert info == {"kind": "sqlite", "url": f"sqlite+aiosqlite:///{tmp_path / 'stack' / 'prefect' / 'prefect.db'}"}
    assert paths.postgres_data == tmp_path / "stack" / "postgres"


def test_a_stale_pid_file_naming_another_program_is_removed_and_that_program_left_alone(tmp_path):
    data = tmp_path / "postgres"
    data.mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (data / "postmaster.pid").write_text(f"{other.pid}\n{data}\n1700000000\n5432\n{data}\n\n  0 0\nready\n")
        assert database._postmaster(data) is None, "not a PostgreSQL on this folder"
        database._clear_stale_pid_file(data)
        assert not (data / "postmaster.pid").exists()
        database._stop_leftover(data)  # nothing named: nothing signalled
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
