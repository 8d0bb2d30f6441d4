"""Each version's traffic over the window it served, and what changed between two of them, on
what users feel: latency at p50, p95 and p99, server errors (5xx) and client errors (4xx) apart,
and throughput.

Why whole-window totals and not per-minute medians: a version's p99 is the 99th percentile of
its requests, so its minutes are merged histogram by histogram (exactly, ``histogram.py``),
each minute weighing as much as its traffic. A quiet minute of three requests then moves
nothing, where a median of per-minute p99s gives it the weight of a busy one.

Why a test before a finding: two versions always differ a little. A difference is a finding
only when (1) each version served enough requests for the figure to mean something — a
quantile needs ``MIN_TAIL`` requests beyond it (500 for a p99), a rate ``MIN_REQUESTS`` —, (2)
it is significant — for a quantile, the share of each version's requests beyond a latency
halfway between the two quantiles compared with a two-proportion z test (a quantile test in the
manner of Mood's median test), for a rate the two-proportion z of the rates — at ``Z_MIN``, and (3) it is large enough to
matter: latency by ``LATENCY_CHANGE`` either way, a rate by ``RATE_CHANGE`` points. The headline
is the largest of them, with its size and both versions' numbers of requests.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flightlog.serving.histogram import LatencyHistogram, bucket_of

__all__ = [
    "LATENCY_CHANGE",
    "MIN_REQUESTS",
    "MIN_TAIL",
    "RATE_CHANGE",
    "Z_MIN",
    "Change",
    "VersionStats",
    "compare_versions",
    "version_stats",
]

MIN_REQUESTS = 30  # requests of each version before anything of theirs is compared
MIN_TAIL = 5  # requests beyond a quantile, expected, before that quantile is compared (p99: 500 requests)
Z_MIN = 3.0  # two-proportion z at which a difference is significant (about p < 0.003, two-sided)
LATENCY_CHANGE = 1.25  # a latency quantile moved by this factor, either way
RATE_CHANGE = 0.01  # an error rate moved by one point of requests or more

_QUANTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))
_RATE_FLOOR = 0.001  # rates compared as ratios never divide by 0


@dataclass
class VersionStats:
    """One version's requests over the minutes it served, every replica merged."""

    version: str
    requests: int = 0
    errors: int = 0  # server errors: 5xx and exceptions
    client_errors: int = 0  # 4xx
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    minutes: set[int] = field(default_factory=set)  # minutes with traffic of this version
    error_types: dict[str, int] = field(default_factory=dict)
    error_messages: dict[str, str] = field(default_factory=dict)
    replicas: int = 0  # the most replicas that served it in one minute

    @property
    def first_minute(self) -> int | None:
        return min(self.minutes) if self.minutes else None

    @property
    def last_minute(self) -> int | None:
        return max(self.minutes) if self.minutes else None

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.requests if self.requests else None

    @property
    def client_error_rate(self) -> float | None:
        return self.client_errors / self.requests if self.requests else None

    @property
    def throughput(self) -> float | None:
        """Requests per minute over the span it served (first to last minute with traffic)."""
        if not self.minutes:
            return None
        return self.requests / (max(self.minutes) - min(self.minutes) + 1)

    def quantile(self, q: float) -> float | None:
        return self.latency.quantile(q)

    def to_dict(self) -> dict[str, Any]:
        """The row of ``serving stats --by version`` (times as epoch seconds; readers format them)."""
        first, last = self.first_minute, self.last_minute
        return {
            "version": self.version,
            "requests": self.requests,
            "errors": self.errors,
            "error_rate": self.error_rate,
            "client_errors": self.client_errors,
            "client_error_rate": self.client_error_rate,
            **{f"{name}_ms": self.quantile(q) for name, q in _QUANTILES},
            "throughput_per_min": self.throughput,
            "minutes": len(self.minutes),
            "first": None if first is None else first * 60.0,
            "last": None if last is None else last * 60.0 + 60.0,
            "replicas": self.replicas,
            "error_types": dict(sorted(self.error_types.items(), key=lambda kv: -kv[1])),
            "error_messages": dict(self.error_messages),
        }


def version_stats(
    rows: Iterable[Mapping[str, Any]], *, start: float | None = None, end: float | None = None
) -> list[VersionStats]:
    """Per version, the aggregate rows of ``serving.reading.aggregates`` (per version and
    minute) merged over the minutes from ``start`` to ``end``; in the order they first served."""
    out: dict[str, VersionStats] = {}
    for row in rows:
        minute = int(row["minute"])
        if (start is not None and minute * 60.0 + 60.0 <= start) or (end is not None and minute * 60.0 >= end):
            continue
        version = str(row.get("version"))
        s = out.get(version)
        if s is None:
            s = out[version] = VersionStats(version)
        requests = int(row.get("requests") or 0)
        s.requests += requests
        s.errors += int(row.get("errors") or 0)
        s.client_errors += int(row.get("client_errors") or 0)
        if row.get("latency"):
            s.latency.merge(LatencyHistogram.from_dict(row["latency"]))
        if requests:
            s.minutes.add(minute)
        for kind, n in dict(row.get("error_types") or {}).items():
            s.error_types[str(kind)] = s.error_types.get(str(kind), 0) + int(n or 0)
        s.error_messages.update({str(k): str(v) for k, v in dict(row.get("error_messages") or {}).items()})
        s.replicas = max(s.replicas, int(row.get("replicas") or 0))
    return sorted(out.values(), key=lambda s: (s.first_minute if s.first_minute is not None else math.inf, s.version))


