"""Real workloads for the diagnosis tests: small scripts under ``workloads/<category>/`` that
fail or slow down the way real programs do, run under ``flightlog run`` (or with the SDK
alone), then diagnosed.

A workload declares how to run it in its first comment lines::

    # expect: data_error            the top finding's category ("none": nothing at 0.5 or more)
    # runner: --memory-limit 100M    options for `flightlog run`
    # argv: --lr fast                arguments for the script
    # mode: sdk                      run the script directly (it calls flightlog.init); default: runner
    # signal: 0.8 TERM               send this signal to `flightlog run` 0.8 s after the workload's first line
    # queued-ago: 2h                 pass --queued-at that long ago
    # baseline: other.py             run this workload first, under the same run name, and pin it
                                     (tag baseline=true: one reference run is enough when a person names it)

``python -m tests.diagnose.harness`` runs every workload and prints the per-category table.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKLOADS = Path(__file__).parent / "workloads"
PROJECT = "wl"
_HEADER = re.compile(r"^#\s*([a-z-]+):\s*(.*?)\s*$")
_RUN_ID = re.compile(r"flightlog: run ([0-9a-f]{32}) started")


@dataclass
class Workload:
    path: Path
    expect: str
    mode: str = "runner"
    runner: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    signal: tuple[float, int] | None = None
    queued_ago: str | None = None
    baseline: Path | None = None

    @property
    def id(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}"

    @property
    def name(self) -> str:
        return self.path.stem


@dataclass
class Outcome:
    workload: Workload
    home: Path
    run_id: str | None
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def load(path: Path) -> Workload:
    fields: dict[str, str] = {}
    for line in path.read_text().splitlines()[:12]:
        m = _HEADER.match(line)
        if m:
            fields[m[1]] = m[2]
    path = path.resolve()
    w = Workload(path, fields.get("expect", path.parent.name))
    w.mode = fields.get("mode", "runner")
    w.runner = fields.get("runner", "").split()
    w.argv = fields.get("argv", "").split()
    if "signal" in fields:
        after, name = fields["signal"].split()
        w.signal = (float(after), int(getattr(signal, f"SIG{name}")))
    w.queued_ago = fields.get("queued-ago")
    if "baseline" in fields:
        w.baseline = path.parent / fields["baseline"]
    return w


def discover(*categories: str) -> list[Workload]:
    dirs = [WORKLOADS / c for c in categories] if categories else sorted(p for p in WORKLOADS.iterdir() if p.is_dir())
    out = []
    for d in dirs:
        for p in sorted(d.iterdir()):
            if p.suffix in (".py", ".sh") and not p.name.startswith("_") and not p.name.startswith("base_"):
                out.append(load(p))
    return out


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    env.update(FLIGHTLOG_HOME=str(home), FLIGHTLOG_PROJECT=PROJECT, PYTHONUNBUFFERED="1", PYTHONWARNINGS="default")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _command(w: Workload, name: str) -> list[str]:
    program = ["bash", str(w.path)] if w.path.suffix == ".sh" else [sys.executable, str(w.path)]
    if w.mode == "sdk":
        return [*program, *w.argv]
    exe = str(Path(sys.executable).with_name("flightlog"))
    extra = list(w.runner)
    if w.queued_ago:
        from flightlog.timefmt import iso, parse_time

        extra += ["--queued-at", str(iso(parse_time(w.queued_ago)))]
    return [exe, "run", "--project", PROJECT, "--name", name, *extra, "--", *program, *w.argv]


def _execute(w: Workload, home: Path, name: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = _env(home)
    env["WORKLOAD_NAME"] = name
    proc = subprocess.Popen(
        _command(w, name),
        env=env,
        cwd=home.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    err: list[str] = []
    out: list[str] = []
    working = threading.Event()  # the workload printed its first line: it is running

    def read(stream: Any, into: list[str], is_err: bool) -> None:
        for line in stream:
            into.append(line)
            if not is_err or not line.startswith("flightlog: "):
                working.set()
        working.set()

    readers = [
        threading.Thread(target=read, args=(proc.stdout, out, False), daemon=True),
        threading.Thread(target=read, args=(proc.stderr, err, True), daemon=True),
    ]
    for r in readers:
        r.start()
    if w.signal is not None:
        after, sig = w.signal
        working.wait(timeout)
        time.sleep(after)
        if proc.poll() is None:
            proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for r in readers:
        r.join(5)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return subprocess.CompletedProcess(proc.args, proc.returncode, "".join(out), "".join(err))


def run_workload(w: Workload, root: Path, timeout: float = 60.0) -> Outcome:
    home = root / w.id.replace("/", "__") / "home"
    home.mkdir(parents=True, exist_ok=True)
    if w.baseline is not None:
        base = load(w.baseline)
        ran = _execute(base, home, w.name, timeout)
        _pin(home, _RUN_ID.search(ran.stderr))
    started = time.monotonic()
    done = _execute(w, home, w.name, timeout)
    seconds = time.monotonic() - started
    m = _RUN_ID.search(done.stderr)
    run_id = m[1] if m else _newest_run(home)
    return Outcome(w, home, run_id, done.returncode, done.stdout, done.stderr, seconds)


def _pin(home: Path, started: re.Match[str] | None) -> None:
    """Tag the baseline run ``baseline=true``: a reference a person named (docs/troubleshooting.md)."""
    from flightlog.client import Client

    run_id = started[1] if started else _newest_run(home)
    if run_id is not None:
        with Client(home) as c:
            c.edit_run(run_id, tags={"baseline": "true"})


def _newest_run(home: Path) -> str | None:
    from flightlog.client import Client

    with Client(home) as c:
        runs = c.runs(limit=1)
    return runs[0].id if runs else None


def run_all(workloads: list[Workload], root: Path, parallel: int = 3) -> dict[str, Outcome]:
    with ThreadPoolExecutor(parallel) as pool:
        outcomes = list(pool.map(lambda w: run_workload(w, root), workloads))
    return {o.workload.id: o for o in outcomes}


def diagnose(o: Outcome) -> dict[str, Any]:
    from flightlog.client import Client

    assert o.run_id, f"{o.workload.id}: no run recorded\nstdout:\n{o.stdout}\nstderr:\n{o.stderr}"
    with Client(o.home) as c:
        return c.diagnose(o.run_id)


def top(report: dict[str, Any], expect: str) -> tuple[str, float]:
    """The top finding's category — or "none" for a workload expected healthy that has no
    finding at 0.5 or more (a healthy run's hints are not leads)."""
    findings = report["findings"]
    if not findings:
        return "none", 0.0
    if expect == "none" and findings[0]["confidence"] < 0.5:
        return "none", findings[0]["confidence"]
    return findings[0]["category"], findings[0]["confidence"]


def explain(o: Outcome, report: dict[str, Any]) -> str:
    rows = "\n".join(f"  {f['category']} {f['confidence']}: {f['summary']}" for f in report["findings"])
    return (
        f"{o.workload.id}: expected {o.workload.expect}, got {top(report, o.workload.expect)}\n{rows}\n"
        f"exit {o.returncode} in {o.seconds:.1f}s\nstdout:\n{o.stdout[-1500:]}\nstderr:\n{o.stderr[-3000:]}"
    )


def main() -> None:  # pragma: no cover - the closing note's table
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        outcomes = run_all(discover(), Path(tmp), parallel=int(os.environ.get("PARALLEL", "3")))
        table: dict[str, list[int]] = {}
        for o in outcomes.values():
            report = diagnose(o)
            got, conf = top(report, o.workload.expect)
            ok = got == o.workload.expect
            row = table.setdefault(o.workload.path.parent.name, [0, 0])
            row[0] += 1
            row[1] += ok
            print(
                f"{'ok ' if ok else 'BAD'} {o.workload.id:55} expect {o.workload.expect:24} got {got:24} {conf:.2f} {o.seconds:.1f}s"
            )
        print("\n| category | cases | correct |\n| --- | --- | --- |")
        for cat, (n, ok) in sorted(table.items()):
            print(f"| {cat} | {n} | {ok} |")


if __name__ == "__main__":
    main()
