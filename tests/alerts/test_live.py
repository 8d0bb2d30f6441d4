"""Live evaluation by `flightlog run`, delivered to real receivers on 127.0.0.1: a webhook
(http.server), an SMTP server (aiosmtpd) and a command hook. Each alert is delivered exactly
once, repeats only after the repeat interval, silenced alerts are not delivered, resolutions
are, and a failing notifier is reported without touching the workload's exit status."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from flightlog.timefmt import parse_time
from tests.alerts.conftest import Mailbox, Webhook, rules_file, wait_until
from tests.helpers import child_env, cli, cli_json

IDLE = """
  - name: cpu-idle
    kind: threshold
    series: cpu.percent
    op: "<"
    value: 50
    for: 0.3s
    summary: "CPU of {run.name} at {value:.0f}% for {for}"
"""
SILENT = """
  - name: silent
    kind: stalled
    after: 1s
    watch: [logs]
    severity: critical
"""


def frun(home: Path, rules: Path, *command: str, env: dict[str, str] | None = None) -> tuple[str, str]:
    """`flightlog run --alerts rules` around COMMAND; (run id, the runner's stderr)."""
    proc = cli(
        home,
        "run",
        "--project",
        "live",
        "--sample-interval",
        "0.1s",
        "--alerts",
        str(rules),
        "--",
        *command,
        env=env,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    run = cli_json(home, "runs", "ls", "--project", "live", "--limit", "1")[0]["id"]
    return str(run), proc.stderr


def test_each_alert_is_delivered_once_and_its_resolution_too(
    ahome: Path, tmp_path: Path, webhook: Webhook, smtp: Mailbox
) -> None:
    out = tmp_path / "hook.jsonl"
    rules = rules_file(
        tmp_path,
        f"""
settings:
  interval: 0.2s
  repeat_interval: 1h
rules:{IDLE}{SILENT}
  - name: never
    kind: non_finite
notifiers:
  - kind: webhook
    url: {webhook.url}
    retry_delay: 0.1s
  - kind: email
    host: 127.0.0.1
    port: {smtp.port}
    tls: none
    from: flightlog@example.com
    to: [oncall@example.com]
    min_severity: critical
  - kind: command
    command: ["{sys.executable}", "-c", "import sys; open({str(out)!r}, 'a').write(sys.stdin.read() + '\\\\n')"]
""",
    )
    webhook.fail_next = 1  # the first delivery is answered 503: retried, still delivered once
    run, stderr = frun(ahome, rules, "sh", "-c", "echo start; sleep 2.2; echo done; sleep 0.3")
    assert "alerts:" not in stderr
    payloads = webhook.wait(3)
    wait_until(lambda: len(webhook.alerts("resolved")) == len(webhook.alerts("firing")), what="every resolution")
    # every alert (one episode of a rule for this run) is sent once firing and once resolved; the
    # silence may end and come back if the loaded machine is slow to end the run: a second episode
    episodes: dict[tuple[str, str], list[str]] = {}
    for p in webhook.payloads:
        for a in p["alerts"]:
            episodes.setdefault((a["rule"], a["id"]), []).append(a["status"])
    assert all(statuses == ["firing", "resolved"] for statuses in episodes.values()), episodes
    assert sorted({rule for rule, _ in episodes}) == ["cpu-idle", "silent"]
    delivered = sorted((rule, status) for rule, status, _ in webhook.alerts())
    # (alerts that change in one evaluation share a notification: its reason is then "mixed")
    assert {reason for _, _, reason in webhook.alerts()} <= {"new", "resolved", "mixed"}
    assert [r["status"] for r in webhook.requests].count(503) == 1
    first = payloads[0]
    assert first["version"] == "1" and first["source"] == "flightlog" and first["group_key"] == f"run={run}"
    alert = first["alerts"][0]
    assert alert["labels"]["run"] == run and alert["labels"]["project"] == "live"
    assert alert["run"] == {"id": run, "name": "sh -c", "project": "live", "status": "running"}
    assert alert["starts_at"] is not None and alert["ends_at"] is None
    silent = next(a for p in payloads for a in p["alerts"] if a["rule"] == "silent" and a["status"] == "resolved")
    assert silent["resolved_reason"] == "activity_resumed" and silent["value"] > 1.0
    cpu = next(a for p in payloads for a in p["alerts"] if a["rule"] == "cpu-idle" and a["status"] == "resolved")
    assert cpu["resolved_reason"] == "run_ended" and cpu["summary"].startswith("CPU of sh -c at ")

    silent_count = sum(1 for rule, _ in episodes if rule == "silent")
    mails = smtp.wait(2 * silent_count)  # only the critical alert: firing, then resolved
    subjects = [m["message"]["Subject"] for m in mails]
    assert subjects[:2] == ["flightlog [FIRING:1] silent · live/sh -c", "flightlog [RESOLVED:1] silent · live/sh -c"]
    assert mails[0]["to"] == ["oncall@example.com"] and "has been silent for" in mails[0]["message"].get_content()

    def hooked() -> list[tuple[str, str]]:
        hooks = [json.loads(line) for line in out.read_text().splitlines() if line.strip()] if out.exists() else []
        return sorted((a["rule"], a["status"]) for h in hooks for a in h["alerts"])

    wait_until(lambda: hooked() == delivered, what=f"the command hook to get {delivered} (got {hooked()})")

    listed = cli_json(ahome, "alerts", "ls", "--run", run)
    assert sorted({(a["rule"], a["state"]) for a in listed}) == [("cpu-idle", "resolved"), ("silent", "resolved")]
    assert cli_json(ahome, "alerts", "ls", "--state", "firing") == []

    def notified(notifier: str) -> list[tuple[str, str]]:
        events = cli_json(ahome, "alerts", "history", "--run", run)
        return sorted(
            (e["rule"], e["detail"]["status"])
            for e in events
            if e["event"] == "notified" and e["detail"]["notifier"] == notifier
        )

    # a delivery is recorded in the history right after it was sent: on a loaded machine, a moment later
    wait_until(lambda: notified("webhook-1") == delivered, what="the webhook deliveries in the history")
    wait_until(lambda: notified("command-3") == delivered, what="the command deliveries in the history")
    mailed = sorted([("silent", "firing"), ("silent", "resolved")] * silent_count)
    wait_until(lambda: notified("email-2") == mailed, what="the email deliveries in the history")


def test_repeats_come_only_after_the_repeat_interval(ahome: Path, tmp_path: Path, webhook: Webhook) -> None:
    rules = rules_file(
        tmp_path,
        f"""
settings:
  interval: 0.1s
  repeat_interval: 0.8s
  send_resolved: false
rules:{IDLE}
notifiers:
  - kind: webhook
    url: {webhook.url}
""",
    )
    run, _ = frun(ahome, rules, "sleep", "3")
    kinds = [reason for _, _, reason in webhook.alerts()]
    lasted = cli_json(ahome, "runs", "show", run)["duration"]  # 3 s, more on a loaded machine
    assert kinds[0] == "new" and set(kinds[1:]) == {"repeat"} and 1 <= len(kinds) - 1 <= lasted / 0.8
    sent = [parse_time(p["sent_at"]) for p in webhook.payloads]
    assert all(b - a >= 0.8 for a, b in zip(sent, sent[1:], strict=False))
    assert webhook.alerts("resolved") == []  # send_resolved: false


def test_silenced_alerts_are_not_delivered(ahome: Path, tmp_path: Path, webhook: Webhook) -> None:
    rules = rules_file(
        tmp_path,
        f"""
settings:
  interval: 0.2s
rules:{IDLE}{SILENT}
notifiers:
  - kind: webhook
    url: {webhook.url}
""",
    )
    doc = cli_json(
        ahome, "alerts", "silence", "cpu-*", "--for", "1h", "--labels", "project=live", "-m", "known idle job"
    )
    assert doc["rule"] == "cpu-*" and doc["labels"] == {"project": "live"} and doc["active"] is True
    run, _ = frun(ahome, rules, "sh", "-c", "echo start; sleep 2.5")
    webhook.wait(2)
    # the silenced rule is never delivered; the other is, firing then resolved, once per episode (a
    # loaded machine slow to start the workload or to end the run may make a second silence)
    episodes: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for p in webhook.payloads:
        for a in p["alerts"]:
            episodes.setdefault((a["rule"], a["id"]), []).append((a["status"], p["reason"]))
    assert {rule for rule, _ in episodes} == {"silent"}, episodes
    assert all(sent == [("firing", "new"), ("resolved", "resolved")] for sent in episodes.values()), episodes
    cpu = [a for a in cli_json(ahome, "alerts", "ls", "--run", run) if a["rule"] == "cpu-idle"]
    assert len(cpu) == 1 and cpu[0]["silenced_by"] == doc["id"] and cpu[0]["state"] == "resolved"
    assert [s["id"] for s in cli_json(ahome, "alerts", "silences")] == [doc["id"]]
    cli(ahome, "alerts", "unsilence", doc["id"])
    assert cli_json(ahome, "alerts", "silences") == []
    assert [s["active"] for s in cli_json(ahome, "alerts", "silences", "--all")] == [False]


def test_a_failing_notifier_is_reported_and_the_run_goes_on(ahome: Path, tmp_path: Path, webhook: Webhook) -> None:
    rules = rules_file(
        tmp_path,
        f"""
settings:
  interval: 0.2s
rules:{IDLE}
notifiers:
  - name: down
    kind: webhook
    url: http://127.0.0.1:9/nothing-listens-here
    retries: 1
    retry_delay: 0.1s
  - name: pager
    kind: command
    command: [sh, -c, "exit 3"]
    retries: 0
  - name: up
    kind: webhook
    url: {webhook.url}
    headers: {{Authorization: "Bearer ${{HOOK_TOKEN}}"}}
""",
    )
    run, stderr = frun(ahome, rules, "sleep", "1.2", env=child_env(ahome, HOOK_TOKEN="t0ken"))
    assert "alerts: notifier down failed after 2 attempts: cannot reach http://127.0.0.1:9" in stderr
    assert "alerts: notifier pager failed after 1 attempt: sh exited with 3" in stderr
    webhook.wait(1)
    assert webhook.requests[0]["headers"]["Authorization"] == "Bearer t0ken"
    failed = [e for e in cli_json(ahome, "alerts", "history", "--run", run) if e["event"] == "notify_failed"]
    assert {e["detail"]["notifier"] for e in failed} == {"down", "pager"}


@pytest.mark.parametrize("where", ["cwd", "home"])
def test_rules_are_found_without_alerts_option(ahome: Path, tmp_path: Path, webhook: Webhook, where: str) -> None:
    text = f"settings:\n  interval: 0.2s\nrules:{IDLE}notifiers:\n  - kind: webhook\n    url: {webhook.url}\n"
    target = tmp_path / "flightlog.alerts.yaml" if where == "cwd" else ahome / "alerts.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    proc = cli(ahome, "run", "--project", "live", "--sample-interval", "0.1s", "--", "sleep", "0.8")
    assert proc.returncode == 0
    assert [r for r, s, _ in webhook.alerts() if s == "firing"] == ["cpu-idle"]


def test_a_broken_discovered_rules_file_does_not_stop_the_run(ahome: Path, tmp_path: Path) -> None:
    (tmp_path / "flightlog.alerts.yaml").write_text("rules:\n  - name: x\n    kind: nope\n")
    proc = cli(ahome, "run", "--project", "live", "--", "sh", "-c", "echo hi")
    assert proc.returncode == 0 and proc.stdout == "hi\n"
    assert "flightlog: alerts are off for this run: " in proc.stderr
    assert "flightlog.alerts.yaml:3: rules[0].kind: 'nope' is not valid" in proc.stderr


def test_alerts_watch_judges_sdk_runs_once(ahome: Path, tmp_path: Path, webhook: Webhook) -> None:
    from tests.alerts.test_kinds import sdk_run

    rules = rules_file(
        tmp_path,
        f"""
rules:
  - name: loss-nan
    kind: non_finite
notifiers:
  - kind: webhook
    url: {webhook.url}
""",
    )
    run = sdk_run(ahome, 'run.log({"loss": float("nan")}, step=3)')
    # one pass each (--once): the evaluation and its delivery, run in this process (no loop, no signal to see)
    proc = cli(ahome, "alerts", "watch", "--alerts", str(rules), "--once", process=False)
    assert "firing: loss-nan loss became NaN at step 3" in proc.stderr
    assert webhook.alerts() == [("loss-nan", "firing", "new")]
    cli(ahome, "alerts", "watch", "--alerts", str(rules), "--once", process=False)  # a second pass raises nothing again
    assert len(webhook.payloads) == 1
    assert [a["state"] for a in cli_json(ahome, "alerts", "ls", "--run", run)] == ["resolved"]
