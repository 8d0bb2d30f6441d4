"""When a version rolled out: defined once, for the deployment page, the CLI and the diagnosis.

A rollout is a change of the desired version (``flightlog deploy``) joined to the first minute
of traffic the new version served after it (the deploy time itself when that minute holds the
deploy: traffic is counted per minute). Its time is that first traffic — when users began
to meet the new version, which is when anything they feel can have changed —, with the deploy
time beside it (``deployed_at``); a deploy no replica has served yet is timed by the deploy.
A version that starts serving with no deploy recorded is a rollout too ("observed").

A rollout is a ``rollback`` when it goes back: to a lower version number, or to a version that
was desired before.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from flightlog.timefmt import iso, parse_time

__all__ = ["as_iso", "first_traffic", "rollouts"]


def _epoch(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return parse_time(str(value), what="deployment time")


def first_traffic(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Per version, the start of every minute it had traffic in, in order (from aggregate rows:
    ``version``, ``minute``, ``requests``)."""
    out: dict[str, set[float]] = {}
    for r in rows:
        if int(r.get("requests") or 0) > 0:
            out.setdefault(str(r.get("version")), set()).add(int(r["minute"]) * 60.0)
    return {v: sorted(ms) for v, ms in out.items()}


def _back(frm: str | None, to: str, desired_before: set[str]) -> bool:
    if frm is None:
        return False
    if frm.isdigit() and to.isdigit() and int(to) < int(frm):
        return True
    return to in desired_before


def _served(replicas: Sequence[Mapping[str, Any]], version: str, start: float, end: float | None) -> int:
    """Replicas of ``version`` that served between ``start`` and ``end``."""
    n = 0
    for r in replicas:
        if str(r.get("version")) != version:
            continue
        began = _epoch(r.get("started")) or 0.0
        last = _epoch(r.get("ended")) or _epoch(r.get("heartbeat")) or time.time()
        if last >= start - 1.0 and (end is None or began < end):
            n += 1
    return n


def rollouts(
    history: Sequence[Mapping[str, Any]],
    traffic: Mapping[str, list[float]],
    *,
    since: float | None = None,
    replicas: Sequence[Mapping[str, Any]] | None = None,
    observed: bool = True,
) -> list[dict[str, Any]]:
    """The rollouts, oldest first: ``history`` is the deployment's desired history (``time``,
    ``from_version``, ``to_version``, ``model``, ``actor``, ``ref``), ``traffic`` what
    :func:`first_traffic` returns; ``replicas`` (readers' replica rows) counts the replicas of
    each new version; ``observed`` adds the versions that began serving with no deploy.

    Each: ``time`` (epoch: first traffic, else the deploy), ``deployed_at``, ``first_traffic_at``
    (epoch or None), ``kind``, ``from_version``, ``to_version`` (text), ``model``, ``actor``,
    ``ref``, ``replicas`` (or None)."""
    out: list[dict[str, Any]] = []
    claimed: set[str] = set()
    desired_before: set[str] = set()
    for i, h in enumerate(history):
        t = _epoch(h.get("time")) or 0.0
        to = str(h["to_version"])
        frm = None if h.get("from_version") is None else str(h["from_version"])
        back = _back(frm, to, desired_before)
        desired_before.add(to)
        if frm is not None:
            desired_before.add(frm)
        if since is not None and t < since:
            continue
        minutes = traffic.get(to, [])
        at = bisect.bisect_left(minutes, t - 60.0)  # the minute holding the deploy counts (minutes are buckets)
        seen = minutes[at] if at < len(minutes) else None
        following = _epoch(history[i + 1].get("time")) if i + 1 < len(history) else None
        if seen is not None and following is not None and seen >= following:
            seen = None  # its first traffic came after the next deploy: that deploy's rollout
        if seen is not None:
            claimed.add(to)
            seen = max(seen, t)  # traffic in the minute of the deploy began after the deploy
        out.append(
            {
                "time": seen if seen is not None else t,
                "deployed_at": t,
                "first_traffic_at": seen,
                "kind": "rollback" if back else "rollout",
                "from_version": frm,
                "to_version": to,
                "model": h.get("model"),
                "actor": h.get("actor"),
                "ref": h.get("ref"),
                "replicas": None if replicas is None else _served(replicas, to, t, following),
            }
        )
    if observed:
        out += _observed(traffic, claimed, bool(history))
    out.sort(key=lambda r: r["time"])
    return out


def _observed(traffic: Mapping[str, list[float]], claimed: set[str], deployed: bool) -> list[dict[str, Any]]:
    """Versions that began serving inside the window with no deploy recorded."""
    starts = {v: ms[0] for v, ms in traffic.items() if ms}
    if not starts:
        return []
    window_start = min(starts.values())
    out = []
    for v, seen in starts.items():
        if v in claimed or seen <= window_start:
            continue
        before = [(ms[-1], u) for u, ms in traffic.items() if u != v and ms and ms[0] < seen]
        frm = max(before)[1] if before else None
        out.append(
            {
                "time": seen,
                "deployed_at": None,
                "first_traffic_at": seen,
                "kind": "rollback" if frm and _back(frm, v, set()) else "rollout",
                "from_version": frm,
                "to_version": v,
                "model": None,
                "actor": None,
                "ref": None,
                "replicas": None,
            }
        )
    return out


def as_iso(row: Mapping[str, Any]) -> dict[str, Any]:
    """A rollout with its times as ISO text (the timeline's and the CLI's JSON)."""
    return {**row, **{k: iso(row[k]) for k in ("time", "deployed_at", "first_traffic_at")}}
