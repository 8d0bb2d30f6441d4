"""A plain ``pip install flightlog`` (no extras) in its own virtual environment.

The package is built into a wheel from a copy of this checkout and installed, with exactly the
core dependencies pinned in requirements.lock (``--no-deps``, so nothing else comes along), into
a fresh venv that has neither Starlette nor pyarrow/pandas. Every command that does not need an
extra must work there; the ones that do must say which extra to install.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from flightlog.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _lock() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            pins[_canonical(name)] = version.strip()
    return pins


def core_pins() -> list[str]:
    """``name==version`` for the core dependencies and everything they need, from the lock.

    The dependency closure is read from the metadata of this (full) environment, extras off."""
    lock = _lock()
    todo = [Requirement(r).name for r in _pyproject()["project"]["dependencies"]]
    closure: set[str] = set()
    while todo:
        name = _canonical(todo.pop())
        if name in closure:
            continue
        closure.add(name)
        for text in importlib.metadata.requires(name) or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    unpinned = sorted(closure - lock.keys())
    assert not unpinned, f"core dependencies missing from requirements.lock: {unpinned}"
    return sorted(f"{name}=={lock[name]}" for name in closure)


@dataclass
class PlainInstall:
    bin: Path
    env: dict[str, str]
    cwd: Path

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), env=self.env, cwd=self.cwd, capture_output=True, text=True, timeout=timeout)

    def flightlog(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(str(self.bin / "flightlog"), *args)

    def ok(self, *args: str) -> str:
        proc = self.flightlog(*args)
        assert proc.returncode == 0, (
            f"flightlog {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
        return proc.stdout


def _pip(*args: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args], capture_output=True, text=True, timeout=400
    )
    assert proc.returncode == 0, f"pip {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlainInstall]:
    base = tmp_path_factory.mktemp("plain")
    # build from a copy, so the checkout gets no build/ or egg-info (the web UI is not needed)
    source = base / "source"
    for name in ("pyproject.toml", "README.md"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "static"))
    _pip("wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(base / "dist"), str(source))
    wheel = next((base / "dist").glob("flightlog-*.whl"))

    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    _pip("--python", str(python), "install", "-q", "--no-deps", *core_pins(), str(wheel))

    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLIGHTLOG_", "PYTHON", "VIRTUAL_ENV", "PIP_"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["FLIGHTLOG_HOME"] = str(base / "home")
    work = base / "work"
    work.mkdir()
    yield PlainInstall(venv / "bin", env, work)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_command_that_needs_no_extra_works_on_a_plain_install(plain: PlainInstall) -> None:
    # the environment really is plain: no extra's module can be imported, and flightlog is the wheel
    probe = plain.run(
        str(plain.bin / "python"),
        "-c",
        (
            "import importlib.util, flightlog, json; "
            f"print(json.dumps([flightlog.__file__, [m for m in {sorted(m for ms in EXTRAS.values() for m in ms)!r} "
            "if importlib.util.find_spec(m)]]))"
        ),
    )
    where, importable = json.loads(probe.stdout)
    assert importable == [] and "site-packages" in where, probe.stdout + probe.stderr

    assert "runs" in plain.ok("--help")
    assert json.loads(plain.ok("runs", "ls", "--format", "json")) == []

    sdk = plain.run(
        str(plain.bin / "python"),
        "-c",
        (
            "import flightlog\n"
            "run = flightlog.init(project='plain', name='sdk', params={'lr': 0.1})\n"
            "for i in range(3): run.log({'loss': 1 / (i + 1)}, step=i)\n"
            "run.finish()\n"
            "print(run.id)\n"
        ),
    )
    assert sdk.returncode == 0, sdk.stderr
    sdk_run = sdk.stdout.strip()

    runner = plain.flightlog(
        "run",
        "--project",
        "plain",
        "--",
        "python",
        "-c",
        ("import flightlog; flightlog.init().log({'acc': 0.5}, step=1); print('hello from the workload')"),
    )
    assert runner.returncode == 0, runner.stderr
    assert "hello from the workload" in runner.stdout

    runs = json.loads(plain.ok("runs", "ls", "--project", "plain", "--format", "json"))
    assert {r["status"] for r in runs} == {"succeeded"} and len(runs) == 2
    wrapped = next(r["id"] for r in runs if r["id"] != sdk_run)
    assert json.loads(plain.ok("metrics", wrapped, "--format", "json"))[0]["name"] == "acc"
    assert "hello from the workload" in plain.ok("logs", wrapped)
    assert sdk_run in plain.ok("runs", "show", sdk_run)
    report = json.loads(plain.ok("diagnose", wrapped, "--format", "json"))
    assert report["run"] == wrapped and report["kind"] == "none"
    assert json.loads(plain.ok("compare", wrapped, sdk_run, "--format", "json"))["run"] == wrapped
    assert "memory" in json.loads(plain.ok("rightsize", wrapped, "--format", "json"))
    assert json.loads(plain.ok("sync", "--format", "json"))["journals"] >= 0
    assert json.loads(plain.ok("version", "--format", "json"))["version"]
    assert json.loads(plain.ok("projects", "--format", "json"))[0]["name"] == "plain"
    assert json.loads(plain.ok("alerts", "rules", "ls", "--format", "json"))["rules"] == []
    assert json.loads(plain.ok("gc", "--older-than", "30d", "--dry-run", "--format", "json"))["dry_run"] is True
    assert json.loads(plain.ok("token", "ls", "--format", "json")) == []  # tokens live in the store
    # a manifest is files, sizes and hashes: no data extra needed
    (plain.cwd / "data").mkdir()
    (plain.cwd / "data" / "a.csv").write_text("a,b\n1,2\n")
    assert json.loads(plain.ok("data", "manifest", "data", "--format", "json"))["file_count"] == 1
    assert ".csv" in plain.ok("data", "manifest", "data")
    (plain.cwd / "data2").mkdir()
    (plain.cwd / "data2" / "a.csv").write_text("a,b\n1,3\n")
    assert json.loads(plain.ok("data", "diff", "data", "data2", "--format", "json"))["counts"]["changed"] == 1


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_commands_that_need_an_extra_say_which_to_install(plain: PlainInstall) -> None:
    (plain.cwd / "d.csv").write_text("a,b\n1,2\n")
    for args, extra in (
        (("ui",), "server"),
        (("ui", "--port", "0"), "server"),
        (("server",), "server"),
        (("data", "profile", "d.csv"), "data"),
    ):
        proc = plain.flightlog(*args)
        assert proc.returncode != 0, proc.stdout
        assert f"pip install 'flightlog[{extra}]'" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
    assert "pip install 'flightlog[server]'" in plain.ok("--help")  # `ui` stays listed, with what it needs


def test_extras_map_agrees_with_pyproject() -> None:
    declared = _pyproject()["project"]["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        assert sorted(modules) == sorted(_canonical(Requirement(r).name) for r in declared[extra]), extra
