"""Rules files: the issue's example works as written; every mistake is reported with its line
and field; secrets are refused in clear; the file is found where the docs say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flightlog.alerts.config import FILE_NAME, HOME_FILE_NAME, discover, load_config, parse_config
from flightlog.alerts.yamlsource import RulesFileError
from flightlog.errors import NotFound
from tests.alerts.conftest import rules_file
from tests.helpers import cli

ISSUE_EXAMPLE = """\
rules:
  - name: val-loss-stalled
    kind: no_improvement
    metric: val_loss
    mode: min
    patience: 5
    severity: warning
  - name: gpu-idle
    kind: threshold
    series: gpu.utilization      # or a metric name, or cpu.percent
    op: "<"
    value: 10
    for: 30m
    severity: warning
  - name: keeps-failing
    kind: consecutive_failures
    count: 3
    group_by: name
    severity: critical
notifiers:
  - kind: webhook
    url: http://127.0.0.1:9999/hook
"""


def problems(text: str) -> list[str]:
    with pytest.raises(RulesFileError) as info:
        parse_config(text, "r.yaml")
    return [p.render("r.yaml") for p in info.value.problems]


def test_the_issue_example_works_as_written() -> None:
    config = parse_config(ISSUE_EXAMPLE, "example.yaml")
    assert [(r.name, r.kind, r.severity) for r in config.rules] == [
        ("val-loss-stalled", "no_improvement", "warning"),
        ("gpu-idle", "threshold", "warning"),
        ("keeps-failing", "consecutive_failures", "critical"),
    ]
    gpu = config.rules[1].spec
    assert (gpu.series, gpu.source, gpu.op, gpu.value, gpu.for_seconds) == (
        "gpu.utilization",
        "resource",
        "<",
        10.0,
        1800.0,
    )
    assert config.rules[0].spec.patience == 5
    assert config.rules[2].spec.count == 3
    assert [(n.kind, n.describe()) for n in config.notifiers] == [("webhook", "webhook http://127.0.0.1:9999/hook")]


def test_every_problem_is_reported_with_line_and_field() -> None:
    found = problems("""\
rules:
  - name: a
    kind: threshhold
  - name: b
    kind: threshold
    series: cpu.percent
    op: "<>"
    value: ten
    for: 3 parsecs
    sumary: typo
  - name: b
    kind: no_improvement
    summary: "{best} {bogus}"
  - name: c
    kind: threshold
    metric: loss
    op: ">"
    value: 1
    aggregate: mean
    labels: {run: x}
    filter: "params.lr >"
""")
    assert found[10].startswith("r.yaml:21: rules[3].filter: missing value after >")
    assert found[:10] == [
        "r.yaml:3: rules[0].kind: 'threshhold' is not valid (did you mean 'threshold'?): use one of threshold, "
        "no_improvement, non_finite, consecutive_failures, stalled, hang, duration, diagnosis, "
        "serving_latency, serving_error_rate, serving_drift, serving_cohort, triage",
        "r.yaml:7: rules[1].op: '<>' is not valid (did you mean '>'?): use one of <, <=, >, >=, ==, !=",
        "r.yaml:8: rules[1].value: must be a number, got 'ten'",
        "r.yaml:9: rules[1].for: invalid for '3 parsecs': use a number with a unit, e.g. 30s, 10m, 2h, 1h30m or 7d",
        "r.yaml:10: rules[1].sumary: unknown field (did you mean 'summary'?)",
        "r.yaml:11: rules[2].name: 'b' is also the name of rules[1]: rule names must be unique",
        "r.yaml:11: rules[2]: needs the field 'metric'",
        "r.yaml:13: rules[2].summary: {bogus} is not a field of this rule; use one of value, rule, severity, kind, "
        "best, best_step, metric, mode, patience, step, waited, labels.<name>, params.<name>, tags.<name>, run.<field>",
        'r.yaml:14: rules[3]: aggregate mean needs a window: a duration (window: 5m) or points (window: "20 points")',
        "r.yaml:20: rules[3].labels.run: 'run' is set by flightlog; choose another label name",
    ]


def test_yaml_syntax_errors_name_the_line() -> None:
    found = problems("rules:\n  - name: a\n    kind: [threshold\n")
    assert len(found) == 1 and found[0].startswith("r.yaml:4: (top level): not valid YAML")
    assert problems("rules:\n  - name: a\n    name: b\n    kind: stalled\n    after: 1m\n") == [
        "r.yaml:3: rules[0].name: is given twice"
    ]
    assert problems("rules: {name: a}\n") == ["r.yaml:1: rules: must be a list (each item starting with '- ')"]


@pytest.mark.parametrize(
    ("notifier", "field", "message"),
    [
        ("kind: slack\n    url: https://hooks.slack.com/services/T0/B0/XYZ", "url", "${SLACK_WEBHOOK_URL}"),
        (
            "kind: email\n    host: smtp.example.com\n    from: a@example.com\n    to: b@example.com\n"
            "    username: a\n    password: hunter2",
            "password",
            "${SMTP_PASSWORD}",
        ),
        (
            "kind: webhook\n    url: https://example.com/hook\n    headers: {Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123}",
            "headers.Authorization",
            "must not be written in clear",
        ),
        ("kind: webhook\n    url: https://example.com/hook?token=abc123", "url", "token= in clear"),
        ("kind: webhook\n    url: https://user:pass@example.com/hook", "url", "password in clear"),
        (
            "kind: command\n    command: [page]\n    env: {PAGER_API_KEY: k-123}",
            "env.PAGER_API_KEY",
            "must not be written in clear",
        ),
        (
            "kind: email\n    host: smtp.example.com\n    tls: none\n    from: a@example.com\n    to: b@example.com\n"
            "    username: a\n    password: ${SMTP_PASSWORD}",
            "tls",
            "password in clear",
        ),
    ],
)
def test_secrets_are_refused_in_clear(notifier: str, field: str, message: str) -> None:
    found = problems(f"notifiers:\n  - {notifier}\n")
    assert len(found) == 1, found
    assert f"notifiers[0].{field}:" in found[0] and message in found[0]


def test_secrets_from_the_environment_are_accepted_and_resolved_when_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    config = parse_config(
        """\
