"""A profiled column as a person compares it: the figures that show a distribution moved.

``flightlog serving drift`` and ``diagnose --deployment`` put the training side and the live
side of a feature next to each other (and the training data of two versions), so the reader
sees *how* it moved — "mean 100 → 140, p95 133 → 173" — and not only that a test said so.
"""

from __future__ import annotations

from typing import Any

from flightlog.data.profiling import ColumnProfile, Profile

__all__ = ["column_summary", "describe_change", "profile_column"]

_QS = (0.05, 0.25, 0.5, 0.75, 0.95)
_TOP = 5


def column_summary(col: ColumnProfile | None) -> dict[str, Any] | None:
    """``{"kind": "numeric", "count", "nulls", "mean", "std", "min", "p5" … "p95", "max"}`` or
    ``{"kind": "categorical", "count", "nulls", "top": [{"value", "share"}], "distinct"}``."""
    if col is None:
        return None
    out: dict[str, Any] = {"kind": col.kind, "type": col.type, "count": col.count, "nulls": col.null_count}
    if col.numeric is not None:
        n = col.numeric
        q = n.quantiles(_QS) if n.count else {}
        out.update(
            mean=n.mean if n.count else None,
            std=n.std,
            min=n.min,
            max=n.max,
            **{k: q.get(k) for k in ("p5", "p25", "p50", "p75", "p95")},
        )
    elif col.categorical is not None:
        c = col.categorical
        out.update(
            top=[{"value": t["value"], "share": t["share"]} for t in c.top(_TOP)],
            distinct=c.cardinality,
        )
    return out


def profile_column(profile: Profile | None, name: str) -> dict[str, Any] | None:
    """The summary of column ``name`` of a profile (None when the profile or column is absent)."""
    if profile is None:
        return None
    return column_summary(profile.columns.get(name))


def _num(x: Any) -> str:
    if not isinstance(x, int | float):
        return "?"
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def describe_change(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str | None:
    """How a column differs between two summaries, in a few figures; None when it cannot say."""
    if not before or not after or before.get("kind") != after.get("kind"):
        return None
    if before["kind"] == "numeric":
        parts = [
            f"{k} {_num(before.get(k))} → {_num(after.get(k))}"
            for k in ("mean", "p50", "p95")
            if before.get(k) is not None and after.get(k) is not None
        ]
        return ", ".join(parts) or None
    tb = {str(t["value"]): t["share"] for t in before.get("top") or []}
    ta = {str(t["value"]): t["share"] for t in after.get("top") or []}
    moved = sorted(set(tb) | set(ta), key=lambda v: -abs(ta.get(v, 0.0) - tb.get(v, 0.0)))[:2]
    parts = [f"{v} {tb.get(v, 0.0):.0%} → {ta.get(v, 0.0):.0%}" for v in moved]
    return ", ".join(parts) or None
