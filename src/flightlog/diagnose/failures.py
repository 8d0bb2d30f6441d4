"""Failure analysis: the exit, the signal, cgroup and OOM facts, the last traceback and the log
events of a run → findings in the failure categories of the taxonomy.

The same signals as the fast classifier, with more to go on: every event has its time and
level, resource samples show how close memory came to its limit, and the position of the
last traceback says whether it is what ended the process or an error handled long before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from flightlog.diagnose.evidence import ERROR, WARNING, RunEvidence
from flightlog.diagnose.findings import Finding
from flightlog.diagnose.memory import memory_figure
from flightlog.diagnose.memory import peak_memory as _peak_memory
from flightlog.diagnose.signals import (
    SIGKILL,
    Signal,
    combine,
    exception_line_signals,
    exit_signals,
    line_signals,
    signal_name,
    traceback_signals,
    weigh_memory_at_the_kill,
)
from flightlog.diagnose.taxonomy import FAILURE_CATEGORIES, TITLE
from flightlog.diagnose.tracebacks import ParsedException, parse_chain, parse_exception_lines
from flightlog.models import LogEvent
from flightlog.statuses import ERROR_STATUSES, TERMINAL_STATUSES, UNSUCCESSFUL_STATUSES
from flightlog.timefmt import format_duration, format_size

__all__ = ["analyze_failure", "FailureFacts", "missing_keys"]

_HEADER = "Traceback (most recent call last)"
#: a run that succeeded still shows what its log complained about, but never as a lead
_SUCCESS_FACTOR = 0.35
_NEAR_END = 5
# signal ids this module decides on
MEMORY_FAR_FROM_LIMIT = "memory_far_from_its_limit"
SILENT_BEFORE_TIMEOUT = "silent_before_the_timeout"
STEPPING_AT_TIMEOUT = "still_stepping_at_the_timeout"
BUSY_AT_TIMEOUT = "still_busy_at_the_timeout"
_PATHS = (
    re.compile(
        r"""(?:No such file or directory|does not exist|not found|Unable to open file)[^'"\n]*?['"]([^'"\n]+)['"]""",
        re.I,
    ),
    re.compile(r"""['"]([^'"\n]+)['"][^'"\n]{0,20}(?:does not exist|not found|\[Errno 2\])""", re.I),
    re.compile(r"""can't open file ['"]([^'"\n]+)['"]""", re.I),
)
_MODULE = re.compile(r"No module named '([\w.]+)'|cannot import name '(\w+)' from '([\w.]+)'")
_ENDPOINT = re.compile(
    r"host='([^']+)', port=(\d+)|https?://([\w.-]+)(?::(\d+))?|\b(\d{1,3}(?:\.\d{1,3}){3}|localhost):(\d{2,5})\b"
)
#: how a KeyError names the keys it could not find: a pandas list (``"['tenure', 'amount'] not in
#: index"``, ``None of [Index(['a', 'b'], dtype='object')] are in the [columns]``), a groupby
#: (``Column not found: price``, ``Columns not found: 'a', 'b'``), or one plain key (``'price'``)
_KEY_LIST = (
    re.compile(r"^['\"]?(\[.{1,2000}?\]) not in index"),
    re.compile(r"None of \[Index\((\[.{1,2000}?\])"),
)
_KEY_GROUPBY = re.compile(r"^['\"]?Columns? not found: (.{1,2000}?)['\"]?$")
_KEY_PLAIN = re.compile(r"^'([^']{1,200})'$|^\"([^\"]{1,200})\"$")
_QUOTED = re.compile(r"'([^']{1,200})'|\"([^\"]{1,200})\"")


class FailureFacts:
    """What the failure analysis learned that other analyzers and the summary reuse."""

    def __init__(self) -> None:
        self.chain: list[ParsedException] = []
        self.traceback_at: float | None = None
        self.traceback_final = False


