"""``flightlog run``: one run, one or more attempts of a workload, with its evidence attached.

Per attempt: spawn the command in its own process group (inside a memory cgroup when asked),
pump its output through, sample its process tree, wait for it under the timeout while
forwarding SIGINT/SIGTERM, then classify how it ended. Retries, when allowed for that failure
category, back off exponentially with jitter. The run's owner is this process: it sets the
final status; an SDK inside the workload attaches to the same run (``FLIGHTLOG_RUN_ID``).
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flightlog.capture.launchers import is_victim_message, launcher_of
from flightlog.client import Client
from flightlog.config import rank_from_env
from flightlog.failure import parse_python_traceback, signal_name
from flightlog.launchenv import ranks_text
from flightlog.logevents import LogBatch
from flightlog.notices import notice
from flightlog.plugins import features
from flightlog.redaction import pattern_files
from flightlog.redaction.patterns import load_patterns
from flightlog.runner.hangs import HangCollector
from flightlog.runner.mlflow_env import mlflow_env
from flightlog.runner.options import RunnerOptions, retry_backoff
from flightlog.runner.outcome import Outcome, outcome_of
from flightlog.runner.pump import OutputPump, enlarge_pipe
from flightlog.runner.ranks import RankObserver
from flightlog.runner.reaper import MARK, Keeper, Reaper, become_subreaper, death_signal
from flightlog.runner.seed import Seed, SeededProcess
from flightlog.runner.seed import discard as discard_seed
from flightlog.runner.seed import take as take_seed
from flightlog.sdk import Run, init
from flightlog.sdk.context import allowed_env, process_context
from flightlog.sdk.control import control
from flightlog.sdk.hangs import hang_settings
from flightlog.sdk.shipper import shipper
from flightlog.timefmt import format_duration

__all__ = ["Runner", "AttemptResult", "last_checkpoint"]

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_ADOPT_INTERVAL = 1.0  # seconds between looks for the workload's orphans while it runs
#: how many of the last resource samples say "memory just before the end" (see _Sampling.memory_share)
_RECENT_SAMPLES = 3
#: what a distributed job's failure keeps of its confidence when its traceback is a rank's that
#: only waited for another and no culprit was named: a hint (``diagnose.distributed._WAITED``)
_VICTIM_WEIGHT = 0.3
#: a NaN or an infinity among a succeeded run's last lines: whether to ask if its loss ended so
_NONFINITE_WORD = re.compile(r"\b(?:nan|inf|infinity)\b", re.IGNORECASE)  # not INFO, inference
_WORKDIR_SLOW_DELAY = 1.0  # first walk of the working directory this long after the start (a step that
# ends within milliseconds cannot have changed its size, and must not wait ~0.1 s for the walk)


def say(message: str) -> None:
    """The runner's own messages: stderr only, so the workload's stdout stays its own."""
    notice(message)


@dataclass
class _Sampling:
    """One attempt's resource sampling: the thread, its sampler, and the running summary."""

    thread: Any
    sampler: Any
    summary: Any
    #: the tree's memory in the last few samples (what the fast classifier weighs against a kill)
    recent_memory: deque[int] = field(default_factory=lambda: deque(maxlen=_RECENT_SAMPLES))

    def memory_share(self, limit: int | None) -> float | None:
        """The highest share of ``limit`` in the last samples, or None."""
        return max(self.recent_memory) / limit if limit and self.recent_memory else None


@dataclass
class AttemptResult:
    attempt: int
    outcome: Outcome
    category: str
    confidence: float
    started: float
    ended: float
    failure: dict[str, Any] | None = None
    oom: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    #: a succeeded attempt whose loss (or gradient norm) ended NaN: ``(key, value, line)``
    ended_nonfinite: tuple[str, str, str] | None = None


