"""Incremental evaluation agrees with the plain definition: the vectorized windows and
no_improvement, fed random batches of random runs (NaN included), give what a loop over every
point since the start gives."""

from __future__ import annotations

import random

import numpy as np
import pytest

from flightlog.alerts.config import parse_config
from flightlog.alerts.delta import ColumnBuilder, Cycle, RunDelta
from flightlog.alerts.engine import build_evaluators
from flightlog.alerts.kinds.base import EvalEnv
from flightlog.alerts.windows import RingWindows, Slots
from flightlog.models import RunInfo


@pytest.mark.parametrize("kind", ["mean", "min", "max"])
@pytest.mark.parametrize("window", ["seconds", "points"])
def test_ring_windows_match_the_definition(kind: str, window: str) -> None:
    rng = random.Random(f"{kind}-{window}")
    slots = Slots()
    ring = RingWindows(
        slots, "w", kind, seconds=7.0 if window == "seconds" else None, points=5 if window == "points" else None
    )
    history: dict[int, list[tuple[float, float]]] = {}
    clock = dict.fromkeys(range(4), 0.0)
    for cycle in range(150):
        b = ColumnBuilder()
        for k in rng.sample(range(4), rng.randint(1, 4)):
            n = rng.randint(1, 14 if cycle > 100 else 4)  # late bursts make the time windows' rings grow
            times = []
            for _ in range(n):  # in time order, at uneven gaps
                clock[k] += rng.choice([0.2, 1.0])
                times.append(clock[k])
            values = [rng.random() if rng.random() > 0.05 else float("nan") for _ in range(n)]
            history.setdefault(k, []).extend(zip(times, values, strict=True))
            b.add((str(k), ()), times, values)
        column = b.build(with_steps=False)
        got = ring.update(slots.lookup(column.keys), column)
        for i, key in enumerate(column.keys):
            points = history[int(key[0])]
            newest = points[-1][0]
            finite = [(t, v) for t, v in points if v == v]
            inside = [v for t, v in finite if t >= newest - 7.0] if window == "seconds" else [v for _, v in finite][-5:]
            if not inside:
                assert np.isnan(got[i])
                continue
            expected = {"mean": sum(inside) / len(inside), "min": min(inside), "max": max(inside)}[kind]
            assert got[i] == pytest.approx(expected, abs=1e-9), (cycle, key)


@pytest.mark.parametrize("seed", range(4))
def test_no_improvement_matches_a_loop_over_every_point(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        mode, patience, delta = rng.choice(["min", "max"]), rng.randint(1, 6), rng.choice([0.0, 0.0, 0.05])
        config = parse_config(
            f"rules:\n  - name: r\n    kind: no_improvement\n    metric: m\n    mode: {mode}\n"
            f"    patience: {patience}\n    min_delta: {delta}\n"
        )
        [evaluator] = build_evaluators(config)
        runs = {f"r{i}": RunInfo(id=f"r{i}", project="p", name="n", status="running") for i in range(3)}
        expected: dict[str, list[tuple[str, int]]] = {rid: [] for rid in runs}
        state = {rid: {"best": None, "waited": 0, "firing": False} for rid in runs}
        got: dict[str, list[tuple[str, int]]] = {rid: [] for rid in runs}
        step = dict.fromkeys(runs, 0)
        for _ in range(8):
            b = ColumnBuilder()
            cycle = Cycle(runs={rid: RunDelta(r, frozenset({"r"})) for rid, r in runs.items()})
            for rid in runs:
                n = rng.randint(0, 6)
                values = [round(rng.random(), 2) if rng.random() > 0.05 else float("nan") for _ in range(n)]
                steps = list(range(step[rid], step[rid] + n))
                step[rid] += n
                if n:
                    b.add((rid, ()), [float(s) for s in steps], values, steps)
                st = state[rid]
                for s, v in zip(steps, values, strict=True):
                    if v != v:
                        continue
                    if st["best"] is None:
                        st["best"], st["waited"] = v, 0
                        continue
                    if ((st["best"] - v) if mode == "min" else (v - st["best"])) > delta:
                        st["best"], st["waited"] = v, 0
                        if st["firing"]:
                            st["firing"] = False
                            expected[rid].append(("clear", s))
                        continue
                    st["waited"] += 1
                    if not st["firing"] and st["waited"] >= patience:
                        st["firing"] = True
                        expected[rid].append(("firing", s))
            if b.parts:
                cycle.metrics["m"] = b.build(with_steps=True)
            for signal in evaluator.evaluate(cycle, EvalEnv(0.0, None)):  # type: ignore[arg-type]
                got[str(signal.run_id)].append((signal.state, signal.fields["step"]))
        assert got == expected
