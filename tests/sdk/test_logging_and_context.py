"""The logging handler (stdlib and structlog), stage tagging, and the runtime context."""

from __future__ import annotations

import io
import itertools
import json
import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import flightlog
from tests.helpers import child_env, run_script


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    """A logger of this test alone: its handlers go with it (loggers live as long as the process,
    and a name made from a reused ``id()`` handed one test the handler of another)."""
    log = logging.getLogger(f"test.{next(_LOGGERS)}")
    log.setLevel(logging.DEBUG)
    log.propagate = False
    yield log
    for handler in list(log.handlers):
        log.removeHandler(handler)


_LOGGERS = itertools.count(1)


def test_handler_writes_json_lines_and_records_events_with_stage(home: Path, logger: logging.Logger) -> None:
    out = io.StringIO()
    run = flightlog.init(project="p", resources=False)
    logger.addHandler(flightlog.logging_handler(stream=out))
    with run.stage("data_loading"):
        logger.warning("slow shard %s", "s3://bucket/7", extra={"shard": 7, "latency_s": 2.5})
    try:
        raise ValueError("bad row")
    except ValueError:
        logger.exception("parse failed")
    run.finish()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    first = lines[0]
    assert first["level"] == "warning" and first["component"] == logger.name
    assert first["message"] == "slow shard s3://bucket/7" and first["shard"] == 7 and first["latency_s"] == 2.5
    assert first["run_id"] == run.id and first["project"] == "p" and first["attempt"] == 1
    assert first["stage"] == "data_loading" and first["timestamp"].endswith("Z")
    assert "ValueError: bad row" in lines[1]["exception"]
    events = flightlog.Client().logs(run.id)
    assert [e.level_name for e in events] == ["warning", "error"]
    assert events[0].stage == "data_loading" and events[1].stage is None
    assert events[0].fields == {"shard": 7, "latency_s": 2.5} and events[0].stream == "sdk"
    assert "ValueError: bad row" in (events[1].fields or {})["exception"]


def test_handler_redacts_secrets_before_storage(home: Path, logger: logging.Logger) -> None:
    run = flightlog.init(project="p", resources=False)
    logger.addHandler(flightlog.logging_handler(stream=io.StringIO()))
    logger.info("using key AKIAIOSFODNN7EXAMPLE", extra={"password": "hunter2hunter2"})
    run.finish()
    event = flightlog.Client().logs(run.id)[0]
    assert "AKIAIOSFODNN7EXAMPLE" not in event.message
    assert "hunter2hunter2" not in json.dumps(event.fields)