class Runner:
    def __init__(self, options: RunnerOptions) -> None:
        self.opts = options
        self._received: int | None = None  # a signal sent to us, forwarded to the workload
        self._child: subprocess.Popen[bytes] | SeededProcess | None = None
        self._first_start: float | None = None
        self._noted: set[str] = set()
        self._reaper: Reaper | None = None
        self._subreaper = False
        self._line_metrics: Any = None  # capture.LineMetrics, for the whole run
        self._counted: dict[str, int] = {}
        self._client: Any = None  # a reader of the store, for names the SDK logged

    # ── signals ─────────────────────────────────────────────────────────────
    def _install_signals(self) -> None:
        for sig in _FORWARDED:
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        first = self._received is None
        self._received = signum
        child = self._child
        if child is None or child.poll() is not None:
            return
        try:  # a second Ctrl-C means: now
            os.killpg(child.pid, signum if first else signal.SIGKILL)
        except ProcessLookupError:
            pass

    # ── the run ─────────────────────────────────────────────────────────────
    def execute(self) -> int:
        self._install_signals()
        self._subreaper = become_subreaper()  # the workload's orphans come to us, not to init
        opts = self.opts
        resume_from = opts.resume_from
        run_id = opts.run_id
        if opts.resume:
            run_id, resume_from = self._resume_point(opts.resume)
        # a resumed run keeps its name (diagnose finds its baseline by it) unless --name renames it
        name = opts.name if opts.resume else (opts.name or _default_name(opts.command))
        run = init(
            project=opts.project,
            name=name,
            params=opts.params or None,
            tags=opts.tags or None,
            id=run_id,
            resume=bool(opts.resume),
            resources=False,
            parent=opts.parent,
            console=False,
            quiet=True,  # the workload's output is captured at the fd level; the runner says where
        )
        self.run = run
        if opts.log_metrics and run.settings.log_metrics:
            from flightlog.capture import LineMetrics

            self._line_metrics = LineMetrics()
        if opts.queued_at is not None:
            control(run).set_queued(opts.queued_at)
        control(run).add_evidence("runner", "config", self._config_evidence())
        say(f"run {run.id} started" + (f" (resuming from {resume_from})" if resume_from else ""))
        # what features run beside the run (the alert monitor): started now, stopped after the final status
        watchers = [w for _, w in features().call("flightlog_runner_start", run=run, options=opts)]
        results: list[AttemptResult] = []
        attempt = run.attempt
        while True:
            result = self._attempt(run, attempt, resume_from)
            results.append(result)
            if not self._should_retry(result, len(results)):
                break
            delay = self._backoff(len(results))
            say(
                f"attempt {attempt} failed ({result.category}); retrying in {delay:.1f}s "
                f"({len(results)}/{opts.retries} retries used)"
            )
            if self._sleep_interruptibly(delay):
                break
            attempt += 1
            control(run).begin_attempt(attempt)
        exit_code = self._finish(run, results)
        for watcher in watchers:
            try:
                watcher.stop(final=True)
            except Exception as exc:  # noqa: BLE001 - a feature never changes the run's exit
                say(f"warning: a feature's watcher failed to stop: {type(exc).__name__}: {exc}")
        if self._client is not None:
            self._client.close()
        return exit_code

    def _resume_point(self, ref: str) -> tuple[str, str | None]:
        client = Client()
        try:
            info = client.run(ref)
            path = last_checkpoint(client, [info.id])
        finally:
            client.close()
        if path is None:
            say(f"run {info.id[:12]} has no checkpoint recorded; the new attempt starts from scratch")
        return info.id, path

    def _config_evidence(self) -> dict[str, Any]:
        o = self.opts
        return {
            "command": o.command,
            "cwd": os.getcwd(),
            "timeout_s": o.timeout,
            "retries": o.retries,
            "retry_on": list(o.retry_on),
            "memory_limit_bytes": o.memory_limit,
            "memory_limit_mode": o.memory_limit_mode,
            "sample_interval_s": o.sample_interval,
            "log_policy": o.log_policy,
            "max_log_rate": o.max_log_rate,
            "hang_watch": _hang_config(),
        }

    def _should_retry(self, result: AttemptResult, attempts_done: int) -> bool:
        if result.outcome.succeeded or attempts_done > self.opts.retries:
            return False
        if self._received is not None:
            return False  # someone asked us to stop: never retry that
        return result.category in self.opts.retry_on

    def _backoff(self, retry: int) -> float:
        return retry_backoff(self.opts.retry_delay, retry, self.opts.retry_max_delay)

    def _sleep_interruptibly(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._received is not None:
                return True
            time.sleep(min(0.05, deadline - time.monotonic()))
        return False

    # ── one attempt ─────────────────────────────────────────────────────────
    def _attempt(self, run: Run, attempt: int, resume_from: str | None) -> AttemptResult:
        from flightlog.capture import CaptureConfig, CapturePipeline

        opts = self.opts
        env = self._child_env(run, attempt, resume_from)
        hangs = self._hang_collector(run, attempt, env)
        # the MLflow client inside asks the server for the run at once; a workload's init() may move
        # a run whose project was not chosen, which must come after the run's own first record
        if "MLFLOW_RUN_ID" in env or "FLIGHTLOG_PROJECT" not in env:
            control(run).flush()
        patterns = [*load_patterns(pattern_files(run.settings.home)), *opts.redact]
        pipeline = CapturePipeline(
            CaptureConfig(
                max_line_bytes=opts.max_line_bytes,
                max_rate=opts.max_log_rate,
                extra_patterns=patterns,
                env=env,
                attempt=attempt,
                rank=rank_from_env(env),
                launcher_labels=launcher_of(list(opts.command))[1],
            ),
            metrics=self._line_metrics,
        )
        started = time.time()
        if self._received is not None:  # asked to stop before the workload even started
            return self._not_started(run, attempt, started, self._received)
        limit, notes = self._memory_limit(run, attempt)
        seed = _seed(opts)  # the workload's process started ahead (a runner forked by the warm runner)
        # what holds every process of the workload: the seed's cgroup, the limit's, or one of the attempt's own
        tree = seed.tree if seed is not None else (limit if limit is not None else _tree_cgroup(run, attempt))
        keeper = _keeper(tree, env)
        child: subprocess.Popen[bytes] | SeededProcess
        try:
            if seed is not None:
                child = seed.spawn(opts.command, env)
            else:
                child = subprocess.Popen(
                    opts.command,
                    stdin=_stdin(),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                    preexec_fn=_preexec(tree, opts),
                    process_group=0,
                    close_fds=True,
                )
        except OSError as exc:
            if keeper is not None:
                keeper.stand_down()
            if tree is not None:
                tree.close()
            if hangs is not None:
                hangs.stop()
            return self._spawn_failed(run, attempt, started, exc)
        self._child = child
        observer = _observe_ranks(run, attempt, child.pid, hangs)
        if hangs is not None:
            hangs.start()  # with the observer's looks on its thread
        reaper = self._reaper = Reaper(child.pid, tree.pids if tree is not None else None)
        if self._received is not None:  # a signal landed while the child was being spawned
            _kill_group(child.pid, self._received)
        assert child.stdout is not None and child.stderr is not None
        out_fd, err_fd = child.stdout.fileno(), child.stderr.fileno()
        enlarge_pipe(out_fd)
        enlarge_pipe(err_fd)
        pump = OutputPump(
            {"stdout": (os.dup(out_fd), sys.stdout.fileno()), "stderr": (os.dup(err_fd), sys.stderr.fileno())},
            pipeline,
            lambda batch: self._store_logs(run, batch),
        ).start()
        child.stdout.close()
        child.stderr.close()
        sampling = self._start_sampler(run, child.pid, limit)
        if self._first_start is None:
            self._first_start = started
            control(run).mark(process_start=started)
        returncode, timed_out = self._wait(child)
        ended = time.time()
        # Leftovers die with the entrypoint, as in a container: its process group, its cgroup,
        # and (as their subreaper) daemons that left both with setsid.
        if not pump.join(2.0):  # something in the tree still holds the pipes open
            reaper.terminate()
            pump.join(2.0)
        killed = reaper.sweep()
        if keeper is not None:
            keeper.stand_down()
        pump.join(5.0)
        pump.end_open_line(sys.stderr)
        if hangs is not None:
            hangs.stop()  # what the ranks handed over last is on the run before its end is classified
        if killed:
            control(run).count("leftover_processes_killed", killed)
        self._store_line_metrics(run, final=True)
        self._child = None
        self._reaper = None
        if sampling is not None:
            sampling.thread.stop()
            self._sample_summary(run, sampling)
        oom_killed, oom = self._oom_facts(limit, returncode)
        if tree is not None:
            tree.close()
        self._count_capture(run, pipeline.stats)
        timeline = {"process_end": ended}
        if pump.first_output is not None:
            timeline["first_output"] = pump.first_output
        control(run).mark(**timeline)
        control(run).span(f"attempt {attempt}", started, ended, {"exit": returncode})
        outcome = outcome_of(returncode, timed_out=timed_out, oom_killed=oom_killed)
        traceback_text = pump.last_traceback
        worker = pump.launcher.cause()
        if worker is not None:  # a worker's error, never the launcher's wrapper of it
            traceback_text = worker.last
        launcher_facts = pump.launcher.facts()
        if launcher_facts is not None:
            control(run).add_evidence("launcher_exits", f"attempt {attempt}", launcher_facts)
        if observer is not None:  # each rank's end, as far as the launcher and the outcome say
            observer.finish(
                succeeded=outcome.succeeded,
                launcher=launcher_facts,
                tracebacks=pump.launcher.tracebacks,
                stopped_by=self._received or (signal.SIGTERM if timed_out else None),
            )
        share = sampling.memory_share(self.opts.memory_limit) if sampling is not None else None
        category, confidence = _classify(
            outcome, returncode, timed_out, oom_killed, traceback_text, list(pump.last_lines), share
        )
        culprit = None
        if not outcome.succeeded and (launcher_facts is not None or (observer is not None and observer.ranks)):
            # the culprit rank's cause, not a victim's timeout; the judge reads this attempt's end
            # (an OOM kill at the limit) from the runner, before the run's end is written
            culprit = self._judge_ranks(run, outcome.end_reason)
            if culprit is not None:
                category, confidence = str(culprit["category"]), float(culprit["confidence"])
            elif observer is not None and observer.ranks and traceback_text and is_victim_message(traceback_text):
                # ranks seen, no culprit, and the traceback is a rank's that only waited ("Connection
                # closed by peer"): a hint, as the diagnosis reads it, never "looks like service_unavailable"
                confidence = min(confidence, confidence * _VICTIM_WEIGHT)
        failure = None
        if not outcome.succeeded:
            failure = self._failure(outcome, traceback_text, list(pump.last_lines), env, category, oom)
            if worker is not None:
                failure["rank"] = worker.rank
            if launcher_facts is not None:
                failure["ranks"] = launcher_facts["ranks"]
            if culprit is not None:
                failure["culprit"] = {"rank": culprit["rank"], "summary": culprit["summary"]}
                if culprit.get("alike"):  # no culprit: ranks that failed alike
                    failure["culprit"]["alike"] = list(culprit["alike"])
        for note in notes:
            run.note(note, author="flightlog")
        nonfinite = _ended_nonfinite(list(pump.last_lines)) if outcome.succeeded else None
        return AttemptResult(attempt, outcome, category, confidence, started, ended, failure, oom, notes, nonfinite)

    def _judge_ranks(self, run: Run, end_reason: str) -> dict[str, Any] | None:
        """The diagnosis's verdict on the failed distributed attempt (which rank caused it, and
        how), from what the run holds once this attempt's records are in and how this runner saw
        the attempt end (``end_reason``: the run's end is written after the verdict); None
        without one."""
        try:
            control(run).flush()
            if self._client is None:
                self._client = Client(reconcile=False)
            verdict = features().ask("flightlog_judge_ranks", client=self._client, run_id=run.id, end_reason=end_reason)
            return dict(verdict) if verdict else None
        except Exception as exc:  # noqa: BLE001 - the quick classification stands
            say(f"the ranks of this attempt were not judged: {type(exc).__name__}: {exc}")
            return None

    def _child_env(self, run: Run, attempt: int, resume_from: str | None) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            FLIGHTLOG_RUN_ID=run.id,
            FLIGHTLOG_HOME=str(run.settings.home),
            FLIGHTLOG_ATTEMPT=str(attempt),
            FLIGHTLOG_CAPTURED="1",
            FLIGHTLOG_LOG_POLICY=self.opts.log_policy,
            PYTHONUNBUFFERED="1",
        )
        if self.opts.project or self.opts.resume:
            env["FLIGHTLOG_PROJECT"] = run.project
        else:  # not chosen: the workload's init(project=...) may name it (sdk/api.py:_runner_s_project)
            env.pop("FLIGHTLOG_PROJECT", None)
        if resume_from:
            env["FLIGHTLOG_RESUME_FROM"] = resume_from
        else:
            env.pop("FLIGHTLOG_RESUME_FROM", None)
        env.update(mlflow_env(run.settings.url, run.settings.token, run.id, run.project, env))
        return env

    def _hang_collector(self, run: Run, attempt: int, env: dict[str, str]) -> HangCollector | None:
        """The attempt's hang collector (docs/distributed.md), its variables put in ``env``; None
        when ``FLIGHTLOG_HANG_WATCH=off``."""
        settings = hang_settings()
        if not settings.enabled:
            return None
        try:
            collector = HangCollector(run, settings, attempt)
        except OSError as exc:
            say(f"hangs are not watched in this attempt: {exc}")
            return None
        collector.child_env(env)
        return collector

    def _memory_limit(self, run: Run, attempt: int) -> tuple[Any, list[str]]:
        opts = self.opts
        if opts.memory_limit is None or opts.memory_limit_mode != "cgroup":
            return None, []
        from flightlog.resources import CgroupUnavailable, create_memory_limit

        try:
            return create_memory_limit(opts.memory_limit, f"{run.id[:12]}-a{attempt}"), []
        except CgroupUnavailable as exc:
            message = f"--memory-limit not enforced: {exc.message} (running without the limit)"
            say(message)
            return None, [message]

    def _start_sampler(self, run: Run, pid: int, limit: Any) -> _Sampling | None:
        from flightlog.resources import ProcessTreeSampler, ResourceSummary, SamplerThread

        summary = ResourceSummary()

        recent: deque[int] = deque(maxlen=_RECENT_SAMPLES)

        def on_sample(sample: dict[str, Any]) -> None:
            summary.add(sample)
            control(run).add_resource_sample(sample)
            used = [
                v for v in (sample.get("rss_bytes"), sample.get("cgroup_memory_usage")) if isinstance(v, (int, float))
            ]
            if used and max(used) > 0:  # a tree that already ended reads 0
                recent.append(int(max(used)))

        try:
            sampler = ProcessTreeSampler(pid, workdir=os.getcwd(), cgroup=limit, slow_delay=_WORKDIR_SLOW_DELAY)
            thread = SamplerThread(sampler, on_sample, interval=self.opts.sample_interval).start()
        except Exception as exc:
            say(f"resource sampling is off for this attempt: {exc}")
            return None
        return _Sampling(thread, sampler, summary, recent)

    def _sample_summary(self, run: Run, sampling: _Sampling) -> None:
        try:
            sampling.summary.add(sampling.sampler.sample())  # one last look at the end
        except Exception:
            pass
        data = sampling.summary.to_dict()
        control(run).add_evidence("resources", f"summary-attempt-{run.attempt}", data)
        for note in sampling.sampler.notes:
            if note not in self._noted:
                self._noted.add(note)
                run.note(note, author="flightlog")

    def _store_logs(self, run: Run, batch: LogBatch) -> None:
        writer = control(run)
        limit = run.settings.buffer_limit  # FLIGHTLOG_BUFFER_LIMIT
        if writer.pending_log_events() >= limit:
            if self.opts.log_policy == "drop":
                writer.count("dropped_lines_policy", len(batch))
                return
            while writer.pending_log_events() >= limit:  # block: back-pressure through the pipe
                shipper.poke()
                time.sleep(0.005)
        writer.add_logs(batch)
        self._store_line_metrics(run)

    def _store_line_metrics(self, run: Run, final: bool = False) -> None:
        """Hand the metrics read from lines to the writer — except names the workload logs
        with the SDK itself, so that no metric is written by both. Called from the output
        pump too: it must never raise (the pump would stop passing output through)."""
        metrics = self._line_metrics
        if metrics is None:
            return
        try:
            self._hand_over_line_metrics(run, metrics, final)
        except Exception as exc:
            self._line_metrics = None
            say(f"metrics are no longer read from output lines: {exc!r}")

    def _hand_over_line_metrics(self, run: Run, metrics: Any, final: bool) -> None:
        writer = control(run)
        limit = run.settings.buffer_limit
        stored = 0
        for point in metrics.take(time.time(), final=final, claimed=lambda: self._claimed_names(run)):
            if writer.pending_metric_points() >= limit:  # never hold up the workload for a derived metric
                writer.count("dropped_line_metrics", len(point[2]))
                continue
            writer.add_metric_call(point)
            stored += len(point[2])
        if stored:
            writer.count("line_metrics", stored)
        if metrics.broken:
            self._line_metrics = None
            say(f"metrics are no longer read from output lines: {metrics.broken}")
        for key in (
            "line_metric_names_dropped",
            "line_metric_names_sdk",
            "line_metrics_dropped",
            "line_metrics_sampled_out",
        ):
            new = metrics.stats[key] - self._counted.get(key, 0)
            if new:
                self._counted[key] = metrics.stats[key]
                writer.count(key, new)

    def _claimed_names(self, run: Run) -> set[str]:
        """Metric names the run has in the store now: the SDK's (names read from lines are
        asked about before their first point is written)."""
        if self._client is None:
            self._client = Client(reconcile=False)  # a lookup from the output pump: never a write
        return set(self._client.metrics(run.id))

    def _count_capture(self, run: Run, stats: dict[str, int]) -> None:
        names = {
            "lines": "log_lines",
            "bytes": "log_bytes",
            "dropped_lines": "dropped_lines",
            "dropped_bytes": "dropped_bytes",
            "truncated_lines": "truncated_lines",
            "redactions": "redactions",
            "events": "log_events",
        }
        for key, name in names.items():
            if stats.get(key):
                control(run).count(name, stats[key])

    def _wait(self, child: subprocess.Popen[bytes] | SeededProcess) -> tuple[int, bool]:
        timeout = self.opts.timeout
        deadline = time.monotonic() + timeout if timeout else None
        next_adopt = time.monotonic() + _ADOPT_INTERVAL
        exit_fd = _exit_fd(child.pid)
        try:
            while True:
                try:
                    return _wait_child(child, exit_fd, 0.1), False
                except subprocess.TimeoutExpired:
                    pass
                if time.monotonic() >= next_adopt:
                    next_adopt = time.monotonic() + _ADOPT_INTERVAL
                    if self._subreaper and self._reaper is not None:
                        self._reaper.adopt()  # orphans that exit are reaped, not left as zombies
                    self._store_line_metrics(self.run)
                if deadline is not None and time.monotonic() >= deadline:
                    say(
                        f"timeout after {format_duration(timeout)}: sending SIGTERM, SIGKILL in {self.opts.kill_grace:g}s"
                    )
                    _kill_group(child.pid, signal.SIGTERM)
                    try:
                        return child.wait(timeout=self.opts.kill_grace), True
                    except subprocess.TimeoutExpired:
                        _kill_group(child.pid, signal.SIGKILL)
                        return child.wait(), True
        finally:
            if exit_fd is not None:
                os.close(exit_fd)

    def _oom_facts(self, limit: Any, returncode: int) -> tuple[bool, dict[str, Any] | None]:
        if limit is None:
            return False, None
        from flightlog.resources import killed_for_memory

        killed = killed_for_memory(limit, returncode)
        facts = {
            "limit_bytes": limit.limit_bytes,
            "peak_bytes": limit.peak_bytes(),
            "oom_kills": limit.oom_kills(),
            "limit_hits": limit.limit_hits(),
            "cgroup": limit.path,
            "cgroup_version": limit.version,
        }
        return killed, facts

    def _failure(
        self,
        outcome: Outcome,
        traceback_text: str | None,
        last_lines: list[str],
        env: dict[str, str],
        category: str,
        oom: dict[str, Any] | None,
    ) -> dict[str, Any]:
        failure: dict[str, Any] = (parse_python_traceback(traceback_text) if traceback_text else None) or {}
        ctx = process_context()
        failure.update(
            category=category,
            exit_code=outcome.exit_code,
            signal=outcome.signal,
            end_reason=outcome.end_reason,
            last_lines=last_lines,
            workload={
                "command": self.opts.command,
                "cwd": os.getcwd(),
                "params": self.opts.params,
                "env": allowed_env(env),
                "packages": ctx.get("packages", {}),
                "python": ctx.get("python"),
            },
        )
        if oom is not None:
            failure["oom"] = oom
        return failure

    def _spawn_failed(self, run: Run, attempt: int, started: float, exc: OSError) -> AttemptResult:
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        message = f"cannot start {self.opts.command[0]!r}: {exc.strerror or exc}"
        say(message)
        run.log_event(message, level="error", component="flightlog")
        outcome = Outcome("failed", "exit", code, None)
        failure = {
            "exception": type(exc).__name__,
            "message": message,
            "frames": [],
            "category": "dependency_error",
            "last_lines": [message],
            "workload": {"command": self.opts.command, "cwd": os.getcwd()},
        }
        return AttemptResult(attempt, outcome, "dependency_error", 0.9, started, time.time(), failure)

    def _not_started(self, run: Run, attempt: int, started: float, signum: int) -> AttemptResult:
        outcome = outcome_of(-signum)
        message = f"received {signal.Signals(signum).name} before the workload started; not starting it"
        say(message)
        run.log_event(message, level="warning", component="flightlog")
        return AttemptResult(attempt, outcome, "killed_by_signal", 0.9, started, time.time())

    def _finish(self, run: Run, results: list[AttemptResult]) -> int:
        last = results[-1]
        o = last.outcome
        if self._received == signal.SIGINT and o.status == "killed":
            o = Outcome("stopped", "signal", 130, signal.SIGINT)
        run.finish(o.status, end_reason=o.end_reason, exit_code=o.exit_code, signal=o.signal, failure=last.failure)
        took = format_duration(last.ended - results[0].started)
        reason = "" if o.end_reason == "exit" else f"{o.end_reason}, "
        if o.end_reason == "signal" and o.signal is not None:
            reason = f"{signal_name(o.signal)}, "  # which signal, not "signal"
        culprit = (last.failure or {}).get("culprit") or {}
        on = f" on rank {culprit['rank']}" if isinstance(culprit.get("rank"), int) else ""
        if isinstance(culprit.get("alike"), list) and culprit["alike"]:
            on = f" on {ranks_text(culprit['alike'])} alike"
        # a guess below 0.5 is a hint, as the diagnosis calls it: said as one, not as the cause
        reading = (
            f"looks like {last.category}{on}"
            if last.confidence >= 0.5
            else f"no clear cause, a hint: {last.category}{on}; flightlog diagnose {run.id[:12]}"
        )
        detail = "" if o.succeeded else f" ({reason}exit code {o.exit_code}, {reading})"
        tries = f" after {len(results)} attempts" if len(results) > 1 else ""
        but = ""
        if o.succeeded and last.ended_nonfinite is not None:
            key, value, line = last.ended_nonfinite
            said = "NaN" if "nan" in value.lower() else "infinite"
            but = f"; but its {key} ended {said} ({line[:160]}): flightlog diagnose {run.id[:12]}"
        say(f"run {run.id} {o.status}{detail} in {took}{tries}{but}")
        return o.exit_code


