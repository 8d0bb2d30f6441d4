"""Every rule kind against real runs — recorded by the SDK in a child process or by
`flightlog run` — through `flightlog alerts test` (the replay of a recorded run), including the
issue's seed examples: CPU idle for a window, a loss not improving for 5 epochs, a project
failing 3 times in a row."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from flightlog.timefmt import parse_time
from tests.alerts.conftest import rules_file
from tests.helpers import cli, cli_json, run_script


def sdk_run(home: Path, body: str, *, project: str = "t", name: str = "train") -> str:
    """Record a run with the SDK in a real child process; its id."""
    proc = run_script(
        home,
        f"""
        import math, time, flightlog
        run = flightlog.init(project={project!r}, name={name!r})
        {body}
        run.finish()
        print(run.id)
    """.replace("\n        ", "\n"),
    )
    return proc.stdout.strip().splitlines()[-1]


def runner_run(home: Path, *args: str, project: str = "t") -> str:
    """Record a run with `flightlog run`; its id."""
    cli(home, "run", "--project", project, *args, check=False, timeout=60)
    return str(cli_json(home, "runs", "ls", "--project", project, "--limit", "1")[0]["id"])


def replay(home: Path, rules: Path, run: str, interval: str = "0.05s") -> dict[str, Any]:
    doc: dict[str, Any] = cli_json(home, "alerts", "test", str(rules), "--run", run, "--interval", interval)
    assert doc["errors"] == []
    return doc


def by_rule(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for alert in doc["alerts"]:
        out.setdefault(alert["rule"], []).append(alert)
    return out


def t(iso: str | None) -> float:
    assert iso is not None
    return parse_time(iso)


def test_loss_not_improving_for_5_epochs(ahome: Path, tmp_path: Path) -> None:
    rules = rules_file(
        tmp_path,
        """
        rules:
          - name: val-loss-stalled
            kind: no_improvement
            metric: val_loss
            mode: min
            patience: 5
            severity: warning
          - name: acc-stalled
            kind: no_improvement
            metric: val_acc
            mode: max
            patience: 3
            min_delta: 0.01
    """,
    )
    losses = [1.0, 0.7, 0.5, 0.45, 0.46, 0.47, 0.45, 0.48, 0.46, 0.5]
    accs = [0.5, 0.6, 0.605, 0.606, 0.607, 0.7]  # +0.005 steps are under min_delta: 3 without improvement
    run = sdk_run(
        ahome,
        f"""
for epoch, v in enumerate({losses}):
    run.log({{"val_loss": v}}, step=epoch)
    time.sleep(0.01)
for epoch, v in enumerate({accs}):
    run.log({{"val_acc": v}}, step=epoch)
