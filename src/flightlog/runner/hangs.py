"""``flightlog run``'s side of the hang watch: the ranks' evidence, gathered into the run.

For each attempt the runner makes a directory the workload's processes meet it in
(``FLIGHTLOG_HANG_DIR``, `flightlog.resources.agent.channel`), puts its bootstrap on the
workload's ``PYTHONPATH`` (so ranks without the SDK watch themselves too) and turns torch's
Flight Recorder on (``TORCH_FR_BUFFER_SIZE``, unless the job set it). While the workload runs,
`HangCollector`'s thread moves what the ranks hand over into the run — evidence, the raw Flight
Recorder dumps as artifacts, a warning event per stall — and, when one rank stalls:

* asks every other rank for its stacks and Flight Recorder at once (a request file each), so
  the run holds one picture of the whole job at the moment it stopped;
* sends the hang signal to a rank that did not answer within ``_ANSWER_GRACE`` seconds (its
  watch cannot run: C code holds the GIL), but only when the process has a handler for it
  (``SigCgt`` in ``/proc/PID/status``; the default action of a real-time signal is to end the
  process), and reads faulthandler's text back as that rank's stacks.

It also notes when a rank's process ends (``rank_exit``, at the thread's resolution), which the
diagnosis orders failures by. Everything runs on its own daemon thread, guarded: the
collector never changes how the workload runs or ends.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flightlog.logevents import LogBatch, level_code
from flightlog.notices import notice
from flightlog.resources.agent.boot import RUNNER_PID_VAR
from flightlog.resources.agent.channel import request_file
from flightlog.resources.agent.settings import HANG_DIR_VAR, HangSettings
from flightlog.resources.agent.stacks import parse_faulthandler
from flightlog.resources.agent.watch import stalled_text
from flightlog.sdk.control import control

if TYPE_CHECKING:
    import flightlog

__all__ = ["HangCollector", "BOOTSTRAP_DIR", "bootstrap_wanted"]

#: the directory put first on the workload's PYTHONPATH (it holds one file, sitecustomize.py)
BOOTSTRAP_DIR = Path(__file__).resolve().parent.parent / "resources" / "agent" / "_boot"
_ANSWER_GRACE = 3.0  # seconds a rank has to answer a request before the signal is tried
_MAX_FH_BYTES = 512 * 1024  # faulthandler text read per rank and dump


def bootstrap_wanted(environ: dict[str, str] | None = None) -> bool:
    """``FLIGHTLOG_BOOTSTRAP`` (default on): whether ranks without the SDK get the runner's bootstrap."""
    env = os.environ if environ is None else environ
    return env.get("FLIGHTLOG_BOOTSTRAP", "on").strip().lower() not in ("off", "0", "false", "no")


class _Agent:
    __slots__ = ("pid", "identity", "mtime", "asked", "answered", "signalled", "fh_offset", "fh_size", "gone")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.identity: dict[str, Any] = {}
        self.mtime = 0.0
        self.asked: float | None = None
        self.answered = float("-inf")  # the last time its stacks arrived
        self.signalled: float | None = None
        self.fh_offset = 0
        self.fh_size = -1  # the file's size at the last look: a dump is read once it stopped growing
        self.gone = False


