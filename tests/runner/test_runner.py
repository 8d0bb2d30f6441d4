"""`flightlog run` around real child processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import flightlog
from tests.helpers import child_env, cli, cli_json

PY = sys.executable


def frun(
    home: Path,
    *args: str,
    check: bool = False,
    timeout: float = 120,
    env: dict[str, str] | None = None,
    process: bool = True,
) -> subprocess.CompletedProcess[str]:
    """`flightlog run --project t ARGS`: a real process, unless ``process=False`` for a call that
    must stop at its arguments, before any workload or run (``tests/inprocess.py``)."""
    return cli(home, "run", "--project", "t", *args, check=check, timeout=timeout, env=env, process=process)


def last_run(home: Path) -> flightlog.models.RunInfo:  # type: ignore[name-defined]
    client = flightlog.Client(home=home)
    return client.runs(project="t", limit=1)[0]


def script(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return str(path)


def test_output_passes_through_byte_for_byte_on_its_own_stream(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "out.py",
        """
        import sys
        for i in range(2000):
            sys.stdout.write(f"line {i} loss=0.{i % 997} ünïcødé ✓\\n")
            if i % 100 == 0:
                sys.stderr.write(f"err {i}\\n")
        sys.stdout.write("progress 10%\\rprogress 50%\\rprogress 100%\\n")
        sys.stdout.write("no newline at the end")
        """,
    )
    direct = subprocess.run([PY, code], capture_output=True)
    proc = subprocess.run(
        [str(Path(PY).with_name("flightlog")), "run", "--project", "t", "--", PY, code],
        env=child_env(home),
        capture_output=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0
    assert proc.stdout == direct.stdout
    ours = [line for line in proc.stderr.splitlines() if line.startswith(b"flightlog: ")]
    theirs = b"".join(line + b"\n" for line in proc.stderr.splitlines() if not line.startswith(b"flightlog: "))
    assert theirs == direct.stderr
    assert ours[0].startswith(b"flightlog: run ") and ours[0].endswith(b" started")
    assert b"succeeded" in ours[-1]
    info = last_run(home)
    client = flightlog.Client(home=home)
    events = client.logs(info.id, stream="stdout")
    assert len(events) == 2002
    assert events[2000].message == "progress 100%"  # \r refreshes collapsed to the last state
    assert events[-1].message == "no newline at the end"
    assert len(client.logs(info.id, stream="stderr")) == 20
    assert info.counters["log_lines"] >= 2022


def test_traceback_is_one_event_and_failure_is_summarized(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "fail.py",
        """
        import logging
        logging.basicConfig(level=logging.INFO)
        logging.warning("about to load")
        try:
            {}["x"]
        except KeyError:
            logging.exception("handled, going on")
        def load(path):
            with open(path) as f:
                return f.read()
        print("after the handled one")
        load("/no/such/train.csv")
        """,
    )
    proc = frun(home, "--", PY, code)
    assert proc.returncode == 1
    info = last_run(home)
    assert info.status == "failed" and info.end_reason == "exit" and info.exit_code == 1
    failure = info.failure or {}
    assert failure["exception"] == "FileNotFoundError" and "/no/such/train.csv" in failure["message"]
    assert failure["frames"][-1]["function"] == "load"
    assert failure["category"] == "missing_file"
    assert failure["workload"]["command"] == [PY, code] and "packages" in failure["workload"]
    assert any("after the handled one" in line for line in failure["last_lines"])
    errors = flightlog.Client(home=home).logs(info.id, level="error")
    tracebacks = [e for e in errors if e.message.startswith("Traceback")]
    # the handled KeyError (logged with logging.exception) and the fatal one: each whole, each one event
    assert len(tracebacks) == 2 and "KeyError" in tracebacks[0].message
    assert "FileNotFoundError" in tracebacks[1].message and tracebacks[1].message.count("\n") >= 4
    assert f"run {info.id} failed (exit code 1, looks like missing_file) in " in proc.stderr


def test_a_failure_without_a_clear_cause_is_said_as_a_hint(home: Path, tmp_path: Path) -> None:
    """An exit status and nothing else to read: the runner's line names no cause it is unsure of."""
    code = script(tmp_path, "quits.py", 'import sys\nprint("working", flush=True)\nsys.exit(3)\n')
    proc = frun(home, "--", PY, code)
    assert proc.returncode == 3
    info = last_run(home)
    assert "looks like" not in proc.stderr
    assert f"failed (exit code 3, no clear cause, a hint: code_error; flightlog diagnose {info.id[:12]})" in proc.stderr


