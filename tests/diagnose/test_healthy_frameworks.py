"""No noise on healthy runs: small, healthy training jobs with the real frameworks (Lightning's
FlightlogLogger, the Hugging Face Trainer, Keras 3 on torch with its callback, XGBoost,
LightGBM, scikit-learn (``SGDClassifier.partial_fit`` epochs and a gradient-boosting fit with
its staged scores, logged with the SDK), plain PyTorch loops, numpy estimators, a flightlog
pipeline), each run as a real process under `flightlog run` and with the SDK or integration
alone, diagnosed without a baseline, with the automatic one and with its twin of the other
mode: no finding may reach 0.5.

The runs are made once for the module (``runs``), three at a time; each script trains for a
second or two. ``frameworks/`` holds the scripts; a framework that is not installed is left out
(every one of them is installed in the project's environment, see requirements.lock).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flightlog.client import Client

FRAMEWORKS = Path(__file__).parent / "frameworks"
PROJECT = "healthy"
#: script → the module it needs
SCRIPTS = {
    "lightning_logger.py": "lightning",
    "hf_trainer.py": "transformers",
    "keras_fit.py": "keras",
    "xgboost_train.py": "xgboost",
    "lightgbm_train.py": "lightgbm",
    "sklearn_sgd.py": "sklearn",
    "sklearn_boosting.py": "sklearn",
    "torch_loop.py": "torch",
    "torch_amp_style.py": "torch",
    "numpy_estimator.py": "numpy",
    "numpy_kmeans.py": "numpy",
    "numpy_sgd_logging.py": "numpy",
}
MODES = ("runner", "sdk")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.embedded_only(
        "diagnosis reads the same evidence over every transport; the runs are the expensive part"
    ),
]


@dataclass(frozen=True)
class Job:
    script: str
    mode: str

    @property
    def name(self) -> str:
        return f"{Path(self.script).stem}-{self.mode}"


@dataclass
class Made:
    home: Path
    runs: dict[str, str]  # job or pipeline-run name → run id
    twins: dict[str, str]  # run id → the run of the same work it is compared with
    outputs: dict[str, str]
    spawned: dict[str, float]  # job name → time.time() just before its process was started


def _available() -> list[Job]:
    return [Job(s, m) for s, module in SCRIPTS.items() if importlib.util.find_spec(module) is not None for m in MODES]


def _env(home: Path, name: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    env.update(
        FLIGHTLOG_HOME=str(home),
        FLIGHTLOG_PROJECT=PROJECT,
        PYTHONUNBUFFERED="1",
        WORKLOAD_NAME=name,
        TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _flightlog() -> str:
    return str(Path(sys.executable).with_name("flightlog"))


def _execute(job: Job, home: Path, cwd: Path) -> tuple[str, str]:
    program = [sys.executable, str(FRAMEWORKS / job.script)]
    command = (
        program
        if job.mode == "sdk"
        else [_flightlog(), "run", "--project", PROJECT, "--name", job.name, "--", *program]
    )
    _SPAWNED[job.name] = time.time()
    proc = subprocess.run(command, env=_env(home, job.name), cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{job.name} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return job.name, proc.stdout + proc.stderr


_SPAWNED: dict[str, float] = {}


def _pipeline(home: Path, root: Path, label: str) -> tuple[str, str]:
    work = root / f"pipeline-{label}"
    shutil.copytree(FRAMEWORKS / "pipeline", work)
    proc = subprocess.run(
        [_flightlog(), "pipeline", "run", str(work / "pipeline.yaml"), "--project", PROJECT, "--no-cache"],
        env=_env(home, label),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, (
        f"pipeline {label} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    )
    return label, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    root = tmp_path_factory.mktemp("healthy")
    home = root / "home"
    jobs = _available()
    with ThreadPoolExecutor(3) as pool:
        done = list(pool.map(lambda j: _execute(j, home, root), jobs))
    outputs = dict(done)
    for label in ("first", "second"):  # twice, so that each step has a twin
        outputs.update([_pipeline(home, root, label)])
    with Client(home) as c:
        by_name = {r.name: r for r in c.runs(project=PROJECT, limit=500)}
        runs = {j.name: by_name[j.name].id for j in jobs}
        twins = {}
        for script in {j.script for j in jobs}:
            a, b = (runs[Job(script, m).name] for m in MODES)
            twins[a], twins[b] = b, a
        pipelines = sorted(
            (r for r in c.runs(project=PROJECT, limit=500) if r.parent_id is None and "pipeline" in r.tags),
            key=lambda r: r.created or 0,
        )
        assert len(pipelines) == 2, [r.name for r in pipelines]
        steps = [
            {r.name: r.id for r in c.runs(project=PROJECT, filter=f"parent = '{p.id}'", limit=50)} for p in pipelines
        ]
        for i, p in enumerate(pipelines):
            runs[f"pipeline-{i + 1}"] = p.id
            for step, rid in steps[i].items():
                runs[f"pipeline-{i + 1}/{step}"] = rid
        for step, rid in steps[1].items():
            if step in steps[0]:
                twins[rid] = steps[0][step]
    return Made(home, runs, twins, outputs, dict(_SPAWNED))


def test_the_set_has_twenty_healthy_runs_or_more(made: Made) -> None:
    assert len(made.runs) >= 20, sorted(made.runs)
    with Client(made.home) as c:
        statuses = {name: c.run(rid).status for name, rid in made.runs.items()}
    assert set(statuses.values()) == {"succeeded"}, statuses


def _leads(report: dict[str, Any]) -> list[str]:
    return [
        f"{f['category']} {f['confidence']:.2f}: {f['summary']}" for f in report["findings"] if f["confidence"] >= 0.5
    ]


@pytest.mark.parametrize("how", ["alone", "automatic", "twin"])
def test_no_finding_at_half_on_a_healthy_run(made: Made, how: str) -> None:
    problems = {}
    with Client(made.home) as c:
        for name, rid in sorted(made.runs.items()):
            if how == "twin" and rid not in made.twins:
                continue
            if how == "alone":
                report = c.diagnose(rid, auto_baseline=False)
            elif how == "automatic":
                report = c.diagnose(rid)
            else:
                report = c.diagnose(rid, baseline=made.twins[rid])
            leads = _leads(report)
            if leads:
                problems[name] = leads
    assert not problems, "\n".join(f"{name}: {'; '.join(leads)}" for name, leads in problems.items())


def test_startup_is_measured_from_the_process_start_on_the_runs_clock(made: Made) -> None:
    """The process start a run records is on the clock of its own stamps: never before the
    process was spawned (psutil's create_time, from a boot time in whole seconds, read up to a
    second early), never after the run was created; Lightning's first batch is training, not
    a start-up stage."""
    with Client(made.home) as c:
        for name, spawned in made.spawned.items():
            info = c.run(made.runs[name])
            start = info.timeline["process_start"]
            # with the SDK alone the run is created after the imports; under `flightlog run` before the workload
            latest = (info.created or 0) + 0.01 if name.endswith("-sdk") else (info.ended or 0)
            assert spawned - 0.05 <= start <= latest, (name, spawned, start, info.created)
            if name.startswith("lightning"):
                report = c.diagnose(info.id, auto_baseline=False)
                for f in report["findings"]:
                    text = " ".join([f["summary"], *f["next_steps"], *(e["detail"] for e in f["evidence"])])
                    assert "'train_step'" not in text or f["category"] != "slow_startup", f
                    assert all(e["at"] is None or e["at"] >= _iso(start) for e in f["evidence"]), f


def _iso(t: float) -> str:
    from flightlog.timefmt import iso

    return str(iso(t))
