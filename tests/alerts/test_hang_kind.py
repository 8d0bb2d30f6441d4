"""The ``hang`` rule kind: fires while a running run's process (or rank) has stopped making
progress, with the diagnosis of where it is stuck, and resolves when it goes on."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.alerts.conftest import Webhook, rules_file
from tests.helpers import child_env, cli

STUCK = """
import sys, time
from pathlib import Path
import flightlog

def wait_for_the_lock(release):
    while not release.exists():
        time.sleep(0.05)

run = flightlog.init(name="stuck")
for step in range(20):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    time.sleep(0.02)
wait_for_the_lock(Path(sys.argv[1]))
run.log({"loss": 0.0}, step=20)
"""


def _until(check, proc: subprocess.Popen[str], what: str):  # type: ignore[no-untyped-def]
    while not (found := check()):
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {what}: {proc.communicate()}")
        time.sleep(0.1)
    return found


def test_a_hang_fires_with_where_the_process_is_stuck_and_resolves_when_it_goes_on(
    ahome: Path, tmp_path: Path, webhook: Webhook
) -> None:
    rules = rules_file(
        tmp_path,
        f"""
settings:
  interval: 0.2s
rules:
  - name: hung
    kind: hang
    severity: critical
notifiers:
  - kind: webhook
    url: {webhook.url}
""",
    )
    script = tmp_path / "stuck.py"
    script.write_text(STUCK)
    release = tmp_path / "release"
    env = child_env(ahome, FLIGHTLOG_HANG_MIN="0.5", FLIGHTLOG_HANG_MAX="2")
    exe = Path(sys.executable).with_name("flightlog")
    proc = subprocess.Popen(
        [str(exe), "run", "--project", "live", "--alerts", str(rules), "--", sys.executable, str(script), str(release)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        firing = _until(lambda: webhook.alerts("firing"), proc, "the hang alert fired")
        assert firing[0][0] == "hung"
        alert = next(a for p in webhook.payloads for a in p["alerts"] if a["status"] == "firing")
        assert alert["run"]["status"] == "running"
        assert "made no progress for" in alert["summary"]
        assert "wait_for_the_lock at stuck.py:" in alert["summary"], alert["summary"]
    finally:
        release.write_text("go")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    resolved = _until(lambda: webhook.alerts("resolved"), proc, "the hang alert resolved")
    assert resolved[0][0] == "hung"
    reason = next(a for p in webhook.payloads for a in p["alerts"] if a["status"] == "resolved")["resolved_reason"]
    assert reason in ("progress_resumed", "run_ended")


def test_the_rules_file_checks_the_hang_kind(ahome: Path, tmp_path: Path) -> None:
    good = rules_file(tmp_path, "rules:\n  - name: hung\n    kind: hang\n    min_ranks: 2\n")
    assert cli(ahome, "alerts", "rules", "check", str(good)).returncode == 0
    bad = rules_file(tmp_path, "rules:\n  - name: hung\n    kind: hang\n    min_ranks: 0\n", name="bad.yaml")
    proc = cli(ahome, "alerts", "rules", "check", str(bad), check=False)
    assert proc.returncode != 0 and "min_ranks" in proc.stderr
