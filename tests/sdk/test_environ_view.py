"""``init()`` reads its ~40 settings through one view of the environment made per call
(``config.EnvironView``): what it answers is what ``os.environ`` answers, and a variable set
between two ``init()`` calls is seen by the second."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import flightlog
from flightlog.config import EnvironView, Settings, rank_identity
from flightlog.sdk.hangs import hang_settings

pytestmark = pytest.mark.embedded_only("reads this process's environment")


def test_the_view_answers_as_the_environment_does(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FLIGHTLOG_PROJECT", "vision")
    monkeypatch.setenv("FLIGHTLOG_FLUSH_INTERVAL", "2.5")
    monkeypatch.setenv("FLIGHTLOG_ENV_ALLOW", "TEAM_*")
    monkeypatch.setenv("FLIGHTLOG_HANG_MIN", "7")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.delenv("FLIGHTLOG_MODE", raising=False)
    view = EnvironView()
    assert view["FLIGHTLOG_PROJECT"] == "vision" and view.get("FLIGHTLOG_PROJECT") == "vision"
    assert "FLIGHTLOG_MODE" not in view and view.get("FLIGHTLOG_MODE", "x") == "x"
    with pytest.raises(KeyError):
        view["FLIGHTLOG_MODE"]
    assert set(view) == set(os.environ) and len(view) == len(os.environ)
    assert Settings.from_env(view) == Settings.from_env()
    assert hang_settings(view) == hang_settings()
    assert rank_identity(view, launcher_process="1@2") == rank_identity(launcher_process="1@2")


def test_a_variable_set_between_two_runs_is_seen_by_the_second(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLIGHTLOG_PROJECT", raising=False)
    first = flightlog.init(resources=False, console=False, quiet=True)
    first.finish()
    monkeypatch.setenv("FLIGHTLOG_PROJECT", "later")
    second = flightlog.init(resources=False, console=False, quiet=True)
    second.finish()
    client = flightlog.Client()
    assert client.run(first.id).project == "default" and client.run(second.id).project == "later"


def test_the_settings_are_read_again_when_what_they_read_changed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A sweep's ``init()`` calls build their settings once; a ``FLIGHTLOG_*`` variable, an
    override or (for a home found from it) the working directory changed makes new ones."""
    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "home"))
    first = Settings.from_env(EnvironView())
    assert Settings.from_env(EnvironView()) is first
    monkeypatch.setenv("FLIGHTLOG_FLUSH_INTERVAL", "3")
    changed = Settings.from_env(EnvironView())
    assert changed.flush_interval == 3.0 and changed.home == first.home
    assert Settings.from_env(EnvironView(), mode="offline").mode == "offline"
    assert Settings.from_env(EnvironView(), home=str(tmp_path / "other")).home == tmp_path / "other"
    assert Settings.from_env(EnvironView()) == changed
    monkeypatch.delenv("FLIGHTLOG_HOME")
    for name in ("a", "b"):
        (tmp_path / name / ".flightlog").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a")
    assert Settings.from_env(EnvironView()).home == tmp_path / "a" / ".flightlog"
    monkeypatch.chdir(tmp_path / "b")
    assert Settings.from_env(EnvironView()).home == tmp_path / "b" / ".flightlog"
