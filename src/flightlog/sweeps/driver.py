"""Running a sweep: a parent run, one child run per trial, early stopping from alert rules.

    result = run_sweep(CommandTarget(["python", "train.py", "--lr", "{lr}"]), space,
                       method="random", trials=20, metric="val_loss", goal="minimize", alerts="stop.yaml")

Each trial is a child run of the sweep's run (tags ``sweep=<sweep id>`` and ``trial=<n>``) with
the trial's params as its params. The objective is the last value of ``metric`` the trial
recorded (or what a function target returns). With ``alerts`` (an alert rules file, see
docs/alerting.md), a trial for which one of those rules fires is stopped early: a command gets
SIGINT (the run ends ``stopped``), a function sees ``trial.should_stop()`` turn true; either way
the trial is tagged ``early_stopped=<rule>`` and told to the sampler as pruned.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from flightlog.client import Client
from flightlog.errors import InvalidInput, NotFound
from flightlog.sdk import init
from flightlog.statuses import FAILED_STATUSES
from flightlog.sweeps.samplers import open_sampler
from flightlog.sweeps.space import Param

__all__ = ["Trial", "SweepResult", "CommandTarget", "FunctionTarget", "run_sweep", "AlertWatch"]

POLL = 0.2


@dataclass
class Trial:
    number: int
    params: dict[str, Any]
    run_id: str | None = None
    state: str = "running"  # complete | pruned | failed
    value: float | None = None
    status: str | None = None
    stopped_by: str | None = None
    run: Any = None  # the flightlog.Run of a function trial
    _watch: AlertWatch | None = field(default=None, repr=False)
    _checked: float = field(default=0.0, repr=False)

    def should_stop(self) -> bool:
        """True once an early-stopping rule fires for this trial (checked at most every 0.2 s)."""
        if self.stopped_by is not None:
            return True
        if self._watch is None or self.run_id is None or time.monotonic() - self._checked < POLL:
            return False
        self._checked = time.monotonic()
        self.stopped_by = self._watch.firing(self.run_id)
        return self.stopped_by is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "run_id": self.run_id,
            "params": self.params,
            "state": self.state,
            "value": self.value,
            "status": self.status,
            "stopped_by": self.stopped_by,
        }


@dataclass
class SweepResult:
    sweep_id: str
    metric: str
    goal: str
    method: str
    trials: list[Trial]

    @property
    def best(self) -> Trial | None:
        scored = [t for t in self.trials if t.value is not None and math.isfinite(t.value) and t.state != "failed"]
        if not scored:
            return None
        pick = min if self.goal == "minimize" else max
        return pick(scored, key=lambda t: t.value or 0.0)

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        return {
            "sweep": self.sweep_id,
            "metric": self.metric,
            "goal": self.goal,
            "method": self.method,
            "best": best.to_dict() if best else None,
            "trials": [t.to_dict() for t in self.trials],
        }


class AlertWatch:
    """Which of a rules file's rules fire for a run, read from the alert store the evaluator writes."""

    def __init__(self, client: Any, rules_file: str) -> None:
        from flightlog.alerts.config import load_config
        from flightlog.alerts.stores import open_alert_store

        self.path = rules_file
        self.rules = {r.name for r in load_config(rules_file).rules}
        if not self.rules:
            raise InvalidInput(f"{rules_file} has no rules: early stopping needs at least one")
        self._store = open_alert_store(client.store)

    def firing(self, run_id: str) -> str | None:
        try:
            alerts = self._store.alerts(state="firing", run_id=run_id)
        except Exception:
            return None
        return next((a.rule for a in alerts if a.rule in self.rules), None)


@dataclass
class SweepContext:
    client: Any
    sweep_id: str
    project: str
    name: str
    watch: AlertWatch | None


class Target(Protocol):
    def run(self, trial: Trial, ctx: SweepContext) -> None:
        """Run the trial to its end, setting ``run_id``, ``status``, ``stopped_by`` and (optionally) ``value``."""
        ...


class CommandTarget:
    """A command per trial, under ``flightlog run``; ``{name}`` in an argument becomes the param's value."""

    def __init__(self, command: Sequence[str]) -> None:
        if not command:
            raise InvalidInput(
                "nothing to run: put the command after --, e.g. flightlog sweep ... -- python train.py --lr {lr}"
            )
        self.command = list(command)

    def argv(self, params: dict[str, Any]) -> list[str]:
        out = []
        for arg in self.command:
            for name, value in params.items():
                arg = arg.replace("{" + name + "}", _text(value))
            out.append(arg)
        return out

    def run(self, trial: Trial, ctx: SweepContext) -> None:
        from flightlog.ids import new_run_id
        from flightlog.runner.options import child_run_argv

        trial.run_id = new_run_id()  # chosen here, so the watch knows the trial's run from the start
        cmd = child_run_argv(
            project=ctx.project,
            name=f"{ctx.name}-{trial.number}",
            parent=ctx.sweep_id,
            run_id=trial.run_id,
            tags={"sweep": ctx.sweep_id, "trial": str(trial.number)},
            params=trial.params,
        )
        if ctx.watch is not None:
            cmd += ["--alerts", ctx.watch.path]
        cmd += ["--", *self.argv(trial.params)]
        env = {k: v for k, v in os.environ.items() if k not in ("FLIGHTLOG_RUN_ID", "FLIGHTLOG_RESUME_FROM")}
        if not ctx.client.settings.url:
            env["FLIGHTLOG_HOME"] = str(ctx.client.settings.home)
        proc = subprocess.Popen(cmd, env=env)
        try:
            while proc.poll() is None:
                time.sleep(POLL)
                if ctx.watch is not None and trial.stopped_by is None:
                    trial.stopped_by = ctx.watch.firing(trial.run_id)
                    if trial.stopped_by is not None:
                        proc.send_signal(signal.SIGINT)  # the runner forwards it: the run ends "stopped"
        except BaseException:
            proc.send_signal(signal.SIGINT)
            proc.wait()
            raise


