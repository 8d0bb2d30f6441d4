"""Finding the rules file costs a run nothing when there is none: the rule kinds (and what they
import: diagnosis, numpy) are loaded only with a rules file. Every `flightlog run` — each step of
a pipeline — starts a monitor."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_script


def test_a_run_without_rules_does_not_load_the_rule_kinds(ahome: Path, tmp_path: Path) -> None:
    proc = run_script(
        ahome,
        """
        import sys
        import flightlog
        from flightlog.alerts.monitor import NullMonitor, start_monitor
        run = flightlog.init(project="t", resources=False)
        monitor = start_monitor(run)
        print(type(monitor).__name__, "flightlog.alerts.kinds" in sys.modules)
        run.finish()
    """,
    )
    assert proc.stdout.split() == ["NullMonitor", "False"]


def test_a_rules_file_is_still_found_and_loaded(ahome: Path, tmp_path: Path) -> None:
    (tmp_path / "flightlog.alerts.yaml").write_text("rules:\n  - {name: fails, kind: consecutive_failures, count: 2}\n")
    proc = run_script(
        ahome,
        """
        import sys
        import flightlog
        from flightlog.alerts.monitor import start_monitor
        run = flightlog.init(project="t", resources=False)
        monitor = start_monitor(run)
        print(type(monitor).__name__, "flightlog.alerts.kinds" in sys.modules)
        monitor.stop(final=True)
        run.finish()
    """,
        cwd=tmp_path,
    )
    assert proc.stdout.split() == ["LiveMonitor", "True"]
