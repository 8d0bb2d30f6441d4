"""Comparing a run with its baseline, on real runs recorded by the SDK in child processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from flightlog.client import Client
from flightlog.diagnose.compare import package_changes
from tests.helpers import run_script

TRAIN = """
import sys, time
import flightlog

lr, load_s, tag = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
run = flightlog.init(project="vision", name="resnet", params={"lr": lr, "batch": 32}, tags={"v": tag})
run.log_input("data")
for step in range(12):
    with run.stage("data_loading"):
        time.sleep(load_s)
    with run.stage("train_step"):
        time.sleep(0.002)
    run.log({"loss": 1.0 / (step + 1) * (2 if lr > 0.5 else 1)}, step=step)
run.finish()
print(run.id)
"""


def _train(home: Path, lr: float, load_s: float, tag: str) -> str:
    script = home.parent / "train.py"
    script.write_text(TRAIN)
    import subprocess
    import sys

    from tests.helpers import child_env

    proc = subprocess.run(
        [sys.executable, str(script), str(lr), str(load_s), tag],
        env=child_env(home),
        cwd=home.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout.strip().splitlines()[-1]


def _data(home: Path, files: dict[str, str]) -> None:
    d = home.parent / "data"
    d.mkdir(exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)


def test_compare_and_automatic_baseline(home: Path) -> None:
    _data(home, {"a.csv": "x\n1\n", "b.csv": "x\n2\n", "c.csv": "x\n3\n"})
    base = _train(home, 0.1, 0.002, "good")
    _data(home, {"b.csv": "x\n2\n2\n", "d.csv": "x\n4\n"})
    run = _train(home, 1.0, 0.25, "bad")
    with Client(home) as c:
        cmp = c.compare(run, base)
        assert cmp["run"] == run and cmp["baseline"] == base and cmp["chosen"] == "given"
        assert cmp["params"]["changed"] == [{"name": "lr", "run": 1.0, "baseline": 0.1}]
        (inputs,) = cmp["inputs"]
        assert inputs["status"] == "changed"
        assert inputs["file_count"] == {"run": 4, "baseline": 3, "delta": 1, "ratio": 4 / 3}
        assert inputs["counts"]["added"] == 1 and inputs["counts"]["changed"] == 1
        assert inputs["added_files"] == ["d.csv"] and inputs["changed_files"] == ["b.csv"]
        stages = {s["name"]: s for s in cmp["stages"]}
        assert stages["data_loading"]["ratio"] > 5
        assert cmp["stages"][0]["name"] == "data_loading"  # the stage that grew most comes first
        loss = next(m for m in cmp["metrics"] if m["name"] == "loss")
        assert loss["run"] == 2 * loss["baseline"] and loss["relative"] == 1.0
        assert cmp["packages"] == {"added": [], "removed": [], "changed": []}
        assert cmp["differences"]["params"] == 1 and cmp["differences"]["inputs"] == 1

        report = c.diagnose(run)
        assert report["baseline"]["baseline"] == base
        assert report["baseline"]["chosen"] == "automatic"
        assert "most recent successful run of project 'vision' and name 'resnet'" in report["baseline"]["reason"]
        top = report["findings"][0]
        assert top["category"] == "data_loader_bottleneck"
        assert any(e["source"] == "baseline" and "data_loading" in e["detail"] for e in top["evidence"])

        alone = c.diagnose(run, auto_baseline=False)
        assert alone["baseline"] is None
        assert top["confidence"] > alone["findings"][0]["confidence"]  # the baseline's evidence adds to it


def test_package_changes() -> None:
    got = package_changes(
        {"NumPy": "2.1.0", "pandas": "2.2.0", "torch": "2.4"}, {"numpy": "1.26.4", "pandas": "2.2.0", "scipy": "1.13"}
    )
    assert got == {
        "added": [{"name": "torch", "version": "2.4"}],
        "removed": [{"name": "scipy", "version": "1.13"}],
        "changed": [{"name": "numpy", "run": "2.1.0", "baseline": "1.26.4"}],
    }


def test_same_run_is_not_its_own_baseline(home: Path) -> None:
    run_script(home, "import flightlog; r = flightlog.init(project='p', name='n'); r.finish()")
    from flightlog.errors import InvalidInput

    with Client(home) as c:
        rid = c.runs()[0].id
        with pytest.raises(InvalidInput, match="its own baseline"):
            c.diagnose(rid, baseline=rid)


STAGES = """
import sys, time
import flightlog

