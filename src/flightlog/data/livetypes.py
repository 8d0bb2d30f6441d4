"""One type per live field: the majority's, the rest counted as type drift of their own.

Why: a few bad requests (a string where a number belongs) must not switch live drift off for
everyone. Live rows of one field are profiled as the type most of them have (or the type the
profile already gave the field); a value of another type is set aside — the field is judged
on the rest — and counted, so the mix is reported as a finding of its own (``type`` drift):
"amount: 17 of 1,400 values were text, not numbers".

Why a request's success matters too: a request the server refused (4xx) or failed on (5xx)
carries exactly the malformed input a model never scored; live drift judges what the model
served, so :func:`successful` keeps the rows of 2xx requests (and rows that carry no status).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["TYPE_SHARE", "TypeCounts", "merge_counts", "one_type_per_field", "successful", "type_of"]

#: Share of a field's values of another type than its majority's from which the mix is drift.
TYPE_SHARE = 0.01

TypeCounts = dict[str, dict[str, int]]  # field → type → values


def type_of(value: Any) -> str | None:
    """``number``, ``bool``, ``text`` (anything else is profiled as its text), or None (missing)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "text"


def successful(status: Any) -> bool:
    """Whether a prediction row's request succeeded: a 2xx status, or none recorded."""
    if status is None or isinstance(status, bool):
        return True
    try:
        code = int(status)
    except (TypeError, ValueError):
        return True
    return 200 <= code < 300


def _kind_type(kind: str, type_name: str) -> str | None:
    """The type class of a profiled column (its kind and Arrow type name)."""
    if kind == "numeric":
        return "number"
    if type_name == "bool":
        return "bool"
    if kind == "categorical":
        return "text"
    return None


def one_type_per_field(
    batch: list[dict[str, Any]], seen: TypeCounts, set_aside: TypeCounts, columns: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """``batch`` with each field holding one type: the type the profile gave it (``columns``:
    the profile's columns so far), else the majority of every value seen so far (``seen``,
    updated here). Values of another type become None and are counted in ``set_aside``."""
    counts: TypeCounts = {}
    for row in batch:
        for key, value in row.items():
            t = type_of(value)
            if t is not None:
                per = counts.setdefault(key, {})
                per[t] = per.get(t, 0) + 1
    mixed: dict[str, str] = {}
    for key, per in counts.items():
        total = seen.setdefault(key, {})
        for t, n in per.items():
            total[t] = total.get(t, 0) + n
        col = columns.get(key)
        keep = _kind_type(col.kind, col.type) if col is not None else None
        if keep is None:
            keep = max(total, key=lambda t: (total[t], t))
        if set(per) != {keep}:
            mixed[key] = keep
    if not mixed:
        return batch
    out = []
    for row in batch:
        fixed = row
        for key, keep in mixed.items():
            t = type_of(row.get(key))
            if t is not None and t != keep:
                if fixed is row:
                    fixed = dict(row)
                fixed[key] = None
                aside = set_aside.setdefault(key, {})
                aside[t] = aside.get(t, 0) + 1
        out.append(fixed)
    return out


def merge_counts(a: TypeCounts, b: TypeCounts) -> TypeCounts:
    out: TypeCounts = {k: dict(v) for k, v in a.items()}
    for key, per in b.items():
        mine = out.setdefault(key, {})
        for t, n in per.items():
            mine[t] = mine.get(t, 0) + n
    return out