def last_checkpoint(client: Any, run_ids: list[str]) -> str | None:
    """The path of the latest checkpoint recorded on these runs (highest step, then latest), or None.

    ``flightlog run --resume`` hands it to the new attempt; a pipeline hands it to a step's retry."""
    checkpoints = [a for run_id in run_ids for a in client.artifacts(run_id) if a.kind == "checkpoint"]
    if not checkpoints:
        return None
    last = max(checkpoints, key=lambda a: (a.step if a.step is not None else -1, a.time))
    if last.uri and last.uri.startswith("cas:"):
        return str(client.artifact_store.path_of(last.uri))
    return str(last.source or "")


def _classify(
    outcome: Outcome,
    returncode: int,
    timed_out: bool,
    oom_killed: bool,
    traceback_text: str | None,
    last_lines: list[str],
    memory_share: float | None = None,
) -> tuple[str, float]:
    if outcome.succeeded:
        return "none", 0.0
    classified: tuple[str, float] | None = features().ask(
        "flightlog_classify_failure",
        exit_code=outcome.exit_code,
        signal=outcome.signal,
        timed_out=timed_out,
        oom_killed=oom_killed,
        traceback_text=traceback_text,
        last_lines=last_lines,
        memory_share=memory_share,
    )
    if classified is None:  # no diagnose feature in this installation: a failure, unclassified
        return "code_error", 0.3
    return classified