@dataclass
class Change:
    """One figure of two versions compared: judged (a finding or not) or not judged, and why."""

    metric: str  # p50_ms | p95_ms | p99_ms | error_rate | client_error_rate
    before: float | None
    after: float | None
    n_before: int
    n_after: int
    z: float | None = None
    finding: bool = False
    why_not: str | None = None  # why it is no finding: too few requests, not significant, too small

    @property
    def ratio(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        if self.metric.endswith("_ms"):
            return self.after / self.before if self.before else None
        return (self.after + _RATE_FLOOR) / (self.before + _RATE_FLOOR)

    @property
    def size(self) -> float:
        """How large the change is, comparable across figures: |log| of its ratio."""
        r = self.ratio
        return abs(math.log(r)) if r else 0.0

    def text(self) -> str:
        """``p99 latency ×18 (16.6 → 300 ms)``, ``5xx error rate 0.2% → 4.1% (+3.9 pts)``."""
        if self.before is None or self.after is None:
            return f"{_label(self.metric)} not measured"
        if self.metric.endswith("_ms"):
            r = self.ratio or 0.0
            return f"{_label(self.metric)} ×{_factor(r)} ({_ms(self.before)} → {_ms(self.after)} ms)"
        pts = (self.after - self.before) * 100
        return (
            f"{_label(self.metric)} {self.before:.1%} → {self.after:.1%} ({'+' if pts >= 0 else '−'}{abs(pts):.1f} pts)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "before": self.before,
            "after": self.after,
            "ratio": self.ratio,
            "n_before": self.n_before,
            "n_after": self.n_after,
            "z": None if self.z is None else round(self.z, 2),
            "finding": self.finding,
            "why_not": self.why_not,
            "summary": self.text(),
        }


def _label(metric: str) -> str:
    return {
        "p50_ms": "p50 latency",
        "p95_ms": "p95 latency",
        "p99_ms": "p99 latency",
        "error_rate": "5xx error rate",
        "client_error_rate": "4xx error rate",
    }.get(metric, metric)


def _factor(r: float) -> str:
    return f"{r:.2g}" if r < 10 else f"{r:.0f}"


def _ms(x: float) -> str:
    return f"{x:.2f}" if x < 1 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


def _beyond(h: LatencyHistogram, bucket: int) -> int:
    """Requests of ``h`` in buckets above ``bucket``."""
    return sum(n for b, n in h.counts.items() if b > bucket)


def _z(k1: int, n1: int, k2: int, n2: int) -> float | None:
    """Two-proportion z of k2/n2 against k1/n1 (pooled); None when both are 0 or 1."""
    p = (k1 + k2) / (n1 + n2)
    if p <= 0.0 or p >= 1.0:
        return None
    return (k2 / n2 - k1 / n1) / math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))


def _quantile_change(name: str, q: float, before: VersionStats, after: VersionStats) -> Change:
    a, b = before.quantile(q), after.quantile(q)
    change = Change(f"{name}_ms", a, b, before.requests, after.requests)
    need = max(MIN_REQUESTS, math.ceil(MIN_TAIL / (1 - q)))
    fewest = min(before.requests, after.requests)
    if a is None or b is None or fewest < need:
        change.why_not = f"too few requests ({fewest} of the {need} a {name} needs on each side)"
        return change
    # the share of each version's requests beyond a latency between the two quantiles (the bucket
    # halfway between them, on the log scale): if one version's quantile really is higher, more of
    # its requests lie beyond any latency below it than of the other's, beyond one above it; halfway
    # keeps the power of the test at a tail quantile (a p99 moved by 2 % of slow requests)
    edge = (bucket_of(a) + bucket_of(b)) // 2
    k_before, k_after = _beyond(before.latency, edge), _beyond(after.latency, edge)
    z = _z(k_before, before.requests, k_after, after.requests)
    change.z = z
    ratio = change.ratio or 1.0
    if z is None or abs(z) < Z_MIN:
        change.why_not = "not significant" + (f" (z {abs(z):.1f} < {Z_MIN:g})" if z is not None else "")
    elif 1 / LATENCY_CHANGE < ratio < LATENCY_CHANGE:
        change.why_not = f"smaller than ×{LATENCY_CHANGE:g}"
    else:
        change.finding = True
    return change


def _rate_change(metric: str, before: VersionStats, after: VersionStats) -> Change:
    k1 = before.errors if metric == "error_rate" else before.client_errors
    k2 = after.errors if metric == "error_rate" else after.client_errors
    n1, n2 = before.requests, after.requests
    change = Change(metric, k1 / n1 if n1 else None, k2 / n2 if n2 else None, n1, n2)
    if min(n1, n2) < MIN_REQUESTS:
        change.why_not = f"too few requests ({min(n1, n2)} of the {MIN_REQUESTS} a rate needs on each side)"
        return change
    z = _z(k1, n1, k2, n2)
    change.z = z
    if z is None or abs(z) < Z_MIN:
        change.why_not = "not significant" + (f" (z {abs(z):.1f} < {Z_MIN:g})" if z is not None else "")
    elif abs(k2 / n2 - k1 / n1) < RATE_CHANGE:
        change.why_not = f"smaller than {RATE_CHANGE * 100:g} point"
    else:
        change.finding = True
    return change


def compare_versions(before: VersionStats, after: VersionStats) -> list[Change]:
    """Every figure of ``after`` against ``before``; the findings first, the largest first."""
    changes = [_quantile_change(name, q, before, after) for name, q in _QUANTILES]
    changes += [_rate_change(m, before, after) for m in ("error_rate", "client_error_rate")]
    return sorted(changes, key=lambda c: (not c.finding, -c.size))