run = flightlog.init()
for step in range(6):
    with run.stage("data_loading"):
        time.sleep(float(sys.argv[2]))
    run.log({"loss": 1.0 / (step + 1)}, step=step)
"""


@pytest.mark.embedded_only(
    "the comparison is one document over either transport (test_compare_and_automatic_baseline runs both)"
)
def test_compare_prints_every_difference_it_counts(home: Path) -> None:
    import json
    import re
    import shlex
    import sys

    from tests.helpers import cli

    script = home.parent / "train.py"
    script.write_text(STAGES)

    def run(*args: str) -> str:
        proc = cli(home, "run", "--project", "vision", "--name", "resnet", "--", sys.executable, str(script), *args)
        return re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]

    base = run("--lr=0.1", "0.12", "--password=hunter2")
    faster = run("--lr=1.0", "0.02")  # the stage got faster: a difference too
    cmp = json.loads(cli(home, "compare", faster, base, "--format", "json").stdout)
    assert cmp["command"]["changed"] is True
    # the stored command is a shell rendering of the argv with the secret replaced: it splits
    # back into the same arguments (quoting where the shell needs it is fine)
    assert shlex.split(cmp["command"]["baseline"])[-4:] == [
        str(script),
        "--lr=0.1",
        "0.12",
        "--password=[REDACTED:secret]",
    ]
    assert shlex.split(cmp["command"]["run"])[-3:] == [str(script), "--lr=1.0", "0.02"]
    assert cmp["differences"]["command"] == 1 and cmp["differences"]["stages"] >= 1
    text = cli(home, "compare", faster, base).stdout
    assert "command: " in text and "--lr=1.0 0.02" in text and "--lr=0.1 0.12" in text
    assert "--password=[REDACTED:secret]" in text
    assert "hunter2" not in text and "hunter2" not in json.dumps(cmp)
    assert re.search(r"stage data_loading: [\d.]+m?s → [\d.]+m?s \(×0\.", text), text
    from flightlog.diagnose.differences import difference_lines

    lines = difference_lines(cmp)
    for section, count in cmp["differences"].items():
        printed = [line for s, line in lines if s == section]
        assert len(printed) == count, (section, printed)
        for line in printed:
            assert line.replace("\n", " ")[:60] in " ".join(text.split()), (section, line)


NAN = """
import sys
import flightlog

bad = sys.argv[1] == "bad"
run = flightlog.init(project="vision", name="resnet", params={"lr": 5.0 if bad else 0.1})
for step in range(10):
    run.log({"a_loss": float("nan") if bad and step >= 6 else 1.0 / (step + 1), "zacc": 0.5 + 0.01 * step}, step=step)
run.finish()
print(run.id)
"""


def test_a_metric_that_went_nan_is_the_headline_of_compare(home: Path) -> None:
    import json

    from tests.helpers import cli

    base = run_script(home, NAN.replace("sys.argv[1]", "'good'")).stdout.split()[-1]
    run = run_script(home, NAN.replace("sys.argv[1]", "'bad'")).stdout.split()[-1]
    doc = json.loads(cli(home, "compare", run, base, "--format", "json").stdout)
    first = doc["metrics"][0]
    assert first["name"] == "a_loss" and first["became_nonfinite"] is True
    assert first["run"] == "NaN" and first["baseline"] == 0.1
    assert first["nonfinite"] == {"run": {"value": "NaN", "step": 6, "points": 4}, "baseline": None}
    assert doc["nonfinite_metrics"] == ["a_loss"]
    assert doc["differences"]["metrics"] == 1
    text = cli(home, "compare", run, base).stdout
    lines = [line.strip() for line in text.splitlines()]
    assert lines[2] == "metric a_loss became NaN at step 6: 0.1 in the baseline → NaN (4 non-finite point(s))", text