def _ended_nonfinite(last_lines: list[str]) -> tuple[str, str, str] | None:
    """``(key, value, line)`` when the run's last lines print its loss (or its gradient norm)
    non-finite to the end: the diagnosis's reading, asked only when one of the lines names a NaN
    or an infinity — a healthy run's end costs one regex over the lines in memory, never a look
    into the store (every pipeline step ends here)."""
    if not any(_NONFINITE_WORD.search(line) for line in last_lines):
        return None
    try:
        answer = features().ask("flightlog_ended_nonfinite", last_lines=last_lines)
    except Exception as exc:  # noqa: BLE001 - the run succeeded: only its closing line loses a word
        say(f"whether the loss ended NaN was not read: {type(exc).__name__}: {exc}")
        return None
    return (str(answer[0]), str(answer[1]), str(answer[2])) if answer else None


def _hang_config() -> dict[str, Any]:
    """The hang watch's settings as the run's configuration evidence (what diagnosis quotes)."""
    s = hang_settings()
    return {
        "enabled": s.enabled,
        "factor": s.factor,
        "min_s": s.floor,
        "max_s": s.ceiling,
        "repeat_s": s.repeat,
        "signal": s.signal,
        "flight_recorder_entries": s.fr_buffer,
    }


def _observe_ranks(run: Run, attempt: int, pid: int, hangs: HangCollector | None) -> RankObserver | None:
    """The attempt's observer of the ranks the workload's launcher starts (runner/ranks.py);
    None where it cannot start (the run goes on without it)."""
    try:
        observer = RankObserver(run, attempt, pid, collector=hangs)
        return observer.look_from(hangs) if hangs is not None else observer.start()
    except Exception as exc:  # noqa: BLE001 - the ranks' table is evidence, never a reason to fail
        say(f"the ranks of this attempt are not observed: {type(exc).__name__}: {exc}")
        return None