""",
    )
    doc = replay(ahome, rules, run)
    alerts = by_rule(doc)
    [loss] = alerts["val-loss-stalled"]
    assert loss["value"] == 0.46 and loss["state"] == "resolved" and loss["resolved_reason"] == "run_ended"
    assert "best 0.45 at step 3" in loss["summary"] and "not improved for 5 evaluations" in loss["summary"]
    assert loss["evidence"]["step"] == 8 and loss["evidence"]["best_step"] == 3
    [acc] = alerts["acc-stalled"]  # fired at 0.607 (epoch 4), resolved when 0.7 beat the best by more than 0.01
    assert acc["value"] == 0.7 and acc["resolved_reason"] == "improved"
    assert acc["evidence"]["best"] == 0.6  # the evidence is what made it fire
    history = {(e["rule"], e["event"]) for e in doc["events"]}
    assert ("acc-stalled", "firing") in history and ("acc-stalled", "resolved") in history


def test_project_failing_3_times_in_a_row(ahome: Path, tmp_path: Path) -> None:
    rules = rules_file(
        tmp_path,
        """
        rules:
          - name: keeps-failing
            kind: consecutive_failures
            count: 3
            group_by: project
            severity: critical
          - name: same-job-failing
            kind: consecutive_failures
            count: 2
            group_by: name
    """,
    )
    sdk_run(ahome, "pass", project="etl", name="ingest")  # a success before the streak
    first = runner_run(ahome, "--name", "ingest", "--", "sh", "-c", "exit 3", project="etl")
    second = runner_run(ahome, "--name", "clean", "--", "sh", "-c", "exit 4", project="etl")
    third = runner_run(ahome, "--name", "ingest", "--", "sh", "-c", "exit 5", project="etl")
    assert by_rule(replay(ahome, rules, second)) == {}
    doc = replay(ahome, rules, third)
    [alert] = by_rule(doc)["keeps-failing"]
    assert alert["state"] == "firing" and alert["value"] == 3 and alert["severity"] == "critical"
    assert alert["labels"] == {"project": "etl"}
    assert alert["evidence"]["runs"] == [third, second, first]
    assert alert["summary"] == f"etl failed 3 times in a row (latest: run {third[:8]}, failed)"
    [same] = by_rule(doc)["same-job-failing"]  # ingest failed twice in a row (clean in between is another job)
    assert same["labels"] == {"project": "etl", "name": "ingest"} and same["value"] == 2


def test_cpu_idle_for_a_window_and_a_silent_run(ahome: Path, tmp_path: Path) -> None:
    rules = rules_file(
        tmp_path,
        """
        rules:
          - name: cpu-idle
            kind: threshold
            series: cpu.percent
            op: "<"
            value: 10
            aggregate: mean
            window: 0.3s
            for: 0.5s
            summary: "CPU {value:.1f}% (mean over {window}) under {threshold}% for {for} on {run.name}"
          - name: gpu-idle
            kind: threshold
            series: gpu.utilization
            op: "<"
            value: 10
            for: 0.5s
          - name: silent
            kind: stalled
            after: 0.6s
    """,
    )
    run = runner_run(ahome, "--sample-interval", "0.1s", "--name", "idle", "--", "sleep", "1.6")
    doc = replay(ahome, rules, run)
    alerts = by_rule(doc)
    assert "gpu-idle" not in alerts  # no GPU on this machine: no series, no alert
    [cpu] = alerts["cpu-idle"]
    assert cpu["state"] == "resolved" and cpu["resolved_reason"] == "run_ended"
    assert 0 <= cpu["value"] < 10
    assert t(cpu["fired_at"]) - t(cpu["pending_at"]) >= 0.5
    assert cpu["summary"].startswith("CPU ")
    assert "(mean over 300ms) under 10% for 500ms on idle" in cpu["summary"]
    [silent] = alerts["silent"]
    info = cli_json(ahome, "runs", "show", run)
    assert abs(t(silent["fired_at"]) - (t(info["started"]) + 0.6)) < 0.15
    assert silent["resolved_reason"] == "run_ended"


def test_non_finite_fires_once_per_metric_at_the_first_bad_point(ahome: Path, tmp_path: Path) -> None:
    rules = rules_file(
        tmp_path,
        """
        rules:
          - name: nan
            kind: non_finite
            severity: critical
          - name: loss-only
            kind: non_finite
            metric: [loss]
    """,
    )
    run = sdk_run(
        ahome,
        """
for i in range(10):
    run.log({"loss": float("nan") if i >= 3 else 1.0 / (i + 1), "grad_norm": math.inf if i == 7 else 1.0, "lr": 0.1}, step=i)
""",
    )
    alerts = by_rule(replay(ahome, rules, run))
    got = sorted((a["labels"]["metric"], a["value"], a["evidence"]["step"]) for a in alerts["nan"])
    assert got == [("grad_norm", "Infinity", 7), ("loss", "NaN", 3)]
    assert [a["labels"]["metric"] for a in alerts["loss-only"]] == ["loss"]
    assert alerts["nan"][0]["severity"] == "critical"


def test_threshold_on_a_metric_goes_pending_firing_resolved(ahome: Path, tmp_path: Path) -> None:
    rules = rules_file(
        tmp_path,
        """
        rules:
          - name: loss-high
            kind: threshold
            metric: loss
            op: ">"
            value: 2
            for: 0.3s
          - name: loss-blip
            kind: threshold
            metric: loss
            op: ">"
            value: 2
            for: 5s
    """,
    )
    run = sdk_run(
        ahome,
        """
for i in range(40):
    run.log({"loss": 3.0 if 5 <= i < 25 else 1.0}, step=i)
    time.sleep(0.03)
