"""Forty failing runs of four real causes, with ids, paths and numbers that vary, among runs
that succeeded: triage finds exactly four groups, each with its onset (the data changed)."""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import flightlog
from flightlog.client import Client
from flightlog.triage.report import triage_report

QUIET: dict[str, Any] = {"quiet": True, "resources": False, "console": False}


def load_shard(root: Path, i: int) -> None:
    with open(root / f"missing-{uuid.uuid4()}" / f"shard-{i:05d}.csv"):
        pass


def allocate(rng: random.Random) -> None:
    gib = rng.uniform(0.5, 40.0)
    raise RuntimeError(
        f"CUDA out of memory. Tried to allocate {gib:.2f} GiB (GPU {rng.randrange(8)}; 79.35 GiB total capacity; "
        f"{rng.uniform(1, 70):.2f} GiB already allocated; {rng.randrange(10, 900)} MiB free)"
    )


def lookup_sample(rng: random.Random) -> None:
    samples: dict[str, int] = {}
    samples[f"sample_{rng.randrange(10**6)}"] += 1


def fetch_features(rng: random.Random) -> None:
    raise ConnectionRefusedError(f"[Errno 111] Connection refused: 127.0.0.1:{rng.randrange(1024, 65535)}")


def _run(data: Path, fail: Any = None) -> str:
    run = flightlog.init(project="vision", name="train", **QUIET)
    run.log_input(data)
    try:
        if fail is not None:
            fail()
    except Exception as exc:
        run.fail(exc)
    else:
        run.finish()
    return run.id


def test_forty_failures_of_four_causes_make_four_groups_with_their_onset(home: Path, tmp_path: Path) -> None:
    rng = random.Random(7)
    data = tmp_path / "data.csv"
    data.write_text("x\n1\n")
    good = [_run(data) for _ in range(3)]
    data.write_text("x\n1\n2\n")  # the data changed: every cause below began after this
    causes = [
        lambda: load_shard(tmp_path, rng.randrange(10**5)),
        lambda: allocate(rng),
        lambda: lookup_sample(rng),
        lambda: fetch_features(rng),
    ]
    failed: dict[int, list[str]] = {i: [] for i in range(4)}
    order = [i % 4 for i in range(40)]
    rng.shuffle(order)
    for n, cause in enumerate(order):
        failed[cause].append(_run(data, causes[cause]))
        if n % 10 == 9:
            _run(data)  # noise: runs that succeeded in between
    with Client() as client:
        report = triage_report(client, project="vision")

    assert report["failures"] == 40
    groups = report["groups"]
    assert len(groups) == 4, [g["signature"] for g in groups]
    by_category = {g["category"]: g for g in groups}
    assert set(by_category) == {"missing_file", "oom_killed", "data_error", "service_unavailable"}
    expected = {
        "missing_file": (failed[0], "FileNotFoundError", "test_groups.py:load_shard"),
        "oom_killed": (failed[1], "RuntimeError", "test_groups.py:allocate"),
        "data_error": (failed[2], "KeyError", "test_groups.py:lookup_sample"),
        "service_unavailable": (failed[3], "ConnectionRefusedError", "test_groups.py:fetch_features"),
    }
    for category, (ids, exception, frame) in expected.items():
        g = by_category[category]
        assert g["count"] == 10
        assert g["runs"] == list(reversed(ids))  # newest first
        assert g["parts"]["exception"] == exception
        assert g["parts"]["frame"] == frame
        assert sum(g["per_day"]) == 10
        assert g["first_seen"] <= g["last_seen"]
        # the onset: the last run that succeeded before the group's first failure read other data
        onset = g["onset"]
        assert onset["first_bad"] == ids[0]
        assert onset["last_good"] is not None and onset["last_good"] not in ids
        assert [c["kind"] for c in onset["changes"]] == ["data"], onset
        assert onset["changes"][0]["name"] == "data.csv"
    # the very first cause's last good run is the last of the three before the data changed
    first_cause = min(groups, key=lambda g: g["first_seen"])
    assert first_cause["onset"]["last_good"] == good[-1]
    # masked: no path, no number, no port of one run is in a signature
    oom = by_category["oom_killed"]["signature"]
    assert "GiB" in oom and "79.35" not in oom and "<n>" in oom
    assert "127.0.0.1" not in by_category["service_unavailable"]["signature"]
    assert "sample_" not in by_category["data_error"]["signature"]
    assert str(tmp_path) not in by_category["missing_file"]["signature"]
    # the example is the newest run's own message, as it was stored
    assert by_category["data_error"]["example"].startswith("KeyError: 'sample_")


def test_a_project_without_failures_says_so(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("x\n")
    _run(data)
    run = flightlog.init(project="vision", name="stopped", **QUIET)
    run.finish("stopped", end_reason="signal", signal=2)  # stopped on purpose: not a failure
    with Client() as client:
        report = triage_report(client, project="vision")
    assert report["failures"] == 0 and report["groups"] == []