def _tree_cgroup(run: Run, attempt: int) -> Any:
    """A cgroup of the attempt's own to hold the workload's tree, or None where none can be made
    (docs/runner.md says what can then escape)."""
    if not sys.platform.startswith("linux"):
        return None
    from flightlog.resources.cgroup import CgroupUnavailable, create_tree_cgroup

    try:
        return create_tree_cgroup(f"{run.id[:12]}-a{attempt}")
    except CgroupUnavailable:
        return None


def _seed(opts: RunnerOptions) -> Seed | None:
    """The seed of this attempt's workload, where the warm runner's spare planted one
    (``runner/seed.py``) and the attempt can use it: not with a memory limit, whose cgroup is
    made with its size (or whose rlimit needs a ``preexec_fn``); that one is dismissed."""
    if opts.memory_limit is not None:
        discard_seed(wait=False)
        return None
    return take_seed()


def _keeper(tree: Any, env: dict[str, str]) -> Keeper | None:
    """The attempt's keeper (Linux; None elsewhere, or when it cannot start: the runner still
    cleans up after itself, only its own death is then not covered)."""
    if not sys.platform.startswith("linux"):
        return None
    procs = os.path.join(tree.path, "cgroup.procs") if tree is not None else None
    marks = [f"{MARK[0]}={MARK[1]}", *(f"{k}={env[k]}" for k in ("FLIGHTLOG_RUN_ID", "FLIGHTLOG_ATTEMPT"))]
    try:
        return Keeper.start(procs, marks)
    except OSError as exc:
        say(
            f"cannot start the process that outlives a killed runner ({exc}): if flightlog run is killed, "
            "what the workload started may keep running"
        )
        return None


