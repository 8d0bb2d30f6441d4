"""``stalled``: a running run went silent — no metric, no log line, no heartbeat.

    - name: silent
      kind: stalled
      after: 15m                       # silence that counts as stalled
      watch: [metrics, logs, heartbeat]  # what counts as a sign of life (default: all)

Fires ``after`` the last sign of life (counted from the start for a run that never showed
one) while the run is running; resolves when it shows life again or ends. Resource samples
are not signs of life: a hung process still has a resource sampler around it. A heartbeat is
the run's ``heartbeat`` timeline instant (``run._w.add_record("timeline", data={"heartbeat": t})``
in custom code), for workloads that neither log nor report metrics for long stretches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flightlog.alerts.delta import Cycle, Needs, RunDelta
from flightlog.alerts.kinds.base import EvalEnv, Kind, PerRun, run_labels
from flightlog.alerts.rules import Rule
from flightlog.alerts.schema import Fields
from flightlog.alerts.types import Signal
from flightlog.timefmt import format_duration

__all__ = ["KIND", "StalledSpec", "WATCHABLE"]

WATCHABLE = ("metrics", "logs", "heartbeat")
#: seconds a run's first data may take to reach the store (a few flush intervals)
_FIRST_DATA_GRACE = 2.0
#: seconds the capture may hold a stream's last line before storing it (its ``group_idle``)
_LOG_HOLD = 0.5


@dataclass(frozen=True)
class StalledSpec:
    after: float
    watch: tuple[str, ...] = WATCHABLE


def parse(f: Fields) -> StalledSpec | None:
    if f.has("after") and f.has("for"):
        f.fail("for", "give after or for, not both")
    after = f.duration("after") if f.has("after") else f.duration("for")
    if after is None and not f.has("after") and not f.has("for"):
        f.fail((), "needs the field 'after': how long a silence counts as stalled (e.g. after: 15m)")
    watch = f.text_list("watch", choices=WATCHABLE) or list(WATCHABLE)
    return None if after is None else StalledSpec(after, tuple(watch))


@dataclass
class _Life:
    start: float
    metrics: float | None = None
    logs: float | None = None
    heartbeat: float | None = None
    fresh: float | None = None  # how far the run's data has reached the store (any kind of data)

    def judged_at(self, now: float, after: float, watch: Sequence[str]) -> float:
        """The moment a silence is measured to: now, less what the data is known to lag behind
        (a log line on its way to the store is no silence), by at most ``after``. Before any of
        the run's data has reached the store, its lag is not known yet: the first flush may
        still be on its way (start-up, the flush interval, a loaded machine), so up to
        ``_FIRST_DATA_GRACE`` of it is not counted as silence. Captured log lines lag the
        resource samples that tell how current the data is: the capture holds a stream's last
        line up to ``_LOG_HOLD`` for a continuation, so that much of a log silence is not
        counted either."""
        if self.fresh is None:
            if self.metrics is None and self.logs is None and self.heartbeat is None:
                return max(self.start, now - min(after, _FIRST_DATA_GRACE))
            return now
        newest = max(t for t in (self.fresh, self.metrics, self.logs, self.heartbeat, self.start) if t is not None)
        hold = _LOG_HOLD if "logs" in watch else 0.0
        return max(now - after, min(now, newest - hold))

    def last(self, watch: Sequence[str]) -> float:
        seen = [t for t in (getattr(self, w) for w in watch) if t is not None]
        return max([self.start, *seen])


class StalledEvaluator(PerRun):
    def __init__(self, rules: Sequence[Rule]) -> None:
        super().__init__(rules)
        self._life: dict[str, _Life] = {}
        self._firing: dict[tuple[str, str], float] = {}  # → the last sign of life before the silence

    def needs(self) -> Needs:
        return Needs(all_metrics=any("metrics" in r.spec.watch for r in self.rules), activity=True)

    def evaluate(self, cycle: Cycle, env: EvalEnv) -> list[Signal]:
        cycle.note_metric_times()
        return super().evaluate(cycle, env)

    def forget(self, run_id: str) -> None:
        self._life.pop(run_id, None)
        self._firing = {k: v for k, v in self._firing.items() if k[1] != run_id}

    def _update(self, delta: RunDelta) -> _Life:
        run = delta.run
        life = self._life.get(run.id)
        if life is None:
            life = self._life[run.id] = _Life(run.started or run.created or 0.0)
        if delta.last_metric is not None and (life.metrics is None or delta.last_metric > life.metrics):
            life.metrics = delta.last_metric
        if delta.last_log is not None and (life.logs is None or delta.last_log > life.logs):
            life.logs = delta.last_log
        if delta.heartbeat is not None and (life.heartbeat is None or delta.heartbeat > life.heartbeat):
            life.heartbeat = delta.heartbeat
        if delta.fresh is not None and (life.fresh is None or delta.fresh > life.fresh):
            life.fresh = delta.fresh
        return life

    def evaluate_run(self, delta: RunDelta, env: EvalEnv) -> list[Signal]:
        rules = [r for r in self.rules if r.name in delta.rules]
        if not rules:
            return []
        life = self._update(delta)
        out: list[Signal] = []
        if not delta.running or delta.run.status != "running":
            # queued runs are not stalled; an ended one is resolved by its end, unless it showed
            # life again before it ended (seen only now, in its last points)
            for rule in rules:
                key = (rule.name, delta.run.id)
                last = life.last(rule.spec.watch)
                if key in self._firing and last > self._firing[key]:
                    before = self._firing.pop(key)
                    out.append(self._signal(rule, delta, "clear", last, last - before, before, "activity_resumed"))
            return out
        for rule in rules:
            spec: StalledSpec = rule.spec
            last = life.last(spec.watch)
            silent = life.judged_at(env.now, spec.after, spec.watch) - last
            key = (rule.name, delta.run.id)
            if silent >= spec.after and key not in self._firing:
                self._firing[key] = last
                out.append(self._signal(rule, delta, "firing", last + spec.after, silent, last))
            elif silent < spec.after and key in self._firing:
                before = self._firing.pop(key)  # the silence lasted from `before` to `last`
                out.append(self._signal(rule, delta, "clear", last, last - before, before, "activity_resumed"))
        return out

    def _signal(
        self, rule: Rule, delta: RunDelta, state: str, at: float, silent: float, last: float, reason: str | None = None
    ) -> Signal:
        spec: StalledSpec = rule.spec
        return Signal(
            rule.name,
            run_labels(rule, delta.run),
            "firing" if state == "firing" else "clear",
            at,
            silent,
            run_id=delta.run.id,
            project=delta.run.project,
            reason=reason,
            fields={
                "after": format_duration(spec.after),
                "silent_for": format_duration(silent),
                "watch": ", ".join(spec.watch),
            },
            evidence={"last_sign_of_life": last, "silent_seconds": silent, "watch": list(spec.watch)},
        )


KIND = Kind(
    name="stalled",
    doc="no metric, log or heartbeat for a while, while the run is running",
    fields=("after", "silent_for", "watch"),
    default_summary="run {run.name} ({run.short_id}) has been silent for {silent_for} (no {watch})",
    parse=parse,
    evaluators=lambda rules: [StalledEvaluator(rules)] if rules else [],
)
