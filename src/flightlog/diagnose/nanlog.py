"""``nan_loss`` from the log text alone: a script that prints ``step 300 loss=nan ppl=nan`` (or
``{'loss': nan}``, ``"val_loss": "NaN"``, ``loss: inf``) has diverged even when it never calls
the SDK and exits 0 — silent divergence.

This reads the words, not the metrics, so it holds whether or not someone turned the
``key=value`` lines into metrics: a value that is NaN or infinite under a loss-like key is a
strong signal, the same on many lines or still there at the end a stronger one, and a loss that
printed finite values again afterwards (one bad batch skipped) a weak one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from flightlog.diagnose.evidence import RunEvidence
from flightlog.diagnose.findings import Finding
from flightlog.diagnose.metricnames import LOSS_LIKE, VALIDATION
from flightlog.diagnose.signals import Signal
from flightlog.models import LogEvent

__all__ = [
    "nan_in_log",
    "nonfinite_values",
    "ended_nonfinite",
    "NONFINITE_LINE",
    "NONFINITE_REPEATED",
    "NONFINITE_AT_END",
]

# signal ids
NONFINITE_LINE = "nonfinite_value_in_the_log"
NONFINITE_REPEATED = "nonfinite_on_many_lines"
NONFINITE_AT_END = "nonfinite_until_the_end"

#: a store-side prefilter: only events that mention a non-finite number are read in full
GREP = r"\b(?:nan|inf|infinity)\b"
_VALUE = r"[+-]?(?:nan|inf(?:inity)?)"
#: ``key=nan``, ``key: inf``, ``'key': nan``, ``"key": "NaN"`` — followed by the end of the
#: line, punctuation or another ``key=``; not by a plain word ("loss=NaN guard enabled")
_PAIR = re.compile(
    rf"""(?P<key>[A-Za-z_][\w./-]{{0,80}})["']?\s*[=:]\s*["']?(?P<value>{_VALUE})["']?"""
    r"""(?=\s*$|\s*[,;|)\]}]|\s+[-–]\s|\s+["']?[A-Za-z_][\w./-]*["']?\s*[=:])""",
    re.IGNORECASE,
)
#: ``loss is nan``, ``nan loss``, ``loss became inf``
_PHRASE = re.compile(
    rf"\b(?P<key>\w*loss)\b[^\n]{{0,40}}?\b(?:is|became|was|turned|went)\s+(?P<value>{_VALUE})\b"
    rf"|\b(?P<value2>nan|infinite|non-?finite) (?P<key2>loss)\b",
    re.IGNORECASE,
)
#: ``step 99 loss nan``, ``train_loss inf val_loss nan``: a print of ``f"loss {loss}"`` — a key and
#: its value with only a space between, followed by the end of the line, punctuation or another
#: ``key value`` pair; not by a plain word ("loss nan checks enabled")
_SPACED = re.compile(
    rf"""(?<![\w./-])(?P<key>\w*loss)\s+(?P<value>{_VALUE})"""
    r"""(?=\s*$|\s*[,;|)\]}]|\s+[-–]\s|\s+(?!(?:or|and|to|of|in|at|for|with|than)\s)[A-Za-z_][\w./-]*\s+[+-]?(?:\d|\.\d|nan\b|inf))""",
    re.IGNORECASE,
)
_STEP = re.compile(r"""\b(?:global_step|step|iter(?:ation)?)["']?\s*[=: ]\s*(\d+)""", re.IGNORECASE)
#: keys whose non-finite values are routine: mixed precision skips steps with an infinite
#: gradient norm or loss scale by design; a tree learner that finds no split left reports the best
#: split's gain as ``-inf`` (LightGBM's "No further splits with positive gain, best gain: -inf",
#: on every small or well-fitted data set): no statistic of the model
_IGNORE = re.compile(
    r"^(?:lr|learning_rate|step|epoch|time|eta|speed|throughput|samples|batch|scale|loss_scale"
    r"|grad_?norm|gnorm|grad-norm|overflow|(?:best_?|split_?)?gain)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Hit:
    event: LogEvent
    key: str
    value: str
    line: str


def nonfinite_values(event: LogEvent) -> dict[str, str]:
    """``{key: value}`` for every NaN or infinite value the event prints (text or parsed fields)."""
    out: dict[str, str] = {}
    for raw in event.message.splitlines()[:50]:
        for key, value in _printed_nonfinite(raw).items():
            out.setdefault(key, value)
    for key, value in (event.fields or {}).items():
        if isinstance(value, float) and not math.isfinite(value):
            out.setdefault(str(key), str(value))
        elif isinstance(value, str) and re.fullmatch(_VALUE, value.strip(), re.IGNORECASE):
            out.setdefault(str(key), value.strip())
    return {k: v for k, v in out.items() if not _IGNORE.match(k.rsplit("/", 1)[-1])}


#: a gradient norm (Transformers' ``grad_norm``, Lightning's ``grad_norm/total``): routine when one
#: step's is infinite under a loss scaler, the training's NaN when it stays so to the end
_GRADIENT_NORM = re.compile(r"(?:^|[_./-])grad(?:ient)?_?norm(?:$|[_./-])", re.IGNORECASE)
#: how many of the last prints of a gradient norm must all be non-finite (as ``behaviour``'s reading)
_GRADIENT_NAN_MIN_LINES = 3
#: names with a loss word that are bookkeeping: a mixed-precision loss scale, its scaler
_LOSS_BOOKKEEPING = re.compile(r"loss_?scale|scaler", re.IGNORECASE)


def ended_nonfinite(lines: Sequence[str]) -> tuple[str, str, str] | None:
    """``(key, value, line)`` when the last lines a run printed end with its training loss, or its
    gradient norm, non-finite: the last print of a training loss (not an evaluation's) is NaN or
    infinite, or the last three prints of a gradient norm are. None otherwise.

    The runner asks this of a run that exited 0 (its closing line says so, the run stays
    ``succeeded``): it judges from the lines it holds in memory, so that a succeeded run costs no
    look into the store. An evaluation statistic undefined on its data (``'eval_pearson': nan``)
    is no key here, and a loss that printed a finite value after its NaN recovered."""
    prints: dict[str, list[tuple[bool, str, str]]] = {}  # key → (non-finite, value, line), in order
    for message in lines:
        for raw in message.splitlines()[:50]:
            line = raw.strip()
            found = _printed_nonfinite(line)
            for key, value in found.items():
                prints.setdefault(key, []).append((True, value, line))
            for key in prints.keys() - found.keys():
                if re.search(rf"""(?<![\w./-]){re.escape(key)}["']?\s*[=: ]\s*["']?[+-]?(?:\d|\.\d)""", line):
                    prints[key].append((False, "", line))
    ended: list[tuple[str, str, str]] = []
    for key, seen in prints.items():
        name = key.rsplit("/", 1)[-1]
        if _GRADIENT_NORM.search(key):
            tail = seen[-_GRADIENT_NAN_MIN_LINES:]
            if len(tail) == _GRADIENT_NAN_MIN_LINES and all(bad for bad, _, _ in tail):
                ended.append((key, tail[-1][1], tail[-1][2]))
        elif (
            LOSS_LIKE.search(name)
            and not VALIDATION.search(key)
            and not _LOSS_BOOKKEEPING.search(name)
            and not _IGNORE.match(name)
            and seen[-1][0]
        ):
            ended.append((key, seen[-1][1], seen[-1][2]))
    # a loss before a gradient norm: the loss is what the reader trains for
    ended.sort(key=lambda e: bool(_GRADIENT_NORM.search(e[0])))
    return ended[0] if ended else None


def _printed_nonfinite(line: str) -> dict[str, str]:
    """Every key the line prints NaN or infinite, gradient norms included (``nonfinite_values``
    leaves them out: one infinite step under a loss scaler is routine)."""
    out: dict[str, str] = {}
    for m in _PAIR.finditer(line):
        out.setdefault(m["key"], m["value"])
    for m in _PHRASE.finditer(line):
        out.setdefault(m["key"] or m["key2"], m["value"] or m["value2"])
    for m in _SPACED.finditer(line):
        out.setdefault(m["key"], m["value"])
    return out


def _finite_again(events: list[LogEvent], key: str, after: float) -> bool:
    """Does a later event print a finite number under ``key``?"""
    pattern = re.compile(rf"""(?<![\w./-]){re.escape(key)}["']?\s*[=:]\s*["']?[+-]?\d""")
    return any(e.time > after and pattern.search(e.message) for e in events)


def nan_in_log(ev: RunEvidence) -> Finding | None:
    recent = ev.recent
    if not any(nonfinite_values(e) for e in recent):
        return None  # a healthy run costs no scan of its whole log
    # where did it start? the first events that print a non-finite value, from the store
    events = {(e.time, e.stream, e.message): e for e in [*ev.grep(GREP, limit=50), *recent]}
    ordered = sorted(events.values(), key=lambda e: e.time)
    hits = [_Hit(e, k, v, _line_of(e, k)) for e in ordered for k, v in nonfinite_values(e).items()]
    if not hits:
        return None
    losses = [h for h in hits if LOSS_LIKE.search(h.key)]
    lead = losses or hits
    first = lead[0]
    is_loss = bool(losses)
    signals = [
        Signal(
            "nan_loss",
            0.7 if is_loss else 0.3,
            NONFINITE_LINE,
            "log",
            f"{first.key} printed as {first.value}{_step_text(first)}: {first.line[:200]}",
            first.event.time,
        )
    ]
    same_key = [h for h in lead if h.key == first.key]
    lines = {(h.event.time, h.line) for h in same_key}
    recovered = _finite_again(ordered, first.key, max(h.event.time for h in same_key))
    if len(lines) >= 3:
        signals.append(
            Signal(
                "nan_loss",
                0.4 if is_loss else 0.15,
                NONFINITE_REPEATED,
                "log",
                f"{len(lines)} log lines print a non-finite {first.key}",
                same_key[-1].event.time,
            )
        )
    if not recovered and (len(lines) >= 2 or _near_end(ev, same_key[-1].event)):
        # the last value printed: a traceback's lines (the source of the ``raise`` that gave up
        # on it) are no print of the value, whatever the message says about it
        printed = [h for h in same_key if not (h.event.fields or {}).get("block")] or same_key
        signals.append(
            Signal(
                "nan_loss",
                0.35 if is_loss else 0.1,
                NONFINITE_AT_END,
                "log",
                f"{first.key} never printed a finite value again (last: {printed[-1].line[:160]})",
                same_key[-1].event.time,
            )
        )
    contradicted = (
        _stored_finite_to_the_end(ev, first.key, same_key[-1].event.time, len(lines) == 1)
        if is_loss and not recovered
        else None
    )
    if contradicted is not None:
        signals = [
            Signal(s.category, s.weight * 0.25, s.id, s.source, f"{s.detail} ({contradicted})", s.at) for s in signals
        ]
    undefined = False
    if contradicted is None and (not is_loss or VALIDATION.search(first.key)):
        # a statistic (or an evaluation's loss) printed non-finite while a training loss printed
        # finite values on: undefined on its data, not a loss gone NaN (see behaviour.nan_loss)
        going_on = _training_loss_went_on(ordered, first.event.time, first.key)
        if going_on is None and not is_loss:
            going_on = _finite_stored_loss(ev, first.key)
        if going_on is not None:
            undefined = True
            scale = 0.5 if is_loss else 0.4
            signals = [
                Signal(
                    s.category,
                    s.weight * scale,
                    s.id,
                    s.source,
                    f"{s.detail} ({going_on} printed finite values on)",
                    s.at,
                )
                for s in signals
            ]
    if recovered:
        signals = [
            Signal(
                s.category, s.weight * 0.5, s.id, s.source, s.detail + " (it printed finite values again later)", s.at
            )
            for s in signals
        ]
    others = sorted({h.key for h in hits} - {first.key})
    also = f" (also: {', '.join(others[:4])})" if others else ""
    summary = f"The log prints {first.key}={first.value}{_step_text(first)}{also}" + (
        "; it printed finite values again later."
        if recovered
        else f"; but {contradicted}: the line is not the loss's value."
        if contradicted is not None
        else "; the loss stayed finite: an evaluation statistic undefined on its data, not a NaN loss."
        if undefined
        else f"; training went on with a non-finite {first.key}."
    )
    step = _step(first)
    steps = [
        f"Inspect the batch and the gradients{f' at step {step}' if step else ''}: replay it with anomaly detection on."
    ]
    return Finding("nan_loss", summary, signals, steps, kind="software")


#: ``key=0.52``, ``'key': 0.52``, ``"key": 1e-3``: a key printed with a finite number
_FINITE_PAIR = re.compile(r"""(?<![\w./-])(?P<key>[A-Za-z_][\w./-]{0,80})["']?\s*[=:]\s*["']?[+-]?(?:\d|\.\d)""")


def _training_loss_went_on(events: list[LogEvent], after: float, key: str) -> str | None:
    """A training loss (not an evaluation's) that printed a finite value at or after ``after``."""
    for e in events:
        if e.time < after:
            continue
        for raw in e.message.splitlines()[:50]:
            for m in _FINITE_PAIR.finditer(raw):
                name = m["key"]
                if name != key and LOSS_LIKE.search(name) and not VALIDATION.search(name) and not _IGNORE.match(name):
                    return name
    return None


def _finite_stored_loss(ev: RunEvidence, key: str) -> str | None:
    """A training loss the run stored (logged with the SDK, or read from its lines) that never
    went non-finite: a statistic printed as ``nan`` by an evaluation after the training (a
    per-subset report whose subset is empty) is undefined on its data — the loss was never
    printed after it because the training had ended, finite (issue 29)."""
    for m in ev.info.metrics.values():
        name = m.name
        if name == key or m.nonfinite or m.last_step is None:
            continue
        if LOSS_LIKE.search(name) and not VALIDATION.search(name) and not _IGNORE.match(name):
            return name
    return None


def _stored_finite_to_the_end(ev: RunEvidence, key: str, last_printed: float, one_line: bool) -> str | None:
    """The loss the line calls non-finite, as the run stored it (logged with the SDK), finite at
    every point: after the last such line, or — a single line — in a run that exited 0. A table's
    header ("skipped (loss: nan)") or a guard's legend printed once beside a finite loss series is
    no value of the loss (a false alarm at 0.85 on a healthy run, issue 29); a loss that went NaN
    is stored NaN, and a guard that stores only the finite points prints its NaN on many lines."""
    metric = ev.info.metrics.get(key)
    if metric is None or metric.nonfinite or metric.count < 2 or metric.last_time is None or metric.last is None:
        return None
    if metric.last_time < last_printed and not (one_line and ev.info.exit_code == 0):
        return None
    return f"the run stored {key} finite at all its {metric.count} points (last {metric.last:.4g})"


def _line_of(event: LogEvent, key: str) -> str:
    """The line of ``event`` that prints ``key`` non-finite; else the first that names it.

    A traceback names the key on its source lines before its message says the value (``raise
    ValueError(f"loss is {loss} …")`` above ``ValueError: loss is nan at epoch 7``)."""
    raws = event.message.splitlines()
    for raw in raws[:50]:
        if key in raw and key in nonfinite_values(LogEvent(event.time, event.stream, event.level, raw)):
            return raw.strip()
    for raw in raws:
        if key in raw:
            return raw.strip()
    return event.message.splitlines()[0].strip() if event.message else ""


def _step(hit: _Hit) -> str | None:
    m = _STEP.search(hit.line)
    return m[1] if m else None


def _step_text(hit: _Hit) -> str:
    step = _step(hit)
    return f" at step {step}" if step else ""


def _near_end(ev: RunEvidence, event: LogEvent) -> bool:
    """Is ``event`` among the last lines of the run (nothing after it said otherwise)?"""
    tail = ev.tail[-5:]
    return any(e.time == event.time and e.message == event.message for e in tail)