def analyze_failure(ev: RunEvidence, facts: FailureFacts | None = None) -> list[Finding]:
    info = ev.info
    facts = facts or FailureFacts()
    if info.status not in TERMINAL_STATUSES:
        return []  # still running: nothing has ended yet
    ended = ev.process_end or info.ended
    signals = exit_signals(
        exit_code=info.exit_code, signal=info.signal, timed_out=ev.timed_out, oom_killed=ev.oom_killed, at=ended
    )
    if info.status == "crashed":
        signals.append(
            Signal(
                "killed_by_signal",
                0.35,
                "the_process_vanished",
                "exit",
                "the process vanished without recording its end (SIGKILL, a lost host, or the OOM killer)",
                ended,
            )
        )
    events = ev.recent
    signals += _traceback(ev, events, facts)
    signals += _lines(ev, events, facts)
    signals += _memory(ev)
    if ev.timed_out:
        signals += _timeout(ev)
    if not ev.timed_out and (near := _memory_before_the_end(ev)) is not None:
        used, limit, when = near
        signals = weigh_memory_at_the_kill(
            signals,
            used / limit,
            at=when,
            detail=f"memory was at {format_size(used)}, {used / limit:.0%} of the {format_size(limit)} limit, "
            "in the last samples before the process was killed",
        )
    if any(s.id == MEMORY_FAR_FROM_LIMIT for s in signals):
        # a SIGKILL far below any memory limit was not the OOM killer's
        signals = [s for s in signals if not (s.category == "oom_killed" and s.id == SIGKILL)]
    if info.status == "succeeded":
        signals = [replace(s, weight=s.weight * _SUCCESS_FACTOR) for s in signals]
    scores = [s for s in combine(signals) if s.category in FAILURE_CATEGORIES or s.category == "nan_loss"]
    if info.status in UNSUCCESSFUL_STATUSES and not scores and info.exit_code not in (None, 0):
        unexplained = Signal(
            "code_error",
            0.25,
            "an_unexplained_exit",
            "exit",
            f"exit code {info.exit_code} with no traceback or known error message in the log",
            ended,
        )
        scores = combine([unexplained])
    findings = []
    for score in scores:
        findings.append(
            Finding(
                score.category,
                _summary(score.category, score.signals, ev, facts),
                score.signals,
                _next_steps(score.category, score.signals, ev, facts),
                _kind(score.category, score.signals, facts),
                _context(score.category, ev),
            )
        )
    return findings


# ── signals ──────────────────────────────────────────────────────────────────
def _traceback(ev: RunEvidence, events: list[LogEvent], facts: FailureFacts) -> list[Signal]:
    info = ev.info
    index = next((i for i in range(len(events) - 1, -1, -1) if _HEADER in events[i].message), None)
    failure = info.failure or {}
    text, at, after = None, None, []
    if index is not None:
        text, at, after = events[index].message, events[index].time, events[index + 1 :]
    elif failure.get("traceback"):
        text, at = failure["traceback"], info.ended
    elif failure.get("exception"):  # a summary without its text (a remote writer, an old run)
        text = f"{_HEADER}:\n{failure['exception']}: {failure.get('message', '')}"
        at = info.ended
    chain = parse_chain(text) or (parse_exception_lines(text) if text else [])
    recorded = str(failure.get("exception") or "").rsplit(".", 1)[-1]
    if recorded and (not chain or chain[-1].short_type != recorded):
        # the failure summary (the SDK's exception, the runner's last traceback) names another
        # exception than the log's last traceback event: trust the summary
        text = failure.get("traceback") or f"{_HEADER}:\n{failure['exception']}: {failure.get('message', '')}"
        chain, at, after = parse_chain(text), info.ended, []
    if not chain:
        return _exception_lines(ev, events)
    final = _is_final(info.exit_code, info.signal, info.end_reason, after)
    facts.chain, facts.traceback_at, facts.traceback_final = chain, at, final
    factor = 1.0 if final else 0.55
    return [replace(s, weight=s.weight * factor) for s in traceback_signals(chain, at=at)]