class FunctionTarget:
    """A Python function per trial, called with the :class:`Trial` (``trial.params``, ``trial.run``,
    ``trial.should_stop()``) inside its own child run; it may return the objective."""

    def __init__(self, fn: Callable[[Trial], Any]) -> None:
        self.fn = fn

    def run(self, trial: Trial, ctx: SweepContext) -> None:
        from flightlog.alerts.monitor import start_monitor

        run = init(
            project=ctx.project,
            name=f"{ctx.name}-{trial.number}",
            parent=ctx.sweep_id,
            params=trial.params,
            tags={"sweep": ctx.sweep_id, "trial": str(trial.number)},
            resources=False,
        )
        trial.run, trial.run_id, trial._watch = run, run.id, ctx.watch
        monitor = start_monitor(run, ctx.watch.path) if ctx.watch is not None else None
        try:
            value = self.fn(trial)
        except Exception as exc:
            run.fail(exc)
            trial.state = "failed"
            return
        finally:
            if monitor is not None:
                monitor.stop(final=False)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            trial.value = float(value)
        run.finish("stopped" if trial.stopped_by else "succeeded")


def _text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def run_sweep(
    target: Target,
    space: dict[str, Param],
    *,
    metric: str,
    goal: str = "minimize",
    method: str = "random",
    trials: int = 10,
    project: str | None = None,
    name: str | None = None,
    alerts: str | None = None,
    seed: int | None = None,
    client: Any = None,
    on_trial: Callable[[Trial], None] | None = None,
) -> SweepResult:
    """Run up to ``trials`` trials (a grid stops when its combinations run out)."""
    if goal not in ("minimize", "maximize"):
        raise InvalidInput(f"--goal {goal!r}: use minimize or maximize")
    if trials < 1:
        raise InvalidInput("--trials must be at least 1")
    if not space:
        raise InvalidInput("a sweep needs at least one --param NAME=SPEC")
    own = client is None
    client = client or Client()
    try:
        sampler = open_sampler(method, space, seed=seed, goal=goal)
        watch = AlertWatch(client, alerts) if alerts else None
        sweep = init(
            project=project,
            name=name or "sweep",
            resources=False,
            tags={"kind": "sweep"},
            params={
                "sweep.method": method,
                "sweep.metric": metric,
                "sweep.goal": goal,
                "sweep.trials": trials,
                **{f"sweep.space.{k}": repr(v) for k, v in space.items()},
            },
        )
        ctx = SweepContext(client, sweep.id, sweep.project, sweep.name or "sweep", watch)
        done: list[Trial] = []
        try:
            for number in range(trials):
                params = sampler.ask()
                if params is None:
                    break
                trial = Trial(number, params)
                target.run(trial, ctx)
                _score(trial, client, metric)
                if trial.stopped_by and trial.run_id:
                    client.edit_run(trial.run_id, tags={"early_stopped": trial.stopped_by})
                sampler.tell(params, trial.value, trial.state)
                if trial.value is not None and math.isfinite(trial.value):
                    sweep.log({metric: trial.value}, step=number)
                done.append(trial)
                if on_trial is not None:
                    on_trial(trial)
        except BaseException as exc:
            sweep.fail(exc)  # Ctrl-C: stopped; anything else: failed
            raise
        result = SweepResult(sweep.id, metric, goal, method, done)
        sweep.log_evidence("sweep", "trials", result.to_dict())
        sweep.finish()
        return result
    finally:
        if own:
            client.close()


def _score(trial: Trial, client: Any, metric: str) -> None:
    if trial.run_id is None:
        trial.state = "failed"
        return
    try:
        info = client.run(trial.run_id, exact=True)
    except NotFound:  # the trial never started (flightlog run refused its options)
        trial.state = "failed"
        return
    trial.status = info.status
    if trial.value is None:
        summary = info.metrics.get(metric)
        trial.value = summary.last if summary is not None else None
    if trial.state == "failed" or info.status in FAILED_STATUSES or (info.status == "stopped" and not trial.stopped_by):
        trial.state = "failed"
    elif trial.stopped_by:
        trial.state = "pruned"
    else:
        trial.state = "complete" if trial.value is not None else "failed"
