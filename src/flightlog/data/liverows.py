"""Sampled predictions as plain rows, whatever recorded them: the one adapter of live data.

A serving replica records a sample of its predictions as structured log events (component
``serving``, message ``prediction``: request id, version, latency, status, the allow-listed
input fields, hashes of the rest, the output) and labels later (message ``label``: request id
and the true value). ``flightlog.serving.predictions(client, endpoint, since)`` returns the same
rows with their labels already joined. Live drift and cohort metrics read neither directly:
they take :class:`PredictionRow`\\ s from :func:`prediction_rows`, which accepts both, so the
reader can change without touching the analysis.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.timefmt import parse_time

__all__ = ["PredictionRow", "prediction_rows", "COMPONENT", "COMPONENTS"]

#: the component of the log events a serving replica writes its samples with (message
#: ``prediction`` or ``label``); ``serving.prediction`` and ``serving.label`` (any message) too
COMPONENT = "serving"
_PREDICTION, _LABEL = "serving.prediction", "serving.label"
#: every component a reader asks the store for
COMPONENTS = (COMPONENT, _PREDICTION, _LABEL)
_INPUT_KEYS = ("inputs", "input", "features")
_OUTPUT_KEYS = ("output", "prediction", "y_pred")
_LABEL_KEYS = ("label", "y_true")
_UNSET: Any = object()


@dataclass
class PredictionRow:
    """One sampled prediction: when, which version, its inputs (allow-listed fields only), its
    output and, once joined, its label (``has_label`` tells a label of None from no label)."""

    time: float
    inputs: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    request_id: str | None = None
    version: str | None = None
    latency_ms: float | None = None
    status: Any = None
    label: Any = None
    has_label: bool = False


def _first(d: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        if k in d:
            return d[k]
    return _UNSET


def _time(value: Any, where: str) -> float:
    if isinstance(value, bool):
        raise InvalidInput(f"{where}: time must be epoch seconds or an ISO-8601 time, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return parse_time(value)
    raise InvalidInput(f"{where}: time must be epoch seconds or an ISO-8601 time, got {value!r}")


def _row(d: Mapping[str, Any], t: Any, where: str) -> PredictionRow:
    inputs = _first(d, _INPUT_KEYS)
    if inputs is _UNSET or inputs is None:
        inputs = {}
    if not isinstance(inputs, Mapping):
        raise InvalidInput(f"{where}: inputs must be a mapping of field to value, got {type(inputs).__name__}")
    output = _compared_output(_first(d, _OUTPUT_KEYS), d.get("label_field"))
    label = _first(d, _LABEL_KEYS)
    latency = d.get("latency_ms", d.get("latency"))
    return PredictionRow(
        time=_time(t, where),
        inputs=dict(inputs),
        output=None if output is _UNSET else output,
        request_id=None if d.get("request_id") is None else str(d["request_id"]),
        version=None if d.get("version") is None else str(d["version"]),
        latency_ms=float(latency) if isinstance(latency, int | float) and not isinstance(latency, bool) else None,
        status=d.get("status"),
        label=None if label is _UNSET else label,
        has_label=label is not _UNSET,
    )


def _compared_output(output: Any, label_field: Any) -> Any:
    """The part of an output a label is compared with: the field ``label_field`` names (the
    replica's ``attach(label_field=...)``) of a mapping output, the only field of a mapping of one,
    else the output itself (a mapping of several fields never equals a label)."""
    if not isinstance(output, Mapping):
        return output
    if isinstance(label_field, str) and label_field in output:
        return output[label_field]
    if len(output) == 1:
        return next(iter(output.values()))
    return output


def prediction_rows(items: Iterable[Any]) -> list[PredictionRow]:
    """Rows from log events (:class:`~flightlog.models.LogEvent` or their dicts) of the
    serving components (:data:`COMPONENTS`), or from ``flightlog.serving.predictions`` rows (mappings with inputs,
    output and label), in any mix; labels join their prediction by request id. Other log events
    are skipped; a label without its prediction is dropped (its prediction was not sampled)."""
    rows: list[PredictionRow] = []
    labels: dict[str, Any] = {}
    for i, item in enumerate(items):
        where = f"prediction row {i}"
        fields = getattr(item, "fields", _UNSET)
        if fields is not _UNSET or (isinstance(item, Mapping) and "message" in item and "fields" in item):
            message = getattr(item, "message", None) if fields is not _UNSET else item.get("message")
            component = getattr(item, "component", None) if fields is not _UNSET else item.get("component")
            fields = fields if fields is not _UNSET else item.get("fields")
            t = getattr(item, "time", None) if not isinstance(item, Mapping) else item.get("time")
            if component not in COMPONENTS or not isinstance(fields, Mapping):
                continue
            if component == _LABEL or (component == COMPONENT and message == "label"):
                if fields.get("request_id") is not None:
                    labels[str(fields["request_id"])] = _first(fields, _LABEL_KEYS)
                continue
            if component == COMPONENT and message != "prediction":
                continue
            rows.append(_row(fields, fields.get("time", t), where))
        elif isinstance(item, Mapping):
            t = _first(item, ("time", "at", "timestamp"))
            if t is _UNSET:
                raise InvalidInput(f"{where}: a prediction row needs its time (time, at or timestamp)")
            rows.append(_row(item, t, where))
        else:
            raise InvalidInput(f"{where}: expected a log event or a mapping, got {type(item).__name__}")
    for row in rows:
        if not row.has_label and row.request_id is not None and row.request_id in labels:
            value = labels[row.request_id]
            if value is not _UNSET:
                row.label, row.has_label = value, True
    rows.sort(key=lambda r: r.time)
    return rows