#: how many of the last log events are read for exceptions when no whole traceback was logged
_EXCEPTION_EVENTS = 30


def _exception_lines(ev: RunEvidence, events: list[LogEvent]) -> list[Signal]:
    """No whole traceback: the exceptions the last lines of a failed run name (a launcher's or a
    worker pool's ``Type: message``, a trimmed traceback), as the fast classifier reads them."""
    if ev.info.status not in ERROR_STATUSES:
        return []
    tail = [e for e in events if e.stream != "sdk"][-_EXCEPTION_EVENTS:]
    at = tail[-1].time if tail else ev.info.ended
    return exception_line_signals([e.message for e in tail], at=at)


def _is_final(exit_code: int | None, sig: int | None, end_reason: str | None, after: list[LogEvent]) -> bool:
    """Is the last traceback what ended the process? An uncaught Python exception exits 1
    (the SDK records it as end_reason "exception"); a traceback followed by more errors, or by
    an exit with another code, was handled."""
    if end_reason == "exception":
        return True
    if sig is not None or exit_code != 1:
        return False
    later_errors = [e for e in after if e.level >= ERROR and e.stream != "sdk"]
    return len(later_errors) <= 2 and len(after) <= 50


def _lines(ev: RunEvidence, events: list[LogEvent], facts: FailureFacts) -> list[Signal]:
    rows: list[tuple[str, float | None, float]] = []
    n = len(events)
    for i, e in enumerate(events):
        if _HEADER in e.message:
            continue
        level = 1.0 if e.level >= ERROR else 0.8 if e.level >= WARNING or e.stream == "stderr" else 0.65
        rows.append((e.message, e.time, level * (0.75 + 0.25 * (i + 1) / n)))
    if not rows:  # no stored events (pruned logs): the failure summary's last lines
        last = [str(x) for x in (ev.info.failure or {}).get("last_lines") or []]
        rows = [(line, ev.info.ended, 0.75 + 0.25 * (i + 1) / len(last)) for i, line in enumerate(last)]
    signals = line_signals(rows)
    if ev.info.status in ERROR_STATUSES and not facts.chain:
        # with no traceback, an error line among the very last ones before a failing exit is
        # most likely what ended it: position is a second, independent signal
        last_texts = {text for text, _, _ in rows[-_NEAR_END:]}
        near: dict[str, Signal] = {}
        for s in signals:
            if s.category not in near and any(s.detail in text for text in last_texts):
                near[s.category] = s
        for category, s in near.items():
            signals.append(
                Signal(
                    category,
                    0.25,
                    "just_before_the_failing_exit",
                    "log",
                    f"among the last {_NEAR_END} lines before exit code {ev.info.exit_code}: {s.detail}",
                    s.at,
                )
            )
    return signals


def _memory(ev: RunEvidence) -> list[Signal]:
    """How close memory came to its limit, from the samples and the runner's cgroup facts."""
    out: list[Signal] = []
    info = ev.info
    oom = (info.failure or {}).get("oom") or {}
    limit = ev.memory_limit
    peak, peak_at = _peak_memory(ev)
    if oom.get("peak_bytes"):
        peak = max(peak or 0, int(oom["peak_bytes"]))
    if oom.get("oom_kills"):
        out.append(
            Signal(
                "oom_killed",
                0.4,
                "the_cgroup_counted_an_oom_kill",
                "resources",
                f"the memory cgroup counted {oom['oom_kills']} OOM kill(s)"
                + (f" at its limit of {format_size(oom.get('limit_bytes'))}" if oom.get("limit_bytes") else ""),
                info.ended,
            )
        )
    ended_by_kill = (
        info.signal == 9 or info.exit_code == 137 or info.status == "crashed" or ev.oom_killed
    ) and not ev.timed_out
    if ended_by_kill and not ev.oom_killed and peak:
        ceiling = limit or max((s.get("host_memory_total") or 0 for s in ev.resources), default=0)
        if ceiling and peak < 0.5 * ceiling:
            out.append(
                Signal(
                    "killed_by_signal",
                    0.3,
                    MEMORY_FAR_FROM_LIMIT,
                    "resources",
                    f"memory peaked at only {format_size(peak)}, {peak / ceiling:.0%} of the "
                    f"{'limit' if limit else 'host'} ({format_size(ceiling)}): not an out-of-memory kill",
                    peak_at,
                )
            )
    if info.status == "crashed" and peak and not limit:
        total = max((s.get("host_memory_total") or 0) for s in ev.resources) if ev.resources else 0
        if total and peak / total >= 0.85:
            out.append(
                Signal(
                    "oom_killed",
                    0.4,
                    "memory_at_the_host_s_size",
                    "resources",
                    f"memory peaked at {format_size(peak)} of the host's {format_size(total)} before the process vanished",
                    peak_at,
                )
            )
    return out


