"""Stragglers: a rank that is consistently slower than the others.

Step durations cannot show it: every rank leaves an all-reduce at the same moment, so every
rank's steps last as long as the slowest one's. What differs is when each rank *enters* the
collectives: the others arrive and wait, the straggler arrives last. The ranks' watches sample
the Flight Recorder's entry times at the same wall-clock instants (``collectives`` evidence,
every ``FLIGHTLOG_COLLECTIVE_SAMPLE`` seconds), so the same collective numbers are seen on
every rank; per collective, each rank's lag is its entry time minus the earliest rank's.

A rank is a straggler when it is the last to enter in most collectives (``_LAST_SHARE``) and its
median lag is both long in absolute terms (``_MIN_LAG_S``) and a fair share of the time
between collectives (``_MIN_LAG_SHARE``): on a healthy job who comes last is a coin toss and the
lags are microseconds. The onset is the first collective from which it stays last; where its
time goes is its own stages against the others' (the SDK's stage totals in the same samples).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from flightlog.diagnose.evidence import RunEvidence
from flightlog.diagnose.findings import Finding
from flightlog.diagnose.ranks import RankFacts, gather_ranks
from flightlog.diagnose.signals import Signal
from flightlog.launchenv import ranks_text
from flightlog.timefmt import format_duration

__all__ = ["analyze_stragglers", "Lags", "collective_lags"]

_LAST_SHARE = 0.75  # of the collectives seen on every rank, the straggler entered this share last
_MIN_LAG_S = 0.05
_MIN_LAG_SHARE = 0.2  # of the median time between two collectives
_MIN_COLLECTIVES = 5


@dataclass
class Lags:
    pg: str
    seqs: list[int]
    times: dict[int, list[float]]  # rank → entry time per seq (aligned with seqs)

    def lag(self, rank: int) -> list[float]:
        firsts = [min(self.times[r][i] for r in self.times) for i in range(len(self.seqs))]
        return [self.times[rank][i] - firsts[i] for i in range(len(self.seqs))]

    def last_share(self, rank: int) -> float:
        n = len(self.seqs)
        last = sum(1 for i in range(n) if self.times[rank][i] >= max(self.times[r][i] for r in self.times))
        return last / n if n else 0.0

    def interval(self) -> float | None:
        firsts = [min(self.times[r][i] for r in self.times) for i in range(len(self.seqs))]
        gaps = [b - a for a, b in zip(firsts, firsts[1:], strict=False) if b > a]
        return statistics.median(gaps) if gaps else None


def collective_lags(ranks: dict[int, RankFacts]) -> Lags | None:
    """Entry times of the collectives every sampled rank saw, on the process group with the most."""
    per_pg: dict[str, dict[int, dict[int, float]]] = {}
    for rank, f in ranks.items():
        for sample in f.samples:
            for pg, cols in (sample.get("collectives") or {}).items():
                if not isinstance(cols, dict):
                    continue
                seqs, times = cols.get("seq") or [], cols.get("time") or []
                into = per_pg.setdefault(str(pg), {}).setdefault(rank, {})
                for seq, t in zip(seqs, times, strict=False):
                    if isinstance(seq, int) and isinstance(t, (int, float)):
                        into[seq] = float(t)
    best: Lags | None = None
    for pg, by_rank in per_pg.items():
        if len(by_rank) < 2:
            continue
        common = sorted(set.intersection(*(set(v) for v in by_rank.values())))
        if best is None or len(common) > len(best.seqs):
            best = Lags(pg, common, {r: [by_rank[r][s] for s in common] for r in by_rank})
    return best if best is not None and len(best.seqs) >= _MIN_COLLECTIVES else None


def analyze_stragglers(ev: RunEvidence) -> list[Finding]:
    ranks, _ = gather_ranks(ev)
    if len(ranks) < 2:
        return []
    lags = collective_lags(ranks)
    if lags is None:
        return []
    interval = lags.interval() or 0.0
    shares = {r: lags.last_share(r) for r in lags.times}
    rank = max(shares, key=lambda r: (shares[r], statistics.median(lags.lag(r))))
    median_lag = statistics.median(lags.lag(rank))
    if shares[rank] < _LAST_SHARE or median_lag < _MIN_LAG_S or median_lag < _MIN_LAG_SHARE * interval:
        return []
    onset_i = _onset(lags, rank)
    onset_t = lags.times[rank][onset_i]
    others = sorted(r for r in lags.times if r != rank)
    n = len(lags.seqs)
    detail = (
        f"rank {rank} entered {shares[rank] * n:.0f} of {n} {lags.pg} collectives last, a median "
        f"{format_duration(median_lag)} after the first rank (a collective every {format_duration(interval)})"
    )
    signals = [
        Signal("straggler", _weight(shares[rank], median_lag, interval), "last_to_enter", "evidence", detail, onset_t)
    ]
    where = _where_time_goes(ranks, rank, others)
    summary = (
        f"rank {rank} is a straggler: it enters the collectives {format_duration(median_lag)} after the others "
        f"(last in {shares[rank]:.0%} of {n}), since collective #{lags.seqs[onset_i]}"
    )
    if where:
        summary += f"; {where}"
    summary += f"; {ranks_text(others)} {'waits' if len(others) == 1 else 'wait'} for it in every collective."
    extra: dict[str, Any] = {
        "origin": "straggler",
        "rank": rank,
        "straggler": {
            "rank": rank,
            "host": ranks[rank].host,
            "lag_s": round(median_lag, 4),
            "last_share": round(shares[rank], 3),
            "collectives": n,
            "onset": {"seq": lags.seqs[onset_i], "time": onset_t},
            "stages": _stage_means(ranks).get(rank, {}),
        },
    }
    steps = [f"Look at what rank {rank} does between two collectives (its host, its data loading, its shard)."]
    return [Finding("straggler", summary, signals, steps, extra=extra)]


def _weight(share: float, lag: float, interval: float) -> float:
    relative = lag / interval if interval > 0 else 1.0
    return round(min(0.85, 0.3 + 0.4 * share + 0.3 * min(1.0, relative)), 3)


def _onset(lags: Lags, rank: int) -> int:
    """The first collective from which the rank stays late: its lag at least half its median lag,
    there and in nine in ten of the collectives after it."""
    lag = lags.lag(rank)
    bar = 0.5 * statistics.median(lag)
    late = [x >= bar for x in lag]
    for i in range(len(lag)):
        rest = late[i:]
        if late[i] and sum(rest) / len(rest) >= 0.9:
            return i
    return 0


def _stage_means(ranks: dict[int, RankFacts]) -> dict[int, dict[str, float]]:
    """Per rank: mean seconds per span of each stage, from its latest sample's stage totals."""
    out: dict[int, dict[str, float]] = {}
    for rank, f in ranks.items():
        latest = next((s.get("stages") for s in reversed(f.samples) if s.get("stages")), None)
        if not isinstance(latest, dict):
            continue
        out[rank] = {
            name: float(st["total"]) / float(st["count"])
            for name, st in latest.items()
            if isinstance(st, dict) and st.get("count")
        }
    return out


def _where_time_goes(ranks: dict[int, RankFacts], rank: int, others: list[int]) -> str | None:
    means = _stage_means(ranks)
    mine = means.get(rank)
    if not mine:
        return None
    best, excess = None, 0.0
    for name, value in mine.items():
        theirs = [means[o][name] for o in others if name in means.get(o, {})]
        if not theirs:
            continue
        diff = value - statistics.median(theirs)
        if diff > excess:
            best, excess = name, diff
    if best is None:
        return None
    theirs_text = format_duration(statistics.median([means[o][best] for o in others if best in means.get(o, {})]))
    return f"its {best} stage takes {format_duration(mine[best])} per span against {theirs_text} on the others"
