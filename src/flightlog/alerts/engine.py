"""One evaluation cycle: feed → evaluators → state tracker → router → dispatcher.

    engine = AlertEngine(config, feed, alert_store, lookup, dispatcher)
    engine.cycle()            # every settings.interval: what is new since the last cycle

The same engine runs in the runner (one run), the server and ``flightlog alerts watch`` (every
run), and in ``flightlog alerts test`` (a replay of a past run, in memory). An evaluator or a
notifier that fails is reported through ``on_error`` and the cycle goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flightlog.alerts.config import AlertConfig
from flightlog.alerts.delta import Cycle, Needs, run_fields
from flightlog.alerts.dispatch import Dispatcher
from flightlog.alerts.feeds.base import Feed
from flightlog.alerts.kinds import EvalEnv, Evaluator, rule_kinds
from flightlog.alerts.lookup import Lookup
from flightlog.alerts.routing import Router
from flightlog.alerts.state import Change, EndIncomplete, Tracker
from flightlog.alerts.stores.base import AlertStore
from flightlog.models import RunInfo

__all__ = ["AlertEngine", "CycleStats", "build_evaluators"]


@dataclass
class CycleStats:
    runs: int = 0
    signals: int = 0
    changes: list[Change] = field(default_factory=list)
    notifications: int = 0
    seconds: float = 0.0


def build_evaluators(config: AlertConfig) -> list[Evaluator]:
    by_kind: dict[str, list[Any]] = {}
    for rule in config.rules:
        by_kind.setdefault(rule.kind, []).append(rule)
    out: list[Evaluator] = []
    kinds = rule_kinds()
    for kind, rules in by_kind.items():
        out.extend(kinds[kind].evaluators(rules))
    return out


#: ended runs kept for another try at ending their alerts, at most
_UNENDED_MAX = 10_000


class AlertEngine:
    def __init__(
        self,
        config: AlertConfig,
        feed: Feed,
        store: AlertStore,
        lookup: Lookup,
        dispatcher: Dispatcher | None = None,
        *,
        clock: Callable[[], float] = time.time,
        replay: bool = False,
        on_error: Callable[[str], None] | None = None,
        load_run: str | None | bool = None,
    ) -> None:
        self.config = config
        self.feed = feed
        self.store = store
        self.lookup = lookup
        self.dispatcher = dispatcher
        self.clock = clock
        self.replay = replay
        self.on_error = on_error
        self.evaluators = build_evaluators(config)
        self._rule_needs = [(ev, frozenset(r.name for r in ev.rules), ev.needs()) for ev in self.evaluators]
        self.wanted = Needs.union(n for _, _, n in self._rule_needs)
        self.tracker = Tracker(store, {r.name: r for r in config.rules})
        self.router = Router(config, store, self._run_info)
        self._applies: dict[
            str, tuple[tuple[Any, ...], frozenset[str], Needs]
        ] = {}  # run → (what it was judged on, ...)
        self._runs: dict[str, RunInfo] = {}
        #: runs that ended but whose alerts could not be ended yet (the store refused the write):
        #: the feed says a run finished once, so they are tried again every cycle until it works
        self._unended: dict[str, RunInfo] = {}
        self._reported: set[str] = set()
        self._loaded = False
        self._load_run = load_run  # False: nothing; None: every open alert; an id: that run's

    # ── which rules watch which run ─────────────────────────────────────────
    def scope(self, run: RunInfo) -> tuple[frozenset[str], Needs]:
        hit = self._applies.get(run.id)
        if hit is not None and hit[0][0] == run.status and hit[0][1] is run.params and hit[0][2] is run.tags:
            return hit[1], hit[2]
        key = (run.status, run.params, run.tags)
        fields = run_fields(run)
        names: set[str] = set()
        for rule in self.config.rules:
            try:
                if rule.applies(fields, now=self.clock()):
                    names.add(rule.name)
            except Exception as exc:  # noqa: BLE001 - a filter that cannot judge this run skips it
                self._report(f"rule {rule.name}: its filter failed on run {run.id[:12]}: {exc}")
        rules = frozenset(names)
        needs = Needs()
        for _, ev_rules, ev_needs in self._rule_needs:
            if ev_rules & rules:
                needs = needs.merge(ev_needs)
        self._applies[run.id] = (key, rules, needs)
        return rules, needs

    def _needs_for(self, run: RunInfo) -> Needs:
        return self.scope(run)[1]

    def _run_info(self, run_id: str) -> dict[str, object] | None:
        run = self._runs.get(run_id)
        if run is None:
            try:
                run = self.lookup.store.get_run(run_id)
            except Exception:  # noqa: BLE001 - a deleted run: the alert goes out without it
                return None
        return {"id": run.id, "name": run.name, "project": run.project, "status": run.status}

    def _report(self, message: str) -> None:
        if message in self._reported:
            return
        self._reported.add(message)
        if len(self._reported) > 1000:
            self._reported.clear()
        if self.on_error is not None:
            self.on_error(message)

    # ── a cycle ─────────────────────────────────────────────────────────────
    def cycle(self, now: float | None = None, data: Cycle | None = None) -> CycleStats:
        """One evaluation: what the feed has (or ``data``, for a replay) through every rule."""
        started = time.perf_counter()
        now = self.clock() if now is None else now
        stats = CycleStats()
        if not self._loaded:
            self._loaded = True
            if self._load_run is not False:
                try:
                    self.tracker.load(self._load_run if isinstance(self._load_run, str) else None)
                except Exception as exc:  # noqa: BLE001
                    self._report(f"cannot read the open alerts: {exc}")
        if data is None:
            try:
                data = self.feed.poll(now, self._needs_for, self.wanted)
            except Exception as exc:  # noqa: BLE001 - the store may be busy or gone for a moment
                self._report(f"alert evaluation could not read the store: {exc}")
                data = Cycle()
        for delta in data.runs.values():
            self._runs[delta.run.id] = delta.run
            delta.rules = self.scope(delta.run)[0]
        stats.runs = len(data.runs)
        env = EvalEnv(now, self.lookup, self.replay)
        changes: list[Change] = []
        for ev, ev_rules, _ in self._rule_needs:
            try:
                signals = ev.evaluate(data, env)
            except Exception as exc:  # noqa: BLE001 - one broken rule must not stop the others
                self._report(f"rules {', '.join(sorted(ev_rules))}: evaluation failed: {type(exc).__name__}: {exc}")
                continue
            stats.signals += len(signals)
            for signal in signals:
                about = data.runs.get(signal.run_id or "")
                changes += self._apply(signal, about.run if about else None, bool(about and about.late))
        for delta in data.runs.values():
            if delta.finished:
                self._unended[delta.run.id] = delta.run
                for ev in self.evaluators:
                    ev.forget(delta.run.id)
                self._applies.pop(delta.run.id, None)
        for run in list(self._unended.values()):
            changes += self._end(run, now)
        stats.changes = changes
        pending = self._safe(lambda: self.router.route(changes, list(self.tracker.open.values()), now))
        for p in pending:
            stats.notifications += 1
            if self.dispatcher is not None:
                self.dispatcher.submit(p)
        events = self.tracker.take_events() + self.router.events
        self.router.events = []
        if events:
            self._safe(lambda: self._record(events))
        if len(self._runs) > 20_000:
            self._runs = {rid: r for rid, r in self._runs.items() if not r.is_finished}
        stats.seconds = time.perf_counter() - started
        return stats

    def _record(self, events: list[Any]) -> list[Any]:
        self.store.add_events(events)
        return []

    def _end(self, run: RunInfo, now: float) -> list[Change]:
        """Ends the run's alerts; kept for the next cycle while the store refuses (each alert
        ended is dropped from the tracker, so a retry ends only the ones left)."""
        try:
            changes = self.tracker.end_run(run, run.ended or now)
        except Exception as exc:  # noqa: BLE001 - the alert store may be locked or gone for a moment
            error = exc.error if isinstance(exc, EndIncomplete) else exc
            self._report(
                f"alerts of ended run {run.id[:12]} could not be ended (tried again): {type(error).__name__}: {error}"
            )
            if len(self._unended) > _UNENDED_MAX:
                self._unended.pop(next(iter(self._unended)))  # the oldest: the store has been gone long
            return exc.changes if isinstance(exc, EndIncomplete) else []
        self._unended.pop(run.id, None)
        return changes

    def _apply(self, signal: Any, run: RunInfo | None, late: bool) -> list[Change]:
        return self._safe(lambda: self.tracker.apply(signal, run, late=late))

    def _safe(self, fn: Callable[[], list[Any]]) -> list[Any]:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - the alert store may be locked or gone for a moment
            self._report(f"alerts could not be recorded: {type(exc).__name__}: {exc}")
            return []