def test_structlog_standard_library_integration(home: Path, logger: logging.Logger) -> None:
    structlog = pytest.importorskip("structlog")
    out = io.StringIO()
    handler = flightlog.logging_handler(stream=out)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(processor=structlog.processors.JSONRenderer()))
    logger.addHandler(handler)
    structlog.configure(
        processors=[structlog.stdlib.add_log_level, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    try:
        run = flightlog.init(project="p", resources=False)
        structlog.get_logger(logger.name).bind(epoch=3).info("epoch done", val_acc=0.91)
        run.finish()
    finally:
        structlog.reset_defaults()
    line = json.loads(out.getvalue().splitlines()[0])
    assert line["message"] == "epoch done" and line["epoch"] == 3 and line["val_acc"] == 0.91
    event = flightlog.Client().logs(run.id)[0]
    assert event.message == "epoch done" and event.fields == {"epoch": 3, "val_acc": 0.91}


def test_handler_only_prints_when_captured_by_the_runner(
    home: Path, logger: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLIGHTLOG_CAPTURED", "1")
    out = io.StringIO()
    run = flightlog.init(project="p", resources=False)
    logger.addHandler(flightlog.logging_handler(stream=out))
    logger.info("once")
    run.finish()
    assert json.loads(out.getvalue())["message"] == "once"
    assert flightlog.Client().logs(run.id) == []


def test_runtime_context_has_git_packages_and_allowed_env_only(home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "train.py").write_text("print('hi')\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=repo, check=True)
    (repo / "train.py").write_text("print('changed')\n")
    env = child_env(
        home,
        CUDA_VISIBLE_DEVICES="0,1",
        AWS_SECRET_ACCESS_KEY="x" * 40,
        MY_API_TOKEN="t" * 20,
        FLIGHTLOG_ENV_ALLOW="MY_*,TEAM_NAME",
        TEAM_NAME="vision",
    )
    proc = run_script(
        home,
        """
        import flightlog
        run = flightlog.init(project="p", resources=False)
        run.finish()
        print(run.id)
        """,
        env=env,
        cwd=repo,
    )
    ctx = flightlog.Client().context(proc.stdout.strip())
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    assert ctx["git"]["commit"] == commit and ctx["git"]["dirty"] is True and ctx["git"]["diff_sha256"]
    assert ctx["packages"]["numpy"] and ctx["python"].count(".") == 2 and ctx["cwd"] == str(repo)
    assert ctx["env"]["CUDA_VISIBLE_DEVICES"] == "0,1" and ctx["env"]["TEAM_NAME"] == "vision"
    assert "AWS_SECRET_ACCESS_KEY" not in ctx["env"] and "MY_API_TOKEN" not in ctx["env"]
    assert "x" * 40 not in json.dumps(ctx) and "t" * 20 not in json.dumps(ctx)


def test_the_runs_of_one_process_share_its_context_until_a_part_of_it_changes(home: Path, tmp_path: Path) -> None:
    """A sweep's runs share one context (collected, redacted and encoded once a process); a
    run started after the command line, the working directory or the allowed environment
    changed records the new one, redacted as the first was."""
    (tmp_path / "elsewhere").mkdir()
    proc = run_script(
        home,
        f"""
        import os, sys
        import flightlog

        def one():
            run = flightlog.init(project="p", resources=False)
            run.finish()
            print(run.id)

        one()
        one()
        os.environ["CUDA_VISIBLE_DEVICES"] = "3"
        one()
        os.chdir({str(tmp_path / "elsewhere")!r})
        one()
        sys.argv[1:] = ["--api-token", "s3cr3t-value-{"x" * 12}"]
        one()
        os.environ["OMP_NUM_THREADS"] = "4"
        one()
        """,
        env=child_env(home, CUDA_VISIBLE_DEVICES="0,1"),
        cwd=tmp_path,
    )
    client = flightlog.Client()
    contexts = [client.context(run_id) for run_id in proc.stdout.split()]
    assert len(contexts) == 6
    assert contexts[0] == contexts[1] and contexts[0]["env"]["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert contexts[2]["env"]["CUDA_VISIBLE_DEVICES"] == "3" and contexts[2]["cwd"] == str(tmp_path)
    assert contexts[3]["cwd"] == str(tmp_path / "elsewhere") and contexts[3]["command"] == contexts[2]["command"]
    assert contexts[4]["command"][1] == "--api-token" and "s3cr3t" not in json.dumps(contexts[4])
    assert contexts[5]["env"]["OMP_NUM_THREADS"] == "4" and contexts[5]["command"] == contexts[4]["command"]
    assert all(ctx["packages"] == contexts[0]["packages"] and ctx["pid"] == contexts[0]["pid"] for ctx in contexts)


def test_the_package_list_is_cached_in_home_until_a_package_is_installed(home: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    env = child_env(home, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    code = """
        import flightlog
        run = flightlog.init(project="p", resources=False)
        run.finish()
        print(run.id)
        """

    def packages() -> dict[str, str]:
        run_id = run_script(home, code, env=env).stdout.strip()
        return dict(flightlog.Client().context(run_id)["packages"])

    first = packages()
    assert first["numpy"]
    [cache] = (home / "cache").glob("packages-*.json")
    # the next process reads the cached list rather than the installed metadata
    cache.write_text(json.dumps({**first, "only-in-the-cache": "9.9"}))
    assert packages()["only-in-the-cache"] == "9.9"
    # installing a package (a new dist-info on the import path) is seen at once
    dist = site / "freshly_installed-1.2.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: freshly-installed\nVersion: 1.2\n")
    after = packages()
    assert after["freshly-installed"] == "1.2" and "only-in-the-cache" not in after


def test_many_runs_in_one_process_share_one_shipper_and_stay_cheap(home: Path) -> None:
    import threading

    before = {t.name for t in threading.enumerate()}
    for i in range(50):
        run = flightlog.init(project="many", name=f"r{i}", params={"i": i})
        run.log({"x": float(i)})
        run.finish()
    names = [t.name for t in threading.enumerate() if t.name not in before]
    assert names.count("flightlog-shipper") <= 1
    assert len(flightlog.Client().runs(project="many", limit=100)) == 50