class HangCollector:
    """One attempt's collector (see the module docstring)."""

    def __init__(self, run: flightlog.Run, settings: HangSettings, attempt: int) -> None:
        self.run = run
        self.settings = settings
        self.attempt = attempt
        self.directory = tempfile.mkdtemp(prefix=f"flightlog-hangs-{run.id[:12]}-a{attempt}-")
        self.agents: dict[int, _Agent] = {}
        self.stalled: set[int] = set()  # pids whose watch says stalled now
        self.records = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._said: set[str] = set()
        self._poll = max(0.05, min(0.5, settings.poll))
        self._carried: list[tuple[Callable[[], None], float]] = []  # (look, every): see `carry`

    # ── before the workload starts ──────────────────────────────────────────
    def child_env(self, env: dict[str, str]) -> None:
        """What the workload's environment needs for the ranks to meet this collector."""
        env[HANG_DIR_VAR] = self.directory
        env[RUNNER_PID_VAR] = str(os.getpid())
        if self.settings.fr_buffer and "TORCH_FR_BUFFER_SIZE" not in env and "TORCH_NCCL_TRACE_BUFFER_SIZE" not in env:
            env["TORCH_FR_BUFFER_SIZE"] = str(self.settings.fr_buffer)
        if bootstrap_wanted(env):
            existing = env.get("PYTHONPATH", "")
            env["PYTHONPATH"] = str(BOOTSTRAP_DIR) + (os.pathsep + existing if existing else "")

    def carry(self, look: Callable[[], None], every: float) -> None:
        """Call ``look`` (which never raises) on this collector's thread every ``every`` seconds
        from its start, before `start`: the attempt's rank observer looks from here, one thread
        started per attempt instead of two (a thread start waits for the thread to run, which on
        a busy machine is milliseconds)."""
        self._carried.append((look, every))

    def start(self) -> HangCollector:
        self._thread = threading.Thread(target=self._loop, name="flightlog-hang-collector", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """The workload ended: collect what is left, then remove the directory."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        try:
            self.collect(time.time(), final=True)
        except Exception as exc:
            self._say_once("final", f"hang evidence left uncollected: {type(exc).__name__}: {exc}")
        shutil.rmtree(self.directory, ignore_errors=True)

    def _loop(self) -> None:
        started = time.monotonic()
        due = [started + every for _, every in self._carried]
        while not self._stop.wait(self._poll):
            try:
                self.collect(time.time())
            except Exception as exc:  # never into the run: said once, goes on
                self._say_once("loop", f"the hang collector failed once and goes on: {type(exc).__name__}: {exc}")
            for i, (look, every) in enumerate(self._carried):
                now = time.monotonic()
                if now >= due[i]:
                    due[i] = now + every
                    try:
                        look()
                    except Exception as exc:  # noqa: BLE001 - never into the run
                        self._say_once("carried", f"a look on the hang collector's thread failed: {exc!r}")

    # ── one look ────────────────────────────────────────────────────────────
    def collect(self, now: float, final: bool = False) -> None:
        try:
            names = sorted(os.listdir(self.directory))
        except OSError:
            return
        for name in names:
            if name.startswith("agent-") and name.endswith(".json"):
                self._read_agent(name)
        for name in names:
            if name.startswith("ev-") and name.endswith(".json"):
                self._take(name, now)
        self._signal_the_silent(now, final)
        self._read_faulthandler(now)
        self._note_exits(now)

    def _read_agent(self, name: str) -> None:
        path = os.path.join(self.directory, name)
        try:
            pid = int(name[len("agent-") : -len(".json")])
            mtime = os.stat(path).st_mtime
        except (ValueError, OSError):
            return
        agent = self.agents.get(pid)
        if agent is None:
            agent = self.agents[pid] = _Agent(pid)
        if mtime == agent.mtime:
            return
        try:
            with open(path, encoding="utf-8") as fh:
                agent.identity = json.load(fh)
            agent.mtime = mtime
        except (OSError, ValueError):
            pass

    def _take(self, name: str, now: float) -> None:
        path = os.path.join(self.directory, name)
        try:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, ValueError):
            return  # read again next time (a file is renamed into place whole, so this is rare)
        try:
            os.unlink(path)
        except OSError:
            pass
        if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
            return
        kind, record_name, data = str(doc.get("kind")), str(doc.get("name")), doc["data"]
        if doc.get("dropped_before"):
            data["dropped_before"] = doc["dropped_before"]
        raw_name = doc.get("raw")
        if isinstance(raw_name, str) and "/" not in raw_name:
            data["artifact"] = self._keep_raw(os.path.join(self.directory, raw_name), record_name)
        pid = data.get("pid")
        agent = self.agents.get(pid) if isinstance(pid, int) else None
        if agent is not None:
            if isinstance(data.get("rank"), int):  # a rank learnt late (Lightning's: when its group forms)
                agent.identity["rank"] = data["rank"]
            if kind == "stacks":
                agent.answered = now
        control(self.run).add_evidence(kind, record_name, data)
        self.records += 1
        if kind == "stall":
            self._on_stall(data, now)
        elif kind == "flight_recorder" and data.get("problem"):
            rank = data.get("rank")
            who = f"rank {rank}" if rank is not None else f"process {data.get('pid')}"
            self._event(f"{who}'s Flight Recorder dump: {data['problem']}", "warning", rank, data)

    def _keep_raw(self, path: str, name: str) -> str | None:
        try:
            kept = self.run.log_artifact(path, kind="flight_recorder", name=f"hangs/{name}.json")
            return str(kept.get("path"))
        except Exception as exc:
            self._say_once("raw", f"a Flight Recorder dump was not kept: {exc}")
            return None
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass

    def _on_stall(self, data: dict[str, Any], now: float) -> None:
        pid = data.get("pid")
        rank = data.get("rank")
        who = f"rank {rank}" if rank is not None else f"process {pid}"
        if data.get("state") == "stalled":
            first = not self.stalled
            if isinstance(pid, int):
                self.stalled.add(pid)
            message = (
                f"{who}: {stalled_text(data)}; "
                f"stacks and Flight Recorder recorded (flightlog diagnose {self.run.id[:12]})"
            )
            self._event(message, "warning", rank, data)
            notice(message)
            if first:
                self._ask_everyone(f"{who} stalled", exclude=pid, now=now)
        else:
            if isinstance(pid, int):
                self.stalled.discard(pid)
            took = float(data.get("time") or now) - float(data.get("since") or now)
            self._event(f"{who}: progress resumed after {took:.0f} s", "info", rank, data)

    def _event(self, message: str, level: str, rank: Any, data: dict[str, Any]) -> None:
        batch = LogBatch()
        batch.append(
            float(data.get("time") or time.time()),
            "stderr",
            level_code(level),
            message,
            component="flightlog",
            fields={"hang": data.get("state"), "pid": data.get("pid")},
            rank=rank if isinstance(rank, int) else None,
            attempt=self.attempt,
        )
        control(self.run).add_logs(batch)

    def ask(self, reason: str, now: float | None = None) -> int:
        """Ask every rank for its stacks and Flight Recorder now; how many were asked."""
        return self._ask_everyone(reason, exclude=None, now=time.time() if now is None else now)

    def _ask_everyone(self, reason: str, exclude: Any, now: float) -> int:
        asked = 0
        ranked = any(a.identity.get("rank") is not None for a in self.agents.values())
        for pid, agent in self.agents.items():
            if pid == exclude or agent.gone or (ranked and agent.identity.get("rank") is None):
                continue  # with ranks around, a process that is none (the launcher) has nothing to say
            try:
                with open(request_file(self.directory, pid), "w", encoding="utf-8") as fh:
                    fh.write(reason)
                agent.asked = now
                agent.signalled = None
                asked += 1
            except OSError:
                continue
        return asked

    # ── the fallback: faulthandler through the signal ───────────────────────
    def _signal_the_silent(self, now: float, final: bool) -> None:
        if final:
            return
        for agent in self.agents.values():
            if agent.asked is None or agent.signalled is not None or agent.gone:
                continue
            if agent.answered >= agent.asked:
                agent.asked = None  # it answered: nothing to do
                continue
            if now - agent.asked < _ANSWER_GRACE:
                continue
            sig = agent.identity.get("signal")
            agent.signalled = now
            if isinstance(sig, int) and _handles(agent.pid, sig):
                try:
                    os.kill(agent.pid, sig)
                except OSError:
                    pass

    def _read_faulthandler(self, now: float) -> None:
        for agent in self.agents.values():
            path = agent.identity.get("faulthandler_file")
            if not isinstance(path, str) or agent.signalled is None:
                continue
            try:
                size = os.path.getsize(path)
                if size != agent.fh_size:  # still being written (faulthandler writes a dump piece by piece)
                    agent.fh_size = size
                    continue
                with open(path, "rb") as fh:
                    fh.seek(agent.fh_offset)
                    text = fh.read(_MAX_FH_BYTES)
            except OSError:
                continue
            if not text.strip():
                continue
            agent.fh_offset += len(text)
            dumps = parse_faulthandler(text.decode("utf-8", "replace"))
            if not dumps:
                continue
            ident = agent.identity
            data = {
                "rank": ident.get("rank"),
                "pid": agent.pid,
                "host": ident.get("host"),
                "world_size": ident.get("world_size"),
                "time": now,
                "reason": "asked through the hang signal: the rank's watch did not answer (C code may hold the GIL)",
                "source": "faulthandler",
                "threads": dumps[-1],
                "truncated": False,
            }
            name = f"rank{ident.get('rank')}-fh-{int(now * 1000)}"
            if agent.pid not in self.stalled:
                # its watch could not say so itself (it never got the GIL): the runner says it for it
                stall = {
                    **{k: ident.get(k) for k in ("rank", "local_rank", "world_size", "host")},
                    "pid": agent.pid,
                    "state": "stalled",
                    "time": now,
                    "since": agent.asked or now,
                    "source": "runner",
                    "reason": "its hang watch did not answer a request for evidence: C code may hold the GIL",
                }
                control(self.run).add_evidence("stall", name.replace("-fh-", "-stall-fh-"), stall)
                self.stalled.add(agent.pid)
            control(self.run).add_evidence("stacks", name, data)
            agent.answered = now
            agent.asked = None

    def _note_exits(self, now: float) -> None:
        for agent in self.agents.values():
            if agent.gone or _alive(agent.pid):
                continue
            agent.gone = True
            self.stalled.discard(agent.pid)
            ident = agent.identity
            data = {
                "rank": ident.get("rank"),
                "pid": agent.pid,
                "host": ident.get("host"),
                "world_size": ident.get("world_size"),
                "time": now,
                "resolution_s": self._poll,
            }
            control(self.run).add_evidence("rank_exit", f"rank{ident.get('rank')}-pid{agent.pid}", data)

    def _say_once(self, key: str, message: str) -> None:
        if key not in self._said:
            self._said.add(key)
            notice(message)


def _alive(pid: int) -> bool:
    """The process still runs (a zombie counts as ended: it waits only for its parent to reap it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _handles(pid: int, sig: int) -> bool:
    """The process has a handler for ``sig`` (Linux's ``SigCgt``): sending it cannot end the process.
    Elsewhere, never assumed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    except (OSError, ValueError, IndexError):
        return False
    return False