def test_secrets_are_redacted_in_storage_not_in_passthrough(home: Path, tmp_path: Path) -> None:
    secrets_text = {
        "aws": "AKIAIOSFODNN7EXAMPLE",
        "github": "ghp_" + "a" * 36,
        "url": "postgresql://admin:s3cr3tpass@db.internal:5432/prod",
        "env": "value-of-my-env-token-123",
    }
    code = script(
        tmp_path,
        "leak.py",
        """
        import os
        print("key AKIAIOSFODNN7EXAMPLE in use")
        print("token ghp_" + "a" * 36)
        print("connecting to postgresql://admin:s3cr3tpass@db.internal:5432/prod")
        print("env", os.environ["MY_SERVICE_TOKEN"])
        print("commit 4f1c2a7e9b3d5f6a8c0e2b4d6f8a0c2e4b6d8f0a uuid 123e4567-e89b-12d3-a456-426614174000")
        print("custom ACME-1234-SECRET")
        """,
    )
    env = child_env(home, MY_SERVICE_TOKEN=secrets_text["env"])
    proc = cli(home, "run", "--project", "t", "--redact", r"ACME-\d+-SECRET", "--", PY, code, env=env)
    for value in secrets_text.values():
        assert value in proc.stdout  # the terminal sees the workload's own output
    stored = "\n".join(e.message for e in flightlog.Client(home=home).logs(last_run(home).id))
    for value in (*secrets_text.values(), "s3cr3tpass", "ACME-1234-SECRET"):
        assert value not in stored
    assert "4f1c2a7e9b3d5f6a8c0e2b4d6f8a0c2e4b6d8f0a" in stored and "123e4567-e89b-12d3-a456-426614174000" in stored
    assert "REDACTED" in stored


def test_rate_limit_counts_drops(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "chatty.py",
        """
        for i in range(20000):
            print(f"line {i}")
        """,
    )
    proc = frun(home, "--max-log-rate", "100", "--", PY, code)
    assert proc.returncode == 0 and proc.stdout.count("\n") == 20000  # passthrough is never limited
    info = last_run(home)
    stored = flightlog.Client(home=home).logs(info.id, stream="stdout")
    dropped = info.counters["dropped_lines"]
    assert dropped > 15000 and len(stored) + dropped == 20000
    summaries = flightlog.Client(home=home).logs(info.id, component="flightlog")
    assert summaries and "dropped" in summaries[0].message


def test_timeout_sends_sigterm_then_records_timeout(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "slow.py",
        """
        import time
        print("starting", flush=True)
        time.sleep(600)
        print("finished", flush=True)
        """,
    )
    proc = frun(home, "--timeout", "1s", "--", PY, code)
    assert proc.returncode == 124 and "timeout after 1.0s" in proc.stderr
    assert "starting" in proc.stdout and "finished" not in proc.stdout, "cut at its timeout, not waited out"
    info = last_run(home)
    assert info.status == "failed" and info.end_reason == "timeout" and info.exit_code == 124


def test_timeout_escalates_to_sigkill_after_grace(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "stubborn.py",
        """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ignoring SIGTERM", flush=True)
        time.sleep(60)
        """,
    )
    proc = frun(home, "--timeout", "1s", "--kill-grace", "1s", "--", PY, code)
    assert proc.returncode == 124
    assert last_run(home).signal == signal.SIGKILL