#: how many of the last resource samples before the end say "just before the kill"
_LAST_SAMPLES = 3


def _memory_before_the_end(ev: RunEvidence) -> tuple[int, int, float | None] | None:
    """``(bytes, limit, time)``: the most memory of the last samples before the process ended,
    against its limit — or the peak the runner's cgroup recorded, when there are no samples."""
    limit = ev.memory_limit
    if not limit:
        return None
    end = ev.process_end or ev.info.ended
    samples = [s for s in ev.resources if end is None or (s.get("time") or 0.0) <= end + 1.0]
    best: tuple[int, float | None] | None = None
    for s in samples[-_LAST_SAMPLES:]:
        for key in ("rss_bytes", "cgroup_memory_usage"):
            v = s.get(key)
            if isinstance(v, (int, float)) and v > 0 and (best is None or v > best[0]):
                best = (int(v), s.get("time"))
    peak = ((ev.info.failure or {}).get("oom") or {}).get("peak_bytes")
    if best is None and isinstance(peak, (int, float)) and peak > 0:
        best = (int(peak), ev.info.ended)
    return (best[0], limit, best[1]) if best else None


def _timeout(ev: RunEvidence) -> list[Signal]:
    """Was a run that timed out still working (it needs more time) or silent (it hung)?"""
    end = ev.process_end or ev.info.ended
    start = ev.process_start
    if end is None or start is None or end <= start:
        return []
    times = [e.time for e in ev.tail]
    last_step = ev.last_step
    if last_step is not None:
        times.append(last_step)
    last = max(times) if times else None
    quiet = end - last if last is not None else end - start
    limit = ev.runner_config.get("timeout_s") or (end - start)
    if quiet >= 0.5 * limit:
        return [
            Signal(
                "timeout",
                0.3,
                SILENT_BEFORE_TIMEOUT,
                "log",
                f"nothing was logged in the last {format_duration(quiet)} before the timeout: it looks hung",
                last or start,
            )
        ]
    if quiet <= 0.25 * limit:
        if last_step is not None and end - last_step <= 0.35 * limit:
            return [
                Signal(
                    "timeout",
                    0.2,
                    STEPPING_AT_TIMEOUT,
                    "metrics",
                    f"training steps continued until {format_duration(end - last_step)} before the timeout: "
                    "it needs more time",
                    last_step,
                )
            ]
        return [
            Signal(
                "timeout",
                0.15,
                BUSY_AT_TIMEOUT,
                "log",
                f"it was still writing output {format_duration(quiet)} before the timeout",
                last,
            )
        ]
    return []


# ── words for a person ───────────────────────────────────────────────────────
def _headline(signals: list[Signal], facts: FailureFacts) -> str:
    """The exception when the traceback is among the signals, else the strongest line."""
    if facts.chain and any(s.source == "traceback" for s in signals):
        return facts.chain[-1].headline()[:300]
    return signals[0].detail if signals else ""