""",
    )
    doc = replay(ahome, rules, run)
    alerts = by_rule(doc)
    [high] = alerts["loss-high"]
    assert high["state"] == "resolved" and high["resolved_reason"] == "condition_cleared"
    assert 0.3 <= t(high["fired_at"]) - t(high["pending_at"]) < 0.6  # (0.05s evaluations; a loaded machine logs late)
    assert 0.5 < t(high["resolved_at"]) - t(high["pending_at"]) < 1.5
    assert "loss-blip" not in alerts  # pending for 0.6s of a 5s for: never fired, not kept
    assert [e["event"] for e in doc["events"] if e["rule"] == "loss-high"] == ["pending", "firing", "resolved"]


def test_stalled_resolves_when_the_run_shows_life_again(ahome: Path, tmp_path: Path) -> None:
    rules = rules_file(
        tmp_path,
        """
        rules:
          - name: silent
            kind: stalled
            after: 0.4s
            watch: [logs]
    """,
    )
    run = sdk_run(
        ahome,
        """
run.log_event("loading")
time.sleep(0.9)
run.log_event("training")
time.sleep(0.1)
""",
    )
    lines = cli(ahome, "logs", run, "--format", "json").stdout.splitlines()  # JSON lines
    logs = {e["message"]: t(e["time"]) for e in map(json.loads, lines)}
    alerts = by_rule(replay(ahome, rules, run))["silent"]
    assert all(a["resolved_reason"] == "activity_resumed" for a in alerts)
    silent = alerts[-1]  # (a slow start before "loading" may add one before it; this is the long silence)
    assert abs(t(silent["fired_at"]) - (logs["loading"] + 0.4)) < 0.06
    assert abs(t(silent["resolved_at"]) - logs["training"]) < 0.01
    assert silent["value"] >= 0.4 and silent["summary"].startswith("run train (")


def test_duration_against_the_median_of_the_last_successes(ahome: Path, tmp_path: Path) -> None:
    rules = rules_file(
        tmp_path,
        """
        rules:
          - name: slow
            kind: duration
            factor: 2
            min_runs: 3
          - name: slow-load
            kind: duration
            factor: 2
            stage: load
            stage_check: 0.1s
    """,
    )
    for seconds in (0.1, 0.12, 0.1):
        sdk_run(
            ahome,
            f"""
with run.stage("load"):
    time.sleep({seconds} / 2)
time.sleep({seconds} / 2)
""",
            name="etl",
        )
    slow = sdk_run(
        ahome,
        """
with run.stage("load"):
    time.sleep(1.0)
time.sleep(0.3)
""",
        name="etl",
    )
    alerts = by_rule(replay(ahome, rules, slow))
    [run_alert] = alerts["slow"]
    info = cli_json(ahome, "runs", "show", slow)
    median = run_alert["evidence"]["median_seconds"]
    # fired while running, as soon as it passed 2 × the median, not at its end
    assert abs(t(run_alert["fired_at"]) - t(info["started"]) - 2 * median) < 0.06
    assert t(run_alert["fired_at"]) < t(info["ended"]) and run_alert["resolved_reason"] == "run_ended"
    assert len(run_alert["evidence"]["baseline"]) == 3 and median < 0.5
    [stage] = alerts["slow-load"]
    assert stage["labels"]["stage"] == "load" and stage["value"] > 0.95
    assert "load of run etl" in stage["summary"]


def test_diagnosis_finding_fires_once_at_the_end(ahome: Path, tmp_path: Path) -> None:
    rules = rules_file(
        tmp_path,
        """
        rules:
          - name: broken-env
            kind: diagnosis
            categories: [dependency_error, missing_file]
            min_confidence: 0.6
            severity: critical
          - name: oom
            kind: diagnosis
            categories: [oom_killed]
    """,
    )
    run = runner_run(ahome, "--", "python", "-c", "import flightlog_no_such_module")
    alerts = by_rule(replay(ahome, rules, run))
    assert "oom" not in alerts
    [alert] = alerts["broken-env"]
    assert alert["labels"]["category"] == "dependency_error" and alert["value"] >= 0.6
    assert alert["resolved_reason"] == "one_shot" and "flightlog_no_such_module" in str(alert["evidence"])


def test_rules_apply_where_scoped(ahome: Path, tmp_path: Path) -> None:
    rules = rules_file(
        tmp_path,
        """
        rules:
          - name: other-project
            kind: non_finite
            project: vision
          - name: big-lr
            kind: non_finite
            filter: "params.lr > 0.5"
          - name: small-lr
            kind: non_finite
            filter: "params.lr <= 0.5"
    """,
    )
    run = sdk_run(
        ahome,
        """
run.log_params({"lr": 0.1})
run.log({"loss": math.nan}, step=0)
""",
    )
    doc = replay(ahome, rules, run)
    assert doc["rules"] == ["small-lr"] and list(by_rule(doc)) == ["small-lr"]
    assert math.isnan(float("nan"))
