"""Which fields of a model's answer a prediction record keeps: ``attach(outputs=[...])``, the
output's allow-list, as ``inputs=`` is the request's.

Why: an answer can carry what a request did (a recommender echoes the user's e-mail, a
classifier returns the customer's name beside its score). With ``outputs=`` given, a record and
the output distribution keep the listed fields as they are and only a keyed hash of every other
field, so a new field in the answer is hidden by default; without it (the default) the answer is
kept whole, its text scrubbed of secrets and personal data like every record. An answer that is
not a mapping is the one field ``output``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flightlog.serving.fields import check_allow_list

__all__ = ["check_output_allow_list", "split_output"]


def check_output_allow_list(fields: Any) -> frozenset[str] | None:
    """The output allow-list as a set of names, or None (keep the answer whole)."""
    if fields is None:
        return None
    return check_allow_list(fields, where="attach(outputs=...)")


def split_output(output: Any, allow: frozenset[str] | None, hasher: Callable[[Any], str]) -> tuple[Any, dict[str, str]]:
    """(what a record keeps of ``output``, {field left out: its hash})."""
    if allow is None or output is None:
        return output, {}
    if not isinstance(output, Mapping):
        return (output, {}) if "output" in allow else (None, {"output": hasher(output)})
    kept = {str(k): v for k, v in output.items() if str(k) in allow}
    hashed = {str(k): hasher(v) for k, v in output.items() if str(k) not in allow}
    return kept, hashed
