"""The pipeline controller: one parent run, each step attempt a child run under ``flightlog run``.

One loop on the main thread: start every step whose dependencies are done (up to
``max_parallel``), reuse a cached result where the cache key matches, poll running steps,
retry a failure whose category the step retries on (with exponential backoff and the last
checkpoint in ``FLIGHTLOG_RESUME_FROM``), and skip what lies downstream of a failure or a
failed gate, with the reason. SIGINT / SIGTERM are forwarded once to every running step; the
steps' runners record them stopped / killed, and the pipeline run ends the same way. Every
change of a step's state is appended to the pipeline run (:mod:`flightlog.pipeline.state`).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flightlog.client import Client
from flightlog.config import Settings
from flightlog.errors import FlightlogError
from flightlog.ids import new_run_id
from flightlog.notices import notice
from flightlog.pipeline.cachekey import MissingInput, cache_key
from flightlog.pipeline.cachemiss import explain_miss
from flightlog.pipeline.executors import StepLaunch, open_executor
from flightlog.pipeline.reuse import find_reusable, output_digests
from flightlog.pipeline.spec import PipelineSpec, StepSpec
from flightlog.pipeline.state import DONE, EVIDENCE_KIND, FINAL, StepState, said_once
from flightlog.pipeline.wakeup import SignalWakeup
from flightlog.runner.options import child_run_argv, retry_backoff
from flightlog.sdk import init
from flightlog.sdk.control import control
from flightlog.statuses import SIGNALLED_STATUSES
from flightlog.timefmt import format_duration

__all__ = ["run_pipeline", "PipelineResult", "Controller", "Options"]

# variables of an enclosing run that must not leak into the steps' own runs
_RUN_SCOPED = (
    "FLIGHTLOG_RUN_ID",
    "FLIGHTLOG_ATTEMPT",
    "FLIGHTLOG_CAPTURED",
    "FLIGHTLOG_RESUME_FROM",
    "FLIGHTLOG_STEP_PARAMS",
    "FLIGHTLOG_GATE",
)
# the loop polls quickly right after something happened, then backs off while steps run long
# (a local step's end wakes it at once: SIGCHLD)
_POLL_MIN, _POLL_MAX = 0.002, 0.1


@dataclass
class PipelineResult:
    run_id: str
    name: str
    status: str
    steps: dict[str, StepState]

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "name": self.name,
            "status": self.status,
            "steps": {n: s.to_dict() for n, s in self.steps.items()},
        }


@dataclass
class _Running:
    step: str
    run_id: str
    handle: Any
    started: float
    key_body: dict[str, Any] = field(default_factory=dict)


@dataclass
class Options:
    max_parallel: int = 4
    executor: str = "local"
    use_cache: bool = True
    quiet: bool = False
    verbose: bool = False


@dataclass
class Controller:
    spec: PipelineSpec
    options: Options
    resume: Any = None  # the PipelineView of the run being resumed
    states: dict[str, StepState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.workdir = Path(self.spec.workdir or os.getcwd()).resolve()
        self.spec.workdir = str(self.workdir)
        self._signal: int | None = None
        self._running: dict[str, _Running] = {}
        self._retry_at: dict[str, float] = {}
        self._steps = {s.name: s for s in self.spec.steps}
        self._changes = 0  # step state changes so far: the loop polls fast while they happen

    # ── output ──────────────────────────────────────────────────────────────
    def say(self, message: str) -> None:
        if not self.options.quiet:
            notice(message)

    # ── the run ─────────────────────────────────────────────────────────────
    def execute(self) -> PipelineResult:
        spec = self.spec
        # the executor first: one that cannot start (Ray missing) fails before any run exists
        executor = open_executor(self.options.executor, max_parallel=self.options.max_parallel)
        self.executor = executor
        # meanwhile, the run starts; FLIGHTLOG_HOME as each step will have it, so that the executor
        # gets ready for the same store
        executor.prepare(
            {
                **{k: v for k, v in os.environ.items() if k not in _RUN_SCOPED},
                "FLIGHTLOG_HOME": str(Settings.from_env().home.resolve()),
            }
        )
        run_id = self.resume.run.id if self.resume else new_run_id()
        saved = {k: os.environ.pop(k) for k in _RUN_SCOPED if k in os.environ}  # the pipeline is its own run
        try:
            run = init(
                project=spec.project or (self.resume.run.project if self.resume else None),
                name=spec.name,
                id=run_id,
                resume=self.resume is not None,
                tags={"pipeline": spec.name},
                params={s.name: s.params for s in spec.steps if s.params} or None,
                resources=False,
                console=False,
                quiet=True,
            )  # the steps' runners capture; the pipeline reports itself
        except BaseException:
            executor.close()
            raise
        finally:
            os.environ.update(saved)
        self.run = run
        self.client = Client()
        self.env = self._child_env()
        self._init_states(run.attempt)
        run.log_evidence(
            EVIDENCE_KIND,
            "definition",
            {
                "spec": spec.to_dict(),
                "options": {
                    "max_parallel": self.options.max_parallel,
                    "executor": self.options.executor,
                    "use_cache": self.options.use_cache,
                },
            },
        )
        control(run).persist()  # journaled before any step starts: `resume` needs it after a kill -9
        verb = f"resumed (attempt {run.attempt})" if self.resume else "started"
        self.say(
            f"pipeline {spec.name} run {run.id} {verb}: {len(spec.steps)} steps, "
            f"up to {self.options.max_parallel} in parallel on {self.options.executor}"
        )
        self._wakeup = SignalWakeup(self._on_signal).install()
        try:
            self._loop()
        except BaseException as exc:
            self._abort(exc)
            raise
        finally:
            executor.close()
            self._wakeup.restore()
        status = self._finish()
        self.client.close()
        return PipelineResult(run.id, spec.name, status, self.states)

    def _child_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _RUN_SCOPED}
        env["FLIGHTLOG_HOME"] = str(self.run.settings.home.resolve())
        env["FLIGHTLOG_PROJECT"] = self.run.project
        env["FLIGHTLOG_PIPELINE_RUN_ID"] = self.run.id
        return env

    def _init_states(self, attempt: int) -> None:
        prior = self.resume.steps if self.resume else {}
        for s in self.spec.steps:
            old = prior.get(s.name)
            if old is not None and old.status in DONE:
                self.states[s.name] = old  # kept from the earlier attempt: not run again
            else:
                self.states[s.name] = StepState(
                    s.name, kind=s.kind, pipeline_attempt=attempt, attempts=list(old.attempts) if old else []
                )
                if old is not None and old.run:
                    self.states[s.name].run = old.run

    # ── signals ─────────────────────────────────────────────────────────────
    def _on_signal(self, signum: int, frame: Any) -> None:
        first = self._signal is None
        self._signal = signum
        for running in list(self._running.values()):
            try:
                self.executor.stop(running.handle, signum if first else signal.SIGKILL)
            except Exception:
                pass

    # ── the loop ────────────────────────────────────────────────────────────
    def _loop(self) -> None:
        order = self.spec.order()
        pause = _POLL_MIN
        while True:
            before = self._changes
            self._reap()
            if self._signal is None:
                self._skip_blocked(order)
                self._start_ready(order)
            elif not self._running:
                self._mark_unstarted(order)
            if not self._running and all(self.states[n].status in FINAL for n in order):
                return
            if not self._running and not self._retry_at and self._signal is None and not self._ready(order):
                self._skip_blocked(order)  # nothing runs and nothing can: every step left is blocked
                if all(self.states[n].status in FINAL for n in order):
                    return
            pause = _POLL_MIN if self._changes != before or self._signal is not None else min(_POLL_MAX, pause * 1.5)
            self._wakeup.wait(pause, self.executor.wakeup_fds())

    def _ready(self, order: list[str]) -> list[str]:
        now = time.time()
        out = []
        for name in order:
            state = self.states[name]
            if state.status not in ("pending", "retrying") or name in self._running:
                continue
            if state.status == "retrying" and self._retry_at.get(name, 0) > now:
                continue
            if all(self.states[d].status in DONE for d in self._steps[name].needs):
                out.append(name)
        return out

    def _skip_blocked(self, order: list[str]) -> None:
        for name in order:
            state = self.states[name]
            if state.status != "pending":
                continue
            for dep in self._steps[name].needs:
                dep_state = self.states[dep]
                if dep_state.status in FINAL and dep_state.status not in DONE:
                    origin = dep_state.reason if dep_state.status == "skipped" and dep_state.reason else None
                    what = "gate" if self._steps[dep].kind == "gate" else "step"
                    reason = origin or f"upstream {what} {dep!r} {dep_state.status}" + (
                        f": {said_once(dep_state.reason)}" if dep_state.reason else ""
                    )
                    self._update(name, status="skipped", reason=reason, ended=time.time())
                    self.say(f"  - {name} skipped: {reason}")
                    break

    def _mark_unstarted(self, order: list[str]) -> None:
        status = "stopped" if self._signal == signal.SIGINT else "killed"
        for name in order:
            if self.states[name].status == "pending":
                self._update(
                    name, status="skipped", reason=f"never started: the pipeline was {status}", ended=time.time()
                )
            elif self.states[name].status == "retrying":  # its failed attempt stands; the retry never came
                self._update(
                    name,
                    status="failed",
                    ended=time.time(),
                    reason=f"{self.states[name].reason} (not retried: the pipeline was {status})",
                )

    def _start_ready(self, order: list[str]) -> None:
        for name in self._ready(order):
            if len(self._running) >= self.options.max_parallel:
                return
            self._start(self._steps[name])

    def _start(self, step: StepSpec) -> None:
        state = self.states[step.name]
        self._retry_at.pop(step.name, None)
        try:
            key, body = cache_key(self.spec.name, step, self.workdir, self.run.settings.home / "cache")
        except (MissingInput, FlightlogError) as exc:
            message = str(exc.message if isinstance(exc, FlightlogError) else exc)
            self._update(step.name, status="failed", reason=message, category="missing_file", ended=time.time())
            self.say(f"  x {step.name} failed: {message}")
            return
        state.cache_key = key
        state.cache_parts = body
        # a metric gate reads another run's metric, which its key cannot see: it always runs (it is cheap)
        cacheable = step.cache and not any(c.metric for c in step.gate)
        if self.options.use_cache and cacheable and state.status == "pending":
            hit = self._cached(step, key)
            if hit is not None:
                run_id, outputs = hit
                now = time.time()
                self._update(
                    step.name,
                    status="cached",
                    run=run_id,
                    cached_from=run_id,
                    outputs=outputs,
                    started=now,
                    ended=now,
                    reason=None,
                    cache_parts=body,
                    cache_miss=None,
                )
                self.run.log_event(f"step {step.name} reused run {run_id} (cache key {key[:12]})", component="pipeline")
                for rel, digest in outputs.items():  # lineage: the pipeline used what that run produced
                    control(self.run).add_input(
                        kind="cached-step-output",
                        path=f"{step.name}/{rel}",
                        source=str(self.workdir / rel),
                        size=None,
                        sha256=digest,
                        uri=None,
                        attempt=self.run.attempt,
                        meta={"step": step.name, "reused_run": run_id},
                    )
                self.say(f"  = {step.name} cached: reused run {run_id[:12]}")
                return
        if state.status != "retrying":  # a retry runs for the reason its first attempt did
            state.cache_miss = self._miss(step, body)
        self._launch(step, key, body)

    def _miss(self, step: StepSpec, body: dict[str, Any]) -> dict[str, Any] | None:
        """Why the step runs although it succeeded before (None for a first run); an explanation
        that cannot be made never stops the step."""
        try:
            return explain_miss(self.client, self.run.project, self.spec.name, step, body, self.options.use_cache)
        except Exception as exc:  # noqa: BLE001 - evidence, not a reason to fail the pipeline
            self.say(f"could not explain why step {step.name} runs again: {exc}")
            return None

    def _cached(self, step: StepSpec, key: str) -> tuple[str, dict[str, str]] | None:
        return find_reusable(self.client, self.run.project, step, key, self.workdir, self.run.settings.home / "cache")

    def _output_digests(self, step: StepSpec) -> dict[str, str]:
        return output_digests(step, self.workdir, self.run.settings.home / "cache")

    def _launch(self, step: StepSpec, key: str, body: dict[str, Any]) -> None:
        state = self.states[step.name]
        run_id = new_run_id()
        argv = child_run_argv(
            project=self.run.project,
            name=f"{self.spec.name}.{step.name}",
            parent=self.run.id,
            run_id=run_id,
            params=step.params,
            tags={"pipeline": self.spec.name, "pipeline_step": step.name, "cache_key": key},
        )
        if step.timeout is not None:
            argv += ["--timeout", f"{step.timeout}s"]
        if step.memory_limit is not None:
            argv += ["--memory-limit", str(step.memory_limit)]
        previous_runs = [a["run"] for a in state.attempts if a.get("run")]
        if previous_runs:
            from flightlog.runner.runner import last_checkpoint

            checkpoint = last_checkpoint(self.client, previous_runs)
            if checkpoint:
                argv += ["--resume-from", checkpoint]
        env = dict(self.env, FLIGHTLOG_STEP=step.name, FLIGHTLOG_STEP_PARAMS=json.dumps(step.params))
        argv += ["--", *self._body(step, env)]
        started = time.time()
        handle = self.executor.start(StepLaunch(run_id, argv, env, str(self.workdir), self.options.verbose))
        self._running[step.name] = _Running(step.name, run_id, handle, started, body)
        attempts = [
            *state.attempts,
            {"run": run_id, "status": "running", "started": started, "pipeline_attempt": self.run.attempt},
        ]
        self._update(
            step.name,
            status="running",
            run=run_id,
            attempts=attempts,
            cache_key=key,
            cache_parts=body,
            started=state.started if state.status == "retrying" else started,
            ended=None,
        )
        n = len(state.attempts)
        self.say(f"  > {step.name} started (run {run_id[:12]}" + (f", attempt {n}" if n > 1 else "") + ")")

    def _body(self, step: StepSpec, env: dict[str, str]) -> list[str]:
        if step.command is not None:
            if step.command[0] in ("python", "python3"):  # the controller's interpreter: the same environment
                return [sys.executable, *step.command[1:]]
            return list(step.command)
        if step.function is not None:
            return [sys.executable, "-m", "flightlog.pipeline.stepmain", step.function]
        step_runs = {dep: self.states[dep].run for dep in step.needs if self.states[dep].run}
        checks = []
        for check in step.gate:
            d = check.to_dict()
            for key in ("expect", "data"):
                if key in d:
                    d[key] = str(self.workdir / d[key])
            checks.append(d)
        env["FLIGHTLOG_GATE"] = json.dumps({"checks": checks, "step_runs": step_runs})
        return [sys.executable, "-m", "flightlog.pipeline.gatemain"]

    # ── ends of attempts ────────────────────────────────────────────────────
    def _reap(self) -> None:
        for name, running in list(self._running.items()):
            code = self.executor.poll(running.handle)
            if code is None:
                continue
            del self._running[name]
            self._ended(self._steps[name], running, code)

    def _step_run(self, run_id: str) -> Any:
        deadline = time.monotonic() + 10
        while True:
            try:
                info = self.client.run(run_id, exact=True)
                if info.is_finished or time.monotonic() > deadline:
                    return info
            except FlightlogError:
                if time.monotonic() > deadline:
                    return None
            time.sleep(0.05)

    def _ended(self, step: StepSpec, running: _Running, code: int) -> None:
        state = self.states[step.name]
        info = self._step_run(running.run_id)
        status = info.status if info is not None and info.is_finished else ("succeeded" if code == 0 else "failed")
        failure = (info.failure or {}) if info is not None else {}
        category = failure.get("category") if status != "succeeded" else None
        if info is None and code == 127:
            category = "dependency_error"
        ended = time.time()
        attempts = [dict(a) for a in state.attempts]
        attempts[-1].update(status=status, ended=ended, exit_code=code, category=category)
        if status == "succeeded":
            try:
                outputs = self._output_digests(step)
            except MissingInput as exc:
                self._update(
                    step.name, status="failed", attempts=attempts, reason=str(exc), category="missing_file", ended=ended
                )
                self.say(f"  x {step.name} failed: {exc}")
                return
            self._record_artifacts(step, running.run_id, running.key_body.get("inputs") or {}, outputs)
            self._update(
                step.name,
                status="succeeded",
                attempts=attempts,
                outputs=outputs,
                ended=ended,
                reason=None,
                category=None,
            )
            self.say(f"  ✓ {step.name} succeeded in {format_duration(ended - running.started)}")
            return
        reason = _reason(step, failure, status)
        retries_used = len([a for a in attempts if a.get("pipeline_attempt") == self.run.attempt]) - 1
        if status == "failed" and self._signal is None and retries_used < step.retries and category in step.retry_on:
            delay = retry_backoff(step.retry_delay, retries_used + 1)
            self._retry_at[step.name] = time.time() + delay
            self._update(step.name, status="retrying", attempts=attempts, reason=reason, category=category)
            self.say(f"  ↻ {step.name} failed ({category}); retry {retries_used + 1}/{step.retries} in {delay:.1f}s")
            return
        if status == "failed" and category and step.retries and category not in step.retry_on:
            reason += f" (not retried: {category} is not in retry_on)"
        self._update(step.name, status=status, attempts=attempts, reason=reason, category=category, ended=ended)
        self.say(f"  x {step.name} {status}: {said_once(reason)}")

    def _record_artifacts(self, step: StepSpec, run_id: str, inputs: dict[str, str], outputs: dict[str, str]) -> None:
        """Declared inputs and outputs on the step's run, by content hash: lineage links the steps."""
        try:
            from flightlog.store.base import ingest_one

            for rel, digest in inputs.items():
                ingest_one(
                    self.client.store,
                    run_id,
                    "artifact",
                    origin="pipeline",
                    role="input",
                    kind="step-input",
                    path=rel,
                    source=str(self.workdir / rel),
                    size=None,
                    sha256=digest,
                    uri=None,
                )
            for rel, digest in outputs.items():
                path = self.workdir / rel
                size = path.stat().st_size if path.is_file() else None
                ingest_one(
                    self.client.store,
                    run_id,
                    "artifact",
                    origin="pipeline",
                    role="output",
                    kind="step-output",
                    path=rel,
                    source=str(path),
                    size=size,
                    sha256=digest,
                    uri=None,
                )
        except Exception as exc:  # lineage is evidence, not a reason to fail the step
            self.say(f"could not record the outputs of step {step.name}: {exc}")

    # ── state ───────────────────────────────────────────────────────────────
    def _update(self, name: str, **changes: Any) -> None:
        state = self.states[name]
        for k, v in changes.items():
            setattr(state, k, v)
        state.pipeline_attempt = self.run.attempt
        self._changes += 1
        self.run.log_evidence(EVIDENCE_KIND, f"step:{name}", state.to_dict())
        control(self.run).persist()  # a step's state outlives a kill -9 of the controller a moment later
        if state.status in FINAL:
            level = "info" if state.status in DONE else "error" if state.status == "failed" else "warning"
            self.run.log_event(
                f"step {name} {state.status}" + (f": {said_once(state.reason)}" if state.reason else ""),
                level=level,
                component="pipeline",
            )

    def _abort(self, exc: BaseException) -> None:
        """The controller itself failed: stop the steps, and end the pipeline run with the error
        (never left for the exit hook to call succeeded)."""
        for running in self._running.values():
            try:
                self.executor.stop(running.handle, signal.SIGTERM)
            except Exception:
                pass
        try:
            self.run.fail(exc)
            self.client.close()
        except Exception:
            pass

    def _finish(self) -> str:
        states = self.states
        if self._signal is not None:
            status = "stopped" if self._signal == signal.SIGINT else "killed"
            self.run.finish(status, end_reason="signal", signal=self._signal)
            self.say(f"pipeline {self.spec.name} run {self.run.id} {status}")
            return status
        failed = [n for n in self.spec.order() if states[n].status not in DONE and states[n].status != "skipped"]
        if not failed:
            self.run.finish("succeeded")
            cached = sum(1 for s in states.values() if s.status == "cached")
            self.say(
                f"pipeline {self.spec.name} run {self.run.id} succeeded"
                + (f" ({cached} of {len(states)} steps reused from cache)" if cached else "")
            )
            return "succeeded"
        first = states[failed[0]]
        step = self._steps[first.name]
        failure = {
            "category": first.category or ("data_error" if step.kind == "gate" else "code_error"),
            "step": first.name,
            "step_run": first.run,
            "gate": step.kind == "gate",
            "message": f"{'gate' if step.kind == 'gate' else 'step'} {first.name} {first.status}: {said_once(first.reason) or ''}".strip(),
            "failed_steps": failed,
            "skipped_steps": [n for n, s in states.items() if s.status == "skipped"],
        }
        self.run.finish("failed", end_reason="exit", exit_code=1, failure=failure)
        what = "gate" if step.kind == "gate" else "step"
        self.say(
            f"pipeline {self.spec.name} run {self.run.id} failed at {what} {first.name}"
            + (f" ({first.status}): {said_once(first.reason)}" if first.reason else f" ({first.status})")
        )
        return "failed"


def _reason(step: StepSpec, failure: dict[str, Any], status: str) -> str:
    if status in SIGNALLED_STATUSES:
        return f"the step was {status}"
    message = failure.get("message") or ""
    exception = failure.get("exception")
    if exception in ("ExpectationFailed", "GateFailed"):  # a gate's own words say it all
        exception = None
    text = f"{exception}: {message}" if exception and message else message or exception or ""
    if not text and failure.get("last_lines"):
        text = str(failure["last_lines"][-1])
    end = failure.get("end_reason")
    if end and end not in ("exit", "exception"):
        text = f"{end}" + (f": {text}" if text else "")
    return text[:500] or f"exit code {failure.get('exit_code')}"


def run_pipeline(
    spec: PipelineSpec,
    *,
    max_parallel: int = 4,
    executor: str = "local",
    use_cache: bool = True,
    quiet: bool = False,
    verbose: bool = False,
) -> PipelineResult:
    """Run a validated pipeline here; this process is its controller."""
    if max_parallel < 1:
        from flightlog.errors import InvalidInput

        raise InvalidInput("--max-parallel must be 1 or more")
    return Controller(spec, Options(max_parallel, executor, use_cache, quiet, verbose)).execute()