def _summary(category: str, signals: list[Signal], ev: RunEvidence, facts: FailureFacts) -> str:
    info = ev.info
    head = _headline(signals, facts)
    took = format_duration(info.duration) if info.duration is not None else None
    text = f"{TITLE[category][0].upper()}{TITLE[category][1:]}: {head.rstrip('.')}."
    if category == "oom_killed":
        figure = memory_figure(ev)  # the figure triage shows for the run, too
        how = "the kernel killed the process for memory" if ev.oom_killed or info.signal == 9 else head
        text = f"Killed for exceeding memory: {how}"
        if figure.limit_bytes:
            text += f"; {figure.text()}"
        text += "."
    elif category == "timeout":
        limit = ev.runner_config.get("timeout_s")
        text = (
            "Stopped by the runner's timeout"
            + (f" of {format_duration(limit)}" if limit else "")
            + (f" after {took}" if took else "")
        )
        ids = {x.id for x in signals}
        if SILENT_BEFORE_TIMEOUT in ids:
            text += "; it had gone silent before: it looks hung, not slow"
        elif STEPPING_AT_TIMEOUT in ids:
            text += "; it was still making progress: it needs more time than the limit"
        elif BUSY_AT_TIMEOUT in ids:
            text += "; it was still writing output when it was stopped"
        text += "."
    elif category == "killed_by_signal":
        sig = signal_name(info.signal) if info.signal else "a signal"
        if info.status == "crashed":
            text = "The process vanished without recording its end (killed with SIGKILL, or its host was lost)."
        else:
            text = (
                f"Terminated from outside by {sig}"
                + (f" after {took}" if took else "")
                + "; nothing in the log points at an error of its own."
            )
    elif category == "missing_file":
        path = _path(signals)
        text = f"A file the run needed does not exist: {path}." if path else text
    elif category == "dependency_error":
        module = _module(signals)
        text = f"Module {module!r} is not installed where the run ran ({head})." if module else text
    elif category == "service_unavailable":
        endpoint = _endpoint(signals)
        text = f"A service the run depends on was unreachable{f' at {endpoint}' if endpoint else ''}: {head}."
    elif category == "data_error":
        keys = missing_keys(facts)
        if len(keys) == 1:
            text = f"The data broke an assumption of the code: column or key {keys[0]!r} is not in the input ({head})."
        elif keys:
            text = (
                f"The data broke an assumption of the code: {len(keys)} columns or keys are not in the input: "
                f"{_keys_text(keys)} ({head})."
            )
    elif category == "code_error" and facts.chain:
        own = facts.chain[-1].innermost_own_frame()
        if own is not None:
            text = f"The workload's code raised {facts.chain[-1].headline()[:200]} at {own.where()}."
    if not facts.traceback_final and facts.chain and any(s.source == "traceback" for s in signals):
        text += " (The last traceback in the log was followed by more output: it may have been handled.)"
    return text


def _next_steps(category: str, signals: list[Signal], ev: RunEvidence, facts: FailureFacts) -> list[str]:
    steps: list[str] = []
    cwd = ev.runner_config.get("cwd") or ((ev.info.failure or {}).get("workload") or {}).get("cwd")
    if category == "missing_file" and (path := _path(signals)):
        where = f" (the run's working directory was {cwd})" if cwd and not path.startswith("/") else ""
        steps.append(f"Check that {path} exists on the host that ran the job{where}.")
    elif category == "dependency_error" and (module := _module(signals)):
        steps.append(
            f"Install the package that provides {module.split('.')[0]!r} into the run's environment, or fix the import."
        )
    elif category == "service_unavailable" and (endpoint := _endpoint(signals)):
        steps.append(f"Check that {endpoint} is listening and reachable from the run's host.")
    elif category == "data_error" and (keys := missing_keys(facts)):
        steps.append(
            f"List the input's columns and look for {_keys_text(keys)} under another name (a rename upstream?)."
        )
    elif category == "code_error" and facts.chain and (own := facts.chain[-1].innermost_own_frame()):
        steps.append(f"Open {own.file}:{own.line} ({own.function}){': ' + own.code if own.code else ''}.")
    elif category == "oom_killed":
        steps.append("See the rightsizing section of this report for a memory request with headroom.")
    return steps