notifiers:
  - kind: slack
    url: ${SLACK_WEBHOOK_URL}
  - kind: webhook
    url: https://example.com/hook?token=${HOOK_TOKEN}
    headers: {Authorization: "Bearer ${HOOK_TOKEN}", X-Team: ml}
  - kind: email
    host: smtp.example.com
    from: alerts@example.com
    to: [a@example.com, b@example.com]
    username: alerts
    password: ${SMTP_PASSWORD}
""",
        "r.yaml",
    )
    monkeypatch.delenv("HOOK_TOKEN", raising=False)
    monkeypatch.setenv("SLACK_WEBHOOK_URL", "x")
    monkeypatch.setenv("SMTP_PASSWORD", "x")
    assert config.missing_env() == ["HOOK_TOKEN"]
    monkeypatch.setenv("HOOK_TOKEN", "s3cret")
    hook = config.notifiers[1]
    assert hook._headers() == {"Authorization": "Bearer s3cret", "X-Team": "ml"}  # type: ignore[attr-defined]
    assert hook._url() == "https://example.com/hook?token=s3cret"  # type: ignore[attr-defined]


def test_discovery_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    assert discover(cwd=work, home=home) is None
    (home / HOME_FILE_NAME).write_text("rules: []\n")
    assert discover(cwd=work, home=home) == home / HOME_FILE_NAME
    (work / FILE_NAME).write_text("rules: []\n")
    assert discover(cwd=work, home=home) == work / FILE_NAME
    explicit = rules_file(tmp_path, "rules: []\n", "mine.yaml")
    assert discover(explicit, cwd=work, home=home) == explicit
    with pytest.raises(NotFound, match="no rules file at"):
        discover(tmp_path / "missing.yaml", cwd=work, home=home)
    with pytest.raises(NotFound):
        load_config(tmp_path / "missing.yaml")


def test_rules_check_command(ahome: Path, tmp_path: Path) -> None:
    good = rules_file(tmp_path, ISSUE_EXAMPLE, "good.yaml")
    proc = cli(ahome, "alerts", "rules", "check", str(good), "--format", "json")
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True and [r["name"] for r in doc["rules"]] == ["val-loss-stalled", "gpu-idle", "keeps-failing"]
    assert doc["rules"][1]["line"] == 8
    bad = rules_file(tmp_path, "rules:\n  - name: x\n    kind: stalled\n", "bad.yaml")
    proc = cli(ahome, "alerts", "rules", "check", str(bad), check=False)
    assert proc.returncode == 1
    assert f"{bad}:2: rules[0]: needs the field 'after'" in proc.stderr
    proc = cli(ahome, "alerts", "rules", "check", str(bad), "--format", "json", check=False)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["problems"] == [
        {
            "file": str(bad),
            "line": 2,
            "field": "rules[0]",
            "message": "needs the field 'after': how long a silence counts as stalled (e.g. after: 15m)",
        }
    ]
    proc = cli(ahome, "run", "--alerts", str(bad), "--", "true", check=False)
    assert proc.returncode == 1 and "needs the field 'after'" in proc.stderr  # refused before anything runs
