"""A third-party feature, installed with pip, plugs into the CLI, the API and diagnosis.

`example_feature/` is a package of its own (its own pyproject, an entry point in the
``flightlog`` group). It is built and installed for real (``pip install --target``) into a
directory that the tests put on the path, so the shared environment stays as it is; the CLI
and the diagnosis run in subprocesses, the API through the app the server serves.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from flightlog.plugins import load_features
from flightlog.server.app import create_app
from flightlog.server.config import ServerConfig

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where pip installed the example feature (its package and its dist-info with the entry point)."""
    root = tmp_path_factory.mktemp("example-feature")
    source = shutil.copytree(HERE / "example_feature", root / "source")  # the build writes next to its sources
    target = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert list(target.glob("flightlog_example_feature-*.dist-info/entry_points.txt"))
    return target


def _env(home: Path, site: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    env["FLIGHTLOG_HOME"] = str(home)
    paths = [str(site)] if site else []
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _flightlog(home: Path, site: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flightlog", *args], env=_env(home, site), capture_output=True, text=True, timeout=120
    )


def test_the_feature_adds_a_command(installed: Path, tmp_path: Path) -> None:
    listing = _flightlog(tmp_path, installed, "--help")
    assert listing.returncode == 0, listing.stderr
    assert "example-hello" in listing.stdout
    assert "diagnose" in listing.stdout  # the built-in features are still there
    result = _flightlog(tmp_path, installed, "example-hello", "flightlog", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"hello": "flightlog", "feature": "example"}
    assert result.stderr == ""
    # without the package, the command is unknown (the table, not flightlog, brought it)
    missing = _flightlog(tmp_path, None, "example-hello")
    assert missing.returncode != 0
    assert "No such command 'example-hello'" in missing.stderr


def test_the_feature_adds_an_api_route(installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(installed))
    table = load_features()
    assert "example" in table.names
    app = create_app(ServerConfig.for_home(tmp_path), features=table)

    async def get(path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.get(path)

    try:
        hello = asyncio.run(get("/api/v1/example/hello?who=api"))
        assert hello.status_code == 200, hello.text
        assert hello.json() == {"hello": "api", "feature": "example"}
        spec = asyncio.run(get("/api/v1/openapi.json")).json()
        assert "get" in spec["paths"]["/api/v1/example/hello"]
        assert "/api/v1/runs/{run}/pipeline" in spec["paths"]  # a built-in feature's route, from the same table
    finally:
        app.close()


_RUN = """
import flightlog
run = flightlog.init(project="plug", name="tagged", tags={"example": "suspicious"})
run.log({"loss": 1.0}, step=0)
run.finish()
print(run.id)
"""


def test_the_feature_adds_a_diagnosis_analyzer(installed: Path, tmp_path: Path) -> None:
    made = subprocess.run(
        [sys.executable, "-c", _RUN], env=_env(tmp_path, None), capture_output=True, text=True, timeout=120
    )
    assert made.returncode == 0, made.stderr
    run_id = made.stdout.strip().splitlines()[-1]
    with_feature = _flightlog(tmp_path, installed, "diagnose", run_id, "--format", "json")
    assert with_feature.returncode == 0, with_feature.stderr
    found = {f["category"]: f for f in json.loads(with_feature.stdout)["findings"]}
    assert found["example_suspicious"]["confidence"] >= 0.5
    assert found["example_suspicious"]["summary"] == "the example feature finds this run suspicious"
    without = _flightlog(tmp_path, None, "diagnose", run_id, "--format", "json")
    assert without.returncode == 0, without.stderr
    assert "example_suspicious" not in {f["category"] for f in json.loads(without.stdout)["findings"]}


def test_a_broken_feature_is_reported_and_left_out(tmp_path: Path) -> None:
    site = tmp_path / "site"
    dist = site / "flightlog_broken-0.1.dist-info"  # what an installed package whose module is gone leaves
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: flightlog-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[flightlog]\nbroken = flightlog_broken_gone.feature\nraises = flightlog_raises\n"
    )
    # and a feature that loads but whose hook raises
    (site / "flightlog_raises.py").write_text(
        "from flightlog.plugins import hookimpl\n\n\n@hookimpl\ndef flightlog_cli_commands():\n"
        "    raise RuntimeError('this feature is broken')\n"
    )
    listing = _flightlog(tmp_path, site, "--help")
    assert listing.returncode == 0, listing.stderr
    assert "runs" in listing.stdout and "diagnose" in listing.stdout
    assert "flightlog: warning: the feature 'broken' (flightlog_broken_gone.feature) was left out" in listing.stderr
    assert "ModuleNotFoundError" in listing.stderr
    assert (
        "flightlog: warning: the feature 'raises' (flightlog_cli_commands) was left out: "
        "RuntimeError: this feature is broken"
    ) in listing.stderr
    # a core command never loads the table, so it is not even slowed by the broken package
    core = _flightlog(tmp_path, site, "runs", "ls", "--format", "json")
    assert core.returncode == 0, core.stderr
    assert core.stderr == ""