def _kind(category: str, signals: list[Signal], facts: FailureFacts) -> str | None:
    if category == "missing_file":
        path = _path(signals) or ""
        if re.search(r"\.(ya?ml|toml|ini|cfg|conf|json|env|py)$", path) or "config" in path.lower():
            return "software"  # a configuration file, not data
    return None


def _context(category: str, ev: RunEvidence) -> list[dict[str, Any]]:
    from flightlog.timefmt import iso

    out: list[dict[str, Any]] = []
    info = ev.info
    if category == "timeout" and ev.runner_config.get("timeout_s"):
        out.append(
            {"source": "runner", "detail": f"--timeout {format_duration(ev.runner_config['timeout_s'])}", "at": None}
        )
    if category in ("timeout", "killed_by_signal") and ev.tail:
        last = ev.tail[-1]
        out.append(
            {
                "source": "log",
                "detail": f"last line before the end: {last.message.splitlines()[-1][:200]}",
                "at": iso(last.time),
            }
        )
    if category == "oom_killed":
        oom = (info.failure or {}).get("oom") or {}
        if oom:
            out.append(
                {
                    "source": "runner",
                    "detail": "cgroup facts: "
                    + ", ".join(
                        f"{k}={format_size(v) if k.endswith('_bytes') else v}"
                        for k, v in oom.items()
                        if k not in ("cgroup",)
                    ),
                    "at": iso(info.ended),
                }
            )
    return out


def _path(signals: list[Signal]) -> str | None:
    for s in signals:
        for pattern in _PATHS:
            m = pattern.search(s.detail)
            if m:
                return m.group(1)
    return None


def _module(signals: list[Signal]) -> str | None:
    for s in signals:
        m = _MODULE.search(s.detail)
        if m:
            return m.group(1) or m.group(3)
    return None


def _endpoint(signals: list[Signal]) -> str | None:
    for s in signals:
        m = _ENDPOINT.search(s.detail)
        if m:
            if m.group(1):
                return f"{m.group(1)}:{m.group(2)}"
            if m.group(3):
                return m.group(3) + (f":{m.group(4)}" if m.group(4) else "")
            return f"{m.group(5)}:{m.group(6)}"
    return None


def missing_keys(facts: FailureFacts) -> list[str]:
    """The columns or keys a KeyError names, each one (plain, or in pandas' own words)."""
    for exc in reversed(facts.chain):
        if exc.short_type == "KeyError":
            keys = parse_missing_keys(exc.message)
            if keys:
                return keys
    return []


def parse_missing_keys(message: str) -> list[str]:
    """The keys of one KeyError message: ``"['tenure', 'amount'] not in index"`` → both columns."""
    text = message.strip()
    for pattern in _KEY_LIST:
        m = pattern.search(text)
        if m:
            return _unique_keys(q[0] or q[1] for q in _QUOTED.findall(m[1]))
    m = _KEY_GROUPBY.search(text)
    if m:
        quoted = [q[0] or q[1] for q in _QUOTED.findall(m[1])]
        return _unique_keys(quoted or [m[1]])
    m = _KEY_PLAIN.search(text)
    if m:
        return [m[1] or m[2]]
    return []


def _unique_keys(keys: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(k.strip() for k in keys if k.strip()))


def _keys_text(keys: list[str]) -> str:
    """``'a'``, ``'a' and 'b'``, ``'a', 'b' and 'c'`` (at most six, then how many more)."""
    shown = [repr(k) for k in keys[:6]]
    more = len(keys) - len(shown)
    if more:
        shown.append(f"{more} more")
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