def test_sigterm_to_the_runner_is_forwarded(home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "got-term"
    code = script(
        tmp_path,
        "graceful.py",
        f"""
        import signal, sys, time
        def bye(signum, frame):
            open({str(marker)!r}, "w").write("yes")
            print("shutting down cleanly", flush=True)
            sys.exit(3)
        signal.signal(signal.SIGTERM, bye)
        print("ready", flush=True)
        time.sleep(60)
        """,
    )
    with subprocess.Popen(
        [str(Path(PY).with_name("flightlog")), "run", "--project", "t", "--", PY, code],
        env=child_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert marker.read_text() == "yes" and "shutting down cleanly" in out
    assert proc.returncode == 3
    info = last_run(home)
    assert info.exit_code == 3 and info.status == "failed"


def test_sigterm_kills_a_workload_that_does_not_handle_it(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "plain.py",
        """
        import time
        print("ready", flush=True)
        time.sleep(60)
        """,
    )
    with subprocess.Popen(
        [str(Path(PY).with_name("flightlog")), "run", "--project", "t", "--", PY, code],
        env=child_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    ) as proc:
        assert proc.stdout is not None
        proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 143
    info = last_run(home)
    assert info.status == "killed" and info.end_reason == "signal" and info.signal == signal.SIGTERM


def test_sdk_inside_the_workload_lands_on_the_same_run(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "train.py",
        """
        import logging, os, flightlog
        run = flightlog.init(project="ignored-when-attached")
        log = logging.getLogger("trainer")
        log.addHandler(flightlog.logging_handler())
        log.setLevel(logging.INFO)
        for i in range(5):
            with run.stage("train_step"):
                run.log({"loss": 1.0 / (i + 1)})
            log.info("step %d", i, extra={"step": i})
        print("attempt", os.environ["FLIGHTLOG_ATTEMPT"])
        """,
    )
    proc = frun(home, "--param", "lr=0.1", "--tag", "team=cv", "--", PY, code)
    assert proc.returncode == 0, proc.stderr
    info = last_run(home)
    assert info.params == {"lr": 0.1} and info.tags == {"team": "cv"} and info.metrics["loss"].count == 5
    client = flightlog.Client(home=home)
    json_lines = [e for e in client.logs(info.id, component="trainer")]
    assert len(json_lines) == 5  # recorded once: by the runner, from the handler's JSON line
    assert json_lines[0].fields and json_lines[0].fields["step"] == 0 and json_lines[0].stream == "stdout"
    assert json_lines[0].fields["run_id"] == info.id
    assert {s.name for s in client.stages(info.id)} >= {"train_step", "attempt 1"}
    assert info.timeline["first_output"] >= info.timeline["process_start"]
    assert "first_metric" in info.timeline and "process_end" in info.timeline


def test_the_workload_s_init_names_the_project_the_runner_was_not_given(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "train.py",
        """
        import flightlog
        run = flightlog.init(project="vision")
        run.log({"loss": 0.5})
        print("project", run.project)
        """,
    )
    unchosen = cli(home, "run", "--", PY, code, check=False)
    assert unchosen.returncode == 0 and "project vision" in unchosen.stdout, unchosen.stderr
    client = flightlog.Client(home=home)
    (moved,) = client.runs(project="vision")
    assert moved.status == "succeeded" and moved.metrics["loss"].count == 1  # the runner's end did not move it back
    assert client.runs(project="default") == []
    # a project chosen for `flightlog run` stands, and the one init() asked for is said, not dropped
    chosen = frun(home, "--", PY, code)
    assert chosen.returncode == 0 and "project t" in chosen.stdout, chosen.stderr
    assert "init(project='vision') is not used" in chosen.stderr and "pass --project vision" in chosen.stderr
    assert last_run(home).status == "succeeded" and len(client.runs(project="vision")) == 1


def test_grandchild_cpu_and_memory_are_counted(home: Path, tmp_path: Path) -> None:
    used = tmp_path / "grandchild-cpu"
    grandchild = script(
        tmp_path,
        "grandchild.py",
        f"""
        import time
        block = bytearray(300 * 1024 * 1024)
        for i in range(0, len(block), 4096):
            block[i] = 1
        end = time.time() + 1.0
        while time.time() < end:
            pass
        open({str(used)!r}, "w").write(str(time.process_time()))
        time.sleep(0.6)  # let the sampler see the whole spin before the tree exits
        """,
    )
    parent = script(
        tmp_path,
        "parent.py",
        f"""
        import subprocess, sys
        sys.exit(subprocess.call([sys.executable, {grandchild!r}]))
        """,
    )
    proc = frun(home, "--sample-interval", "0.25s", "--", PY, parent)
    assert proc.returncode == 0, proc.stderr
    samples = flightlog.Client(home=home).resources(last_run(home).id)
    assert max(s["rss_bytes"] or 0 for s in samples) > 300 * 1024 * 1024
    assert max(s["procs"] for s in samples) >= 2
    # the grandchild's own CPU time, whatever share of a core a busy machine gave it, is counted
    spent = float(used.read_text())
    assert max(s.get("cpu_seconds") or 0 for s in samples) >= 0.7 * spent
    assert max(s["cpu_percent"] or 0 for s in samples) > 0
    summary = flightlog.Client(home=home).evidence(last_run(home).id, kind="resources")
    assert summary and summary[0]["data"]


def test_oom_kill_under_memory_limit_is_recorded(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "hog.py",
        """
        chunks = []
        print("allocating", flush=True)
        while True:
            chunks.append(bytearray(16 * 1024 * 1024))
            for i in range(0, len(chunks[-1]), 4096):
                chunks[-1][i] = 1
        """,
    )
    proc = frun(home, "--memory-limit", "128M", "--", PY, code)
    if "not enforced" in proc.stderr:
        pytest.fail(f"the memory limit could not be enforced here: {proc.stderr}")
    assert proc.returncode == 137, proc.stderr
    info = last_run(home)
    assert info.status == "failed" and info.end_reason == "oom_killed"
    oom = (info.failure or {})["oom"]
    assert oom["oom_kills"] >= 1 or oom["limit_hits"] >= 1
    assert oom["limit_bytes"] == 128 * 1024 * 1024
    assert (info.failure or {})["category"] == "oom_killed"


def test_retries_with_backoff_only_on_listed_categories(home: Path, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    flaky = script(
        tmp_path,
        "flaky.py",
        f"""
        import os, socket
        p = {str(counter)!r}
        n = int(open(p).read()) if os.path.exists(p) else 0
        open(p, "w").write(str(n + 1))
        print("attempt", os.environ["FLIGHTLOG_ATTEMPT"], flush=True)
        if n < 2:
            s = socket.socket()
            s.connect(("127.0.0.1", 9))  # nothing listens: ConnectionRefusedError
        print("connected")
        """,
    )
    t0 = time.monotonic()
    proc = frun(home, "--retries", "3", "--retry-delay", "0.2s", "--", PY, flaky)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("retrying in") == 2 and "service_unavailable" in proc.stderr
    assert time.monotonic() - t0 >= 0.2 * 0.5 + 0.4 * 0.5
    info = last_run(home)
    assert info.status == "succeeded" and info.attempt == 3
    events = flightlog.Client(home=home).logs(info.id, grep="^attempt")
    assert [(e.attempt, e.message) for e in events] == [(1, "attempt 1"), (2, "attempt 2"), (3, "attempt 3")]
    # a code error is not retried by default
    bug = script(tmp_path, "bug.py", "raise ZeroDivisionError('oops')\n")
    proc = frun(home, "--retries", "3", "--retry-delay", "0.1s", "--", PY, bug)
    assert proc.returncode == 1 and "retrying" not in proc.stderr
    # ...unless asked
    proc = frun(home, "--retries", "1", "--retry-on", "code_error", "--retry-delay", "0.1s", "--", PY, bug)
    assert proc.returncode == 1 and proc.stderr.count("retrying in") == 1
    assert last_run(home).attempt == 2


def test_resume_gets_the_last_checkpoint(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "ckpt.py",
        f"""
        import os, sys, flightlog
        run = flightlog.init()
        print("resume from:", os.environ.get("FLIGHTLOG_RESUME_FROM", "-"), flush=True)
        for step in (100, 200):
            path = os.path.join({str(tmp_path)!r}, f"ckpt-{{step}}.pt")
            open(path, "w").write(str(step))
            run.checkpoint(path, step=step)
        if not os.environ.get("FLIGHTLOG_RESUME_FROM"):
            sys.exit(1)
        """,
    )
    assert frun(home, "--", PY, code).returncode == 1
    first = last_run(home)
    proc = frun(home, "--resume", first.id[:8], "--", PY, code)
    assert proc.returncode == 0, proc.stderr
    assert f"resume from: {tmp_path / 'ckpt-200.pt'}" in proc.stdout
    info = flightlog.Client(home=home).run(first.id)
    assert info.status == "succeeded" and info.attempt == 2


def test_resume_keeps_the_runs_name_and_project(home: Path, tmp_path: Path) -> None:
    first = script(tmp_path, "first.py", "import sys; sys.exit(3)")
    assert cli(home, "run", "--project", "nightly", "--name", "train-big", "--", PY, first, check=False).returncode == 3
    client = flightlog.Client(home=home)
    run = client.runs(project="nightly")[0]
    other = script(tmp_path, "other.py", "print('resumed')")  # its script name is not the run's name
    cli(home, "run", "--resume", run.id[:8], "--", PY, other)
    info = client.run(run.id)
    assert (info.name, info.project, info.attempt, info.status) == ("train-big", "nightly", 2, "succeeded")
    # --name still renames on purpose
    cli(home, "run", "--resume", run.id[:8], "--name", "renamed", "--", PY, other)
    assert client.run(run.id).name == "renamed"


def test_missing_command_and_bad_options(home: Path) -> None:
    proc = frun(home, "--", "definitely-not-a-command-xyz")
    assert proc.returncode == 127 and "cannot start" in proc.stderr
    assert last_run(home).status == "failed"
    bad = frun(home, "--timeout", "soon", "--", "true", process=False)
    assert bad.returncode == 1 and "invalid --timeout 'soon'" in bad.stderr
    bad = frun(home, "--param", "novalue", "--", "true", process=False)
    assert bad.returncode == 1 and "KEY=VALUE" in bad.stderr


def test_exit_code_passes_through_and_queue_wait_is_recorded(home: Path) -> None:
    queued = time.time() - 30
    before = time.time()
    proc = frun(home, "--queued-at", str(queued), "--", "sh", "-c", "exit 7")
    after = time.time()
    assert proc.returncode == 7
    info = last_run(home)
    assert info.exit_code == 7 and info.status == "failed"
    # from the queue time to the start, which came between our two readings of the clock
    assert info.queue_wait is not None and before - queued - 0.01 <= info.queue_wait <= after - queued + 0.01


def test_rank_comes_from_ascii_digits_only(home: Path) -> None:
    """A launcher's malformed RANK never stops the run; LOCAL_RANK is used instead."""
    code = "import flightlog; r = flightlog.init(); r.log_event('from the sdk'); r.finish()"
    proc = frun(
        home, "--", PY, "-c", f"print('from stdout'); {code}", env=child_env(home, RANK="\u00b9", LOCAL_RANK="3")
    )
    assert proc.returncode == 0, proc.stderr
    events = flightlog.Client(home=home).logs(last_run(home).id)
    assert {e.message for e in events} >= {"from stdout", "from the sdk"}
    assert {e.rank for e in events} == {3}


def test_json_listing_of_runner_runs(home: Path) -> None:
    frun(home, "--name", "listed", "--", "true", check=True)
    runs = cli_json(home, "runs", "ls", "--project", "t")
    assert runs[0]["name"] == "listed" and runs[0]["status"] == "succeeded"
    assert json.dumps(runs)  # one valid document
    assert os.environ.get("FLIGHTLOG_RUN_ID") is None


@pytest.mark.embedded_only("holds the SQLite file's lock to make the store slow")
@pytest.mark.parametrize("policy", ["drop", "block"])
def test_log_policies_under_a_stalled_store(home: Path, tmp_path: Path, policy: str) -> None:
    import sqlite3
    import threading

    frun(home, "--", "true", check=True)  # create the store
    done = tmp_path / "child-done"
    progress = tmp_path / "child-progress"  # how far the child's printing got, every 1,000 lines
    code = script(
        tmp_path,
        "burst.py",
        f"""
        import os, sys, time
        t0 = time.time()
        for i in range(200000):
            print(f"line {{i}}")
            if i % 1000 == 0:
                with open({str(progress)!r} + ".new", "w") as f:
                    f.write(str(i))
                os.replace({str(progress)!r} + ".new", {str(progress)!r})
        print(f"child took {{time.time() - t0:.2f}}", file=sys.stderr)
        open({str(done)!r}, "w").close()
        """,
    )
    lock = sqlite3.connect(home / "flightlog.db", timeout=5, isolation_level=None, check_same_thread=False)
    lock.execute("BEGIN EXCLUSIVE")
    ended_while_stalled = threading.Event()
    held_at: list[int] = []  # block: the line the child's printing stood still at, the store stalled
    held_for = 0.5  # seconds without progress that count as held (a child that is not held goes on meanwhile)

    def unstall() -> None:
        # the store stays stalled until the workload has ended (drop: it must not wait for the store;
        # a workload that did would end only after the fallback of 120 s) or, under block, until
        # its printing stands still: it waits for the store (then the store goes on)
        deadline = time.monotonic() + 120.0
        seen, since = "", time.monotonic()
        while time.monotonic() < deadline:
            if done.exists():
                ended_while_stalled.set()
                break
            if policy == "block":
                now = progress.read_text() if progress.exists() else ""
                if now != seen:
                    seen, since = now, time.monotonic()
                elif seen and time.monotonic() - since >= held_for:
                    held_at.append(int(seen))
                    break
            time.sleep(0.02)
        lock.execute("COMMIT")

    release = threading.Thread(target=unstall)
    release.start()
    try:
        env = child_env(home, FLIGHTLOG_BUFFER_LIMIT="2000")
        proc = cli(
            home, "run", "--project", "t", "--log-policy", policy, "--", PY, code, env=env, check=True, timeout=120
        )
    finally:
        release.join()
        lock.close()
    child_took = float(proc.stderr.split("child took ")[1].split()[0])
    info = last_run(home)
    stored = len(flightlog.Client(home=home).logs(info.id))
    if policy == "drop":
        assert ended_while_stalled.is_set(), "a stalled store must never slow the workload under drop"
        dropped = info.counters.get("dropped_lines_policy", 0)
        assert dropped > 0 and stored + dropped == 200001  # every stdout line and the child's stderr line
    else:
        assert stored == 200001, "block loses nothing"
        # under block the workload waits for the store: its printing stood still while the store was stalled
        assert held_at and not ended_while_stalled.is_set(), "under block the workload waits for the store"
        assert child_took > held_for, "under block the workload waits for the store"


def test_a_new_run_with_a_parent_an_id_and_a_checkpoint_to_resume_from(home: Path, tmp_path: Path) -> None:
    parent = flightlog.init(project="t", name="pipeline")
    parent.finish()
    ckpt = tmp_path / "ckpt.bin"
    ckpt.write_text("state")
    code = "import os; print(os.environ['FLIGHTLOG_RESUME_FROM'])"
    proc = frun(home, "--parent", parent.id, "--run-id", "step-run-1", "--resume-from", str(ckpt), "--", PY, "-c", code)
    assert proc.returncode == 0 and proc.stdout.strip() == str(ckpt)
    run = flightlog.Client().run("step-run-1", exact=True)
    assert run.parent_id == parent.id and run.status == "succeeded"
    bad = frun(home, "--resume", "step-run-1", "--run-id", "other", "--", PY, "-c", "pass", process=False)
    assert bad.returncode == 1 and "cannot be combined with --run-id or --resume-from" in bad.stderr
