"""The distribution of a model's outputs, per version and minute, mergeable across replicas.

An output is a number (a score), a category (a label, a boolean), or a mapping of those (one
distribution per key). Numbers go into ``data/sketch.py``'s ``QuantileSketch`` — the sketch
``flightlog data`` profiles and drift read — so an output distribution can be compared with
the model's evaluation or with yesterday's with the same code; categories are counted exactly
up to ``MAX_CATEGORIES`` distinct values, the rest counted together as ``other``.

Built on the serving process's background thread, never on the request path; numpy (under the
sketch) is imported by ``attach()``, not by ``import flightlog.serving``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flightlog.data.sketch import QuantileSketch

__all__ = ["MAX_CATEGORIES", "MAX_FIELDS", "OutputDistribution"]

MAX_CATEGORIES = 100  # distinct values counted one by one per field; more are "other"
MAX_FIELDS = 32  # fields of a mapping output with a distribution each; more are ignored (counted)


class _Numeric:
    __slots__ = ("values", "sketch", "count", "total", "nonfinite")

    def __init__(self) -> None:
        # cost: numpy, imported by attach(), not by `import flightlog.serving`
        from flightlog.data.sketch import QuantileSketch

        self.values: list[float] = []
        self.sketch: QuantileSketch = QuantileSketch()
        self.count = 0
        self.total = 0.0
        self.nonfinite = 0

    def add(self, x: float) -> None:
        if math.isfinite(x):
            self.values.append(x)
        else:
            self.nonfinite += 1

    def settle(self) -> None:
        if self.values:
            import numpy as np

            arr = np.asarray(self.values, dtype=np.float64)
            self.sketch.update(arr)
            self.count += int(arr.size)
            self.total += float(arr.sum())
            self.values = []

    def to_dict(self) -> dict[str, Any]:
        self.settle()
        q = self.sketch.quantiles((0.5, 0.95))
        return {
            "kind": "numeric",
            "count": self.count,
            "mean": self.total / self.count if self.count else None,
            "p50": q[0],
            "p95": q[1],
            "nonfinite": self.nonfinite,
            "sketch": self.sketch.to_dict(),
        }


class _Categorical:
    __slots__ = ("counts", "other")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.other = 0

    def add(self, v: str) -> None:
        if v in self.counts:
            self.counts[v] += 1
        elif len(self.counts) < MAX_CATEGORIES:
            self.counts[v] = 1
        else:
            self.other += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "categorical",
            "count": sum(self.counts.values()) + self.other,
            "values": dict(self.counts),
            "other": self.other,
        }


class OutputDistribution:
    """One distribution per output field (``output`` for a plain value)."""

    def __init__(self) -> None:
        self.fields: dict[str, _Numeric | _Categorical] = {}
        self.skipped = 0  # outputs (or fields) that were neither a number nor a category

    def add(self, output: Any) -> None:
        if isinstance(output, Mapping):
            for key, value in output.items():
                self._add(str(key), value)
        elif output is not None:
            self._add("output", output)

    def update(self, outputs: Iterable[Any]) -> None:
        for output in outputs:
            self.add(output)

    def _add(self, name: str, value: Any) -> None:
        if isinstance(value, (list, tuple)) and len(value) == 1:
            value = value[0]  # a batch of one
        if isinstance(value, (bool, str)):
            kind: type[_Numeric | _Categorical] = _Categorical
            item: Any = str(value)
        elif isinstance(value, (int, float)):
            kind, item = _Numeric, float(value)
        else:
            self.skipped += 1
            return
        dist = self.fields.get(name)
        if dist is None:
            if len(self.fields) >= MAX_FIELDS:
                self.skipped += 1
                return
            dist = self.fields[name] = kind()
        if not isinstance(dist, kind):  # a field that is a number here and a string there: the first kind wins
            self.skipped += 1
            return
        dist.add(item)

    def __bool__(self) -> bool:
        return bool(self.fields) or bool(self.skipped)

    def to_dict(self) -> dict[str, Any]:
        return {"fields": {name: d.to_dict() for name, d in self.fields.items()}, "skipped": self.skipped}


def merge_output_dicts(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> dict[str, Any]:
    """Two ``to_dict()`` distributions merged (readers merging replicas and minutes)."""
    out: dict[str, Any] = {"fields": {}, "skipped": 0}
    for part in (a, b):
        if not part:
            continue
        out["skipped"] += int(part.get("skipped") or 0)
        for name, d in dict(part.get("fields") or {}).items():
            have = out["fields"].get(name)
            out["fields"][name] = _merge_field(have, d) if have else _copy_field(d)
    return out


def _copy_field(d: Mapping[str, Any]) -> dict[str, Any]:
    return _merge_field(None, d)


def _merge_field(a: Mapping[str, Any] | None, b: Mapping[str, Any]) -> dict[str, Any]:
    # cost: numpy, imported by attach(), not by `import flightlog.serving`
    from flightlog.data.sketch import QuantileSketch

    if b.get("kind") == "numeric":
        sketch = QuantileSketch.from_dict(b["sketch"])
        count, total, nonfinite = (
            int(b.get("count") or 0),
            (b.get("mean") or 0.0) * int(b.get("count") or 0),
            int(b.get("nonfinite") or 0),
        )
        if a and a.get("kind") == "numeric":
            sketch.merge(QuantileSketch.from_dict(a["sketch"]))
            count += int(a.get("count") or 0)
            total += (a.get("mean") or 0.0) * int(a.get("count") or 0)
            nonfinite += int(a.get("nonfinite") or 0)
        q = sketch.quantiles((0.5, 0.95))
        return {
            "kind": "numeric",
            "count": count,
            "mean": total / count if count else None,
            "p50": q[0],
            "p95": q[1],
            "nonfinite": nonfinite,
            "sketch": sketch.to_dict(),
        }
    # a count that is not a number (an old record whose label read as a secret's name and was
    # hidden on its way to the journal) is left out rather than failing the whole read
    values: dict[str, int] = {v: int(n) for v, n in dict(b.get("values") or {}).items() if _count(n)}
    other = int(b.get("other") or 0) if _count(b.get("other")) else 0
    if a and a.get("kind") == "categorical":
        for v, n in dict(a.get("values") or {}).items():
            if _count(n):
                values[v] = values.get(v, 0) + int(n)
        other += int(a.get("other") or 0) if _count(a.get("other")) else 0
    return {"kind": "categorical", "count": sum(values.values()) + other, "values": values, "other": other}


def _count(n: Any) -> bool:
    return isinstance(n, int) and not isinstance(n, bool)