def _preexec(tree: Any, opts: RunnerOptions) -> Callable[[], None] | None:
    """What runs in the child between fork and exec: asking for SIGKILL when the runner dies,
    joining the attempt's cgroup (the memory limit's, or one that only holds the tree), setting
    an rlimit. Only async-signal-safe work: the runner has threads. Its own process group is
    Popen's ``process_group=0``; the handlers of forwarded signals revert to the default at exec
    by themselves."""
    deathsig = death_signal()
    join = tree.preexec() if tree is not None else None
    rlimit = None
    if opts.memory_limit is not None and opts.memory_limit_mode == "rlimit":
        from flightlog.resources import rlimit_preexec

        rlimit = rlimit_preexec(opts.memory_limit)
    if deathsig is None and join is None and rlimit is None:
        return None

    def setup() -> None:  # runs in the child between fork and exec: only async-signal-safe work
        if deathsig is not None:
            deathsig()
        if join is not None:
            join()
        if rlimit is not None:
            rlimit()

    return setup


def _exit_fd(pid: int) -> int | None:
    """A descriptor that becomes readable the moment process ``pid`` exits (Linux's pidfd), or None."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _wait_child(child: subprocess.Popen[bytes] | SeededProcess, exit_fd: int | None, seconds: float) -> int:
    """``child.wait(timeout=seconds)``, woken the moment the child exits: ``Popen.wait`` sleeps
    up to 50 ms between looks, which a short step would wait out after its workload ended."""
    if exit_fd is None:
        return child.wait(timeout=seconds)
    select.select([exit_fd], [], [], seconds)
    code = child.poll()
    if code is None:
        raise subprocess.TimeoutExpired(child.args, seconds)
    return code


def _stdin() -> int | None:
    """Inherit stdin, except a terminal: the workload runs in its own (background) process
    group, and reading the terminal from there would stop it with SIGTTIN."""
    try:
        return subprocess.DEVNULL if sys.stdin is not None and sys.stdin.isatty() else None
    except (ValueError, OSError):
        return subprocess.DEVNULL


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _default_name(command: list[str]) -> str:
    """``python train.py`` → train.py; ``python -m pkg.train`` → pkg.train; ``./job.sh`` → job.sh."""
    args = list(command)
    interpreters = ("python", "python3", "bash", "sh", "uv", "env", "node", "Rscript")
    while args and (os.path.basename(args[0]).rstrip("0123456789.") in interpreters or args[0].startswith("-")):
        if args[0] == "-m" and len(args) > 1:
            return args[1]
        if args[0] == "-c":
            return f"{os.path.basename(command[0])} -c"
        args = args[1:]
    base = os.path.basename(args[0]) if args else os.path.basename(command[0])
    return base[:80]
