"""The runbook as data: built-in entries, team files, validation errors with line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from flightlog.diagnose.runbook import load_runbook, match_runbook, parse_runbook
from flightlog.diagnose.taxonomy import CATEGORIES
from flightlog.errors import InvalidInput


def test_builtin_runbook_is_valid_and_covers_categories(tmp_path: Path) -> None:
    entries = load_runbook(tmp_path, tmp_path)
    assert len({e.id for e in entries}) == len(entries)
    covered = {c for e in entries for c in e.categories}
    assert covered <= set(CATEGORIES)
    assert {"oom_killed", "service_unavailable", "data_error", "nan_loss", "timeout"} <= covered


def test_team_entries_come_first_and_replace_by_id(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    (home / "runbook.yaml").write_text(
        "- id: feature-store\n"
        "  title: Feature store at 10.0.0.5 is down on Mondays\n"
        "  match: {category: service_unavailable, log: '10\\.0\\.0\\.5'}\n"
        "  advice: Page #feature-store-oncall\n"
    )
    (cwd / "flightlog.runbook.yaml").write_text(
        "entries:\n"
        "  - id: timeout\n"
        "    title: Our nightly jobs time out when the cluster is busy\n"
        "    match: {category: [timeout]}\n"
        "    advice: [Rerun after 06:00]\n"
    )
    entries = load_runbook(home, cwd)
    assert [e.id for e in entries[:2]] == ["feature-store", "timeout"]
    assert sum(e.id == "timeout" for e in entries) == 1
    hits = match_runbook(
        entries,
        findings=[("service_unavailable", 0.9)],
        exception=None,
        log_lines=["ConnectionRefusedError: connect to 10.0.0.5:6379 refused"],
    )
    ids = [h["id"] for h in hits]
    assert ids[0] == "feature-store"
    assert hits[0]["source"].endswith("runbook.yaml:1")
    assert "connection-refused" in ids
    assert hits[0]["matched"] == [
        "category service_unavailable",
        "log line 'ConnectionRefusedError: connect to 10.0.0.5:6379 refused'",
    ]


def test_weak_findings_do_not_pull_entries(tmp_path: Path) -> None:
    entries = load_runbook(tmp_path, tmp_path)
    assert match_runbook(entries, findings=[("oom_killed", 0.2)], exception=None, log_lines=[]) == []


def test_validation_errors_name_line_and_field() -> None:
    text = (
        "- id: one\n"
        "  title: ok\n"
        "  match: {category: [oom]}\n"
        "  advice: [x]\n"
        "- id: two\n"
        "  title: bad regex\n"
        "  match:\n"
        "    log: '(unclosed'\n"
        "  advice: x\n"
        "  colour: red\n"
        "- title: no id\n"
        "  match: {exception: KeyError}\n"
    )
    with pytest.raises(InvalidInput) as err:
        parse_runbook(text, "team.yaml")
    message = err.value.message
    assert "team.yaml:3: entry 'one': match.category: unknown category 'oom'" in message
    assert "team.yaml:8: entry 'two': match.log: not a valid regular expression" in message
    assert "team.yaml:10: entry 'two': unknown field 'colour'" in message
    assert "team.yaml:11: entry 3: id is required" in message
    assert "advice is required" in message


def test_not_yaml_or_not_a_list() -> None:
    with pytest.raises(InvalidInput, match=r"team.yaml:\d+: not valid YAML"):
        parse_runbook("- id: a\n  title: [unclosed\n", "team.yaml")
    with pytest.raises(InvalidInput, match="expected a list of entries"):
        parse_runbook("just text", "team.yaml")
    assert parse_runbook("", "team.yaml") == []


def test_builtin_entries_for_the_ml_stacks_match_real_messages(tmp_path: Path) -> None:
    """Each ML-stack entry matches a real message of the corpus (as a log line, with its category)."""
    import yaml

    corpus = [
        e
        for part in ("dev", "heldout")
        for e in yaml.safe_load((Path(__file__).parent / "corpus" / f"{part}.yaml").read_text())["failures"]
    ]
    entries = load_runbook(tmp_path, tmp_path)
    wanted = {
        "nccl-collective-timeout",
        "rendezvous-unreachable",
        "hugging-face-hub-unreachable",
        "gated-model",
        "experiment-tracker-unreachable",
        "dataloader-worker-killed",
        "gpu-driver-mismatch",
        "labels-do-not-fit-the-objective",
    }
    hit: set[str] = set()
    for entry in corpus:
        matched = match_runbook(
            entries, findings=[(entry["expected"], 0.9)], exception=None, log_lines=entry["message"].splitlines()
        )
        hit |= {m["id"] for m in matched} & wanted
    assert hit == wanted
