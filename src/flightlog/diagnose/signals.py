"""Signals: one piece of evidence pointing at one category with a weight, and how several of
them combine into a confidence.

A signal carries the evidence a person reads (``source``, ``detail``, ``at``); the same
objects feed the fast classifier and the findings of the full report, so a confidence is
always backed by the lines that earned it. Weights combine by noisy-OR — independent signals
that agree raise the confidence, and a signal repeated (the same rule matching ten lines)
counts once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from flightlog.diagnose.patterns import (
    CODE_ERROR_CLASSES,
    ERRNO_CATEGORY,
    EXCEPTION_RULES,
    LINE_RULES,
    errno_numbers,
    exception_matches,
)
from flightlog.diagnose.tracebacks import ParsedException, parse_exception_lines
from flightlog.failure import signal_name

__all__ = [
    "Signal",
    "Score",
    "combine",
    "exit_signals",
    "traceback_signals",
    "exception_line_signals",
    "line_signals",
    "line_factor",
    "signal_name",
    "weigh_memory_at_the_kill",
    "MEMORY_AT_LIMIT",
    "RANK_VANISHED",
    "MAX_CONFIDENCE",
    "SIGKILL",
]

MAX_CONFIDENCE = 0.99
#: the id of the exit signals of a SIGKILL (sent from outside, or by the kernel's OOM killer)
SIGKILL = "sigkill"
_TERMINATING = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 15: "SIGTERM"}
_CRASHING = {6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV"}
#: SIGILL: the CPU met an instruction it does not have
_ILLEGAL_INSTRUCTION = 4
#: a time limit raised inside the process: ``alarm()`` (SIGALRM), ``ulimit -t`` (SIGXCPU)
_TIMING = {14: "SIGALRM", 24: "SIGXCPU"}


@dataclass(frozen=True)
class Signal:
    category: str
    weight: float
    id: str  # what was recognized, as a stable id ("sigkill", "memory_far_from_its_limit"): signals
    # dedupe on it and code decides on it; the words a person reads are in ``detail``
    source: str  # exit | traceback | log | resources | stages | metrics | timeline | evidence | baseline
    detail: str  # the evidence itself, quoted for a person
    at: float | None = None  # unix time of the evidence, when it has one

    def evidence(self) -> dict[str, object]:
        from flightlog.timefmt import iso

        return {"source": self.source, "detail": self.detail, "at": iso(self.at)}


@dataclass
class Score:
    category: str
    confidence: float
    signals: list[Signal]


def combine(signals: Iterable[Signal]) -> list[Score]:
    """Scores per category, highest first: noisy-OR over distinct ids (max weight per id)."""
    best: dict[tuple[str, str], Signal] = {}
    for s in signals:
        key = (s.category, s.id)
        if key not in best or s.weight > best[key].weight:
            best[key] = s
    by_cat: dict[str, list[Signal]] = {}
    for s in best.values():
        by_cat.setdefault(s.category, []).append(s)
    scores = []
    for category, sigs in by_cat.items():
        miss = 1.0
        for s in sigs:
            miss *= 1.0 - min(max(s.weight, 0.0), 1.0)
        sigs.sort(key=lambda s: -s.weight)
        scores.append(Score(category, round(min(MAX_CONFIDENCE, 1.0 - miss), 2), sigs))
    scores.sort(key=lambda sc: (-sc.confidence, -len(sc.signals), sc.category))
    return scores


def exit_signals(
    *, exit_code: int | None, signal: int | None, timed_out: bool, oom_killed: bool, at: float | None = None
) -> list[Signal]:
    """What the exit facts alone say."""
    out: list[Signal] = []
    if oom_killed:
        out.append(_oom_record(at))
    if timed_out:
        out.append(Signal("timeout", 0.93, "the_runner_s_timeout", "exit", "stopped by the runner's --timeout", at))
    sig, inferred = signal, False
    if sig is None and exit_code is not None and exit_code < 0:
        sig = -exit_code  # Python's subprocess reports a child killed by N as -N
    elif sig is None and exit_code is not None and 128 < exit_code < 160:
        sig, inferred = exit_code - 128, True  # a shell reports a child killed by N as 128+N
    if sig is not None and not timed_out:
        how = (
            f"exit code {exit_code} (128 + {sig}: {signal_name(sig)})"
            if inferred
            else f"killed by {signal_name(sig)} ({sig})"
        )
        factor = 0.85 if inferred else 1.0
        if sig == 9 and not oom_killed:
            out.append(
                Signal(
                    "killed_by_signal",
                    0.45 * factor,
                    SIGKILL,
                    "exit",
                    f"{how}: sent from outside, or by the kernel OOM killer",
                    at,
                )
            )
            out.append(
                Signal("oom_killed", 0.3 * factor, SIGKILL, "exit", f"{how}: the kernel's OOM killer sends SIGKILL", at)
            )
        elif sig in _TERMINATING:
            out.append(Signal("killed_by_signal", 0.75 * factor, "a_terminating_signal", "exit", how, at))
        elif sig == _ILLEGAL_INSTRUCTION:
            # an instruction this CPU does not have: a wheel or a binary built for a newer CPU
            # (AVX-512, ``-march=native`` on another host) — software that does not fit the
            # machine, not a bug of the workload's (issue 29: code_error 0.72)
            out.append(
                Signal(
                    "dependency_error",
                    0.6 * factor,
                    "an_illegal_instruction",
                    "exit",
                    f"{how}: an instruction this CPU does not have (a binary built for another CPU)",
                    at,
                )
            )
            out.append(
                Signal("code_error", 0.3 * factor, "a_crash_signal", "exit", f"{how}: a crash in native code", at)
            )
        elif sig in _CRASHING:
            out.append(
                Signal("code_error", 0.55 * factor, "a_crash_signal", "exit", f"{how}: a crash in native code", at)
            )
        elif sig in _TIMING:
            out.append(
                Signal(
                    "timeout",
                    0.7 * factor,
                    "a_time_limit_signal",
                    "exit",
                    f"{how}: a time limit set inside the process (alarm, CPU-time limit) ran out",
                    at,
                )
            )
    if signal is None and exit_code is not None:
        if exit_code == 127:
            out.append(
                Signal(
                    "dependency_error",
                    0.5,
                    "exit_127",
                    "exit",
                    "exit code 127: the shell could not find the command",
                    at,
                )
            )
        elif exit_code == 126:
            out.append(
                Signal(
                    "credentials_error",
                    0.45,
                    "exit_126",
                    "exit",
                    "exit code 126: the command is not executable (permission)",
                    at,
                )
            )
        elif exit_code == 124 and not timed_out:
            out.append(
                Signal(
                    "timeout",
                    0.5,
                    "exit_124",
                    "exit",
                    "exit code 124: the convention of `timeout` for a command that ran out of time",
                    at,
                )
            )
        elif exit_code == 2:
            out.append(
                Signal(
                    "bad_parameter",
                    0.3,
                    "exit_2",
                    "exit",
                    "exit code 2: the convention for a command-line usage error (argparse, click)",
                    at,
                )
            )
    return out


def _oom_record(at: float | None) -> Signal:
    return Signal(
        "oom_killed",
        0.9,
        "an_oom_kill_recorded_by_the_runner",
        "exit",
        "the runner detected an out-of-memory kill (cgroup OOM event or SIGKILL at the memory limit)",
        at,
    )


#: the id of the signal "memory was at its limit just before the kill"
MEMORY_AT_LIMIT = "memory_at_its_limit_before_the_kill"
#: the id of the signal of a rank of a distributed run that vanished without recording its end
RANK_VANISHED = "the_rank_vanished"
#: ids of the exit signals of the kill the kernel's OOM killer does: SIGKILL, or a process gone
#: without a word
_OOM_KILLER_IDS = (SIGKILL, "the_process_vanished", RANK_VANISHED)
#: ids of the exit signals that say "stopped from outside" (what memory at the limit argues against)
_KILL_IDS = (*_OOM_KILLER_IDS, "a_terminating_signal")


def weigh_memory_at_the_kill(
    signals: list[Signal], share: float | None, *, detail: str, oom_killed: bool = False, at: float | None = None
) -> list[Signal]:
    """The one place that says whether a kill was the memory limit's. A kill (SIGKILL, SIGTERM,
    a process that vanished) right after memory reached its limit is most likely the memory
    limit's doing — the kernel's OOM killer, a cgroup, an orchestrator evicting for memory — not
    an operator's: memory at 97 % or more of the limit just before the end adds an
    ``oom_killed`` signal strong enough to come first and weakens the "stopped from outside"
    reading; at 90 % it adds less. ``share`` is the highest share of the limit in the last
    samples before the end (None: no limit or no samples).

    ``oom_killed``: the runner recorded an OOM kill in the process tree these ``signals`` are of
    a member of (one rank of a distributed run: the record is the whole run's). It says what a
    SIGKILL or a vanishing of that member was — the OOM killer's, in place of the kill's own
    readings, whatever the samples say —, and nothing about a member that was not killed (the
    OOM killer may have picked another process of the tree). A process of its own passes its
    record to :func:`exit_signals` instead, where it holds however the process ended."""
    if oom_killed and any(s.id in _OOM_KILLER_IDS for s in signals):
        return [s for s in signals if s.id not in _OOM_KILLER_IDS] + [_oom_record(at)]
    if share is None or share < 0.9 or not any(s.id in _KILL_IDS for s in signals):
        return signals
    weight, damp = (0.6, 0.6) if share >= 0.97 else (0.45, 0.8)
    out = [
        replace(s, weight=s.weight * damp) if s.category == "killed_by_signal" and s.id in _KILL_IDS else s
        for s in signals
    ]
    out.append(Signal("oom_killed", weight, MEMORY_AT_LIMIT, "resources", detail, at))
    return out


def traceback_signals(chain: Sequence[ParsedException], *, at: float | None = None) -> list[Signal]:
    """What the last traceback says: every exception of the chain against the rules; the one
    that ended the program weighs most, its causes a little less."""
    out: list[Signal] = []
    if not chain:
        return out
    final = chain[-1]
    specific = False
    for index, exc in enumerate(chain):
        factor = 1.0 if index == len(chain) - 1 else 0.85
        where = _where(exc)
        if exc.short_type == "KeyboardInterrupt":
            out.append(
                Signal(
                    "killed_by_signal",
                    0.7 * factor,
                    "keyboardinterrupt",
                    "traceback",
                    f"KeyboardInterrupt (SIGINT){where}",
                    at,
                )
            )
            specific = True
            continue
        seen: set[str] = set()
        for rule in EXCEPTION_RULES:
            if exception_matches(rule, exc.type, exc.message):
                # the class and the message of one exception are not independent: a second rule
                # of the same category on the same exception adds only half its weight
                damp = 0.5 if rule.category in seen else 1.0
                seen.add(rule.category)
                out.append(
                    Signal(
                        rule.category,
                        rule.weight * factor * damp,
                        rule.id,
                        "traceback",
                        exc.headline()[:300] + where,
                        at,
                    )
                )
                specific = True
        for number in errno_numbers(exc.message):
            category = ERRNO_CATEGORY.get(number)
            if category is not None:
                damp = 0.5 if category in seen else 1.0
                seen.add(category)
                out.append(
                    Signal(
                        category,
                        0.8 * factor * damp,
                        f"errno:{number}",
                        "traceback",
                        f"errno {number} in {exc.headline()[:280]}{where}",
                        at,
                    )
                )
                specific = True
        if exc.short_type == "KeyError" and any("/pandas/" in f.file.replace("\\", "/") for f in exc.frames):
            out.append(
                Signal(
                    "data_error",
                    0.4 * factor,
                    "a_keyerror_from_pandas_indexing",
                    "traceback",
                    f"{exc.headline()[:200]} raised inside pandas (a column or index label that is not in the data)",
                    at,
                )
            )
    strongly_code = CODE_ERROR_CLASSES.get(final.short_type, 0.0) >= 0.6 and not any(
        s.category == "dependency_error" and s.detail.startswith(final.type) for s in out
    )
    if not specific or strongly_code:
        weight = CODE_ERROR_CLASSES.get(final.short_type, 0.45)
        out.append(
            Signal(
                "code_error",
                weight,
                f"code_error_class:{final.short_type}",
                "traceback",
                final.headline()[:300] + _where(final),
                at,
            )
        )
        own = final.innermost_own_frame()
        if own is not None and final.frames and final.frames[-1] is own:
            out.append(
                Signal(
                    "code_error",
                    0.25,
                    "raised_in_the_workload_s_own_code",
                    "traceback",
                    f"raised directly in the workload's code at {own.where()}" + (f": {own.code}" if own.code else ""),
                    at,
                )
            )
    return out


#: how much an exception named in log lines (no whole traceback) counts against a traceback
EXCEPTION_LINES_FACTOR = 0.9
#: a line that says of itself that it is not an error: a level below ERROR, a warning class
_QUIET_LEVEL = re.compile(
    r"^\s*(?:\[?\d{4}-\d\d-\d\d[ T][\d:.,]+\]?\s*|\d\d:\d\d:\d\d[.,]?\d*\s*)?[\[(]?(?:INFO|DEBUG|TRACE|NOTE)\b"
    r"|^\s*\[?[ID]\s?\d{4}|\b[ID]\d{4} \d\d:\d\d|\] ?(?:INFO|DEBUG)\b|\s(?:INFO|DEBUG)\s+[\w.\[]|^[ID] [\w/]+\.\w+:\d+\]"
    r"|: [ID] [\w/]+\.(?:cc|cpp|h|py):\d+\]|\| INFO \|"
)
#: (NCCL prints its errors as "NCCL WARN", TensorFlow the op that failed as "W …] OP_REQUIRES
#: failed": those are not warnings)
_WARNING = re.compile(
    r"\b(?:\w+Warning|WARNING|(?<!NCCL )WARN|Warning)\b|: W [\w/]+\.(?:cc|cpp|h):\d+\](?! OP_REQUIRES failed)|^W\d{4} "
)
#: a line about trouble that went away or is being handled (including a line that says the
#: program carries on without the thing it did not find: "… not found - running with reduced
#: feature set", "continuing without …")
_RECOVERED = re.compile(
    r"\bretrying\b|\bwill retry\b|\bretry(?:ing)? in \d|\bentering retry loop\b|\battempt \d+ (?:of|/) \d+|\bresolved\b|\bresuming\b"
    r"|\bsucceeded\b|\bsuccessfully\b|\brecovered\b|\bfalling back\b|\bfell back\b|\bignor(?:ed|ing)\b"
    r"|\b(?:running|continuing|proceeding) with (?:a )?(?:reduced|limited)\b|\b(?:continuing|proceeding) without\b",
    re.I,
)


def line_factor(line: str) -> float:
    """How much one line's own words let it count: a line that calls itself INFO or DEBUG, or
    says the trouble was retried or resolved, is background; a warning counts less than an error."""
    if _RECOVERED.search(line) or _QUIET_LEVEL.search(line):
        return 0.5
    if _WARNING.search(line):
        return 0.75
    return 1.0


def line_signals(lines: Sequence[tuple[str, float | None, float]]) -> list[Signal]:
    """What log lines say, outside any traceback: ``(text, time, factor)`` in order, where
    ``factor`` (0..1) says how much a line counts (its level, how recent it is)."""
    out: list[Signal] = []
    for text, at, factor in lines:
        if "Traceback (most recent call last)" in text:
            # what a log event printed before its traceback (the traceback itself is read as a chain)
            text = text[: text.index("Traceback (most recent call last)")]
        for raw in text.splitlines() or [text]:
            line = raw.strip()
            if not line or len(line) > 2000:
                continue
            found = [
                Signal(rule.category, rule.weight * factor, rule.id, "log", line[:300], at)
                for rule in LINE_RULES
                if rule.pattern.search(line)
            ]
            if "rrno" in line or "code:" in line or "Error" in line:
                for number in errno_numbers(line):
                    category = ERRNO_CATEGORY.get(number)
                    if category is not None:
                        found.append(Signal(category, 0.55 * factor, f"errno:{number}", "log", line[:300], at))
            by_exception = _exception_line(line, at, factor)
            if not found and not by_exception:
                continue  # most lines (progress, metrics) say nothing: no need to weigh their level
            own = line_factor(line)
            if own < 1.0:
                found = [replace(x, weight=x.weight * own) for x in found]
                by_exception = [replace(x, weight=x.weight * own) for x in by_exception]
            strongest: dict[str, Signal] = {}
            for sig in found:  # one line is one piece of evidence per category, however many rules it matches
                if sig.category not in strongest or sig.weight > strongest[sig.category].weight:
                    strongest[sig.category] = sig
            out += _strongest_per_category(list(strongest.values()), by_exception)
    return out


def exception_line_signals(texts: Sequence[str], *, at: float | None = None) -> list[Signal]:
    """The exceptions named in log lines when no whole traceback was printed (a trimmed one, a
    launcher's or a worker pool's ``Type: message``, a wrapper's repr of its cause), read like a
    traceback's chain — the last one named ended the program — counting a little less."""
    lines = [line for text in texts if "Traceback (most recent call last)" not in text for line in text.splitlines()]
    chain = [exc for exc in parse_exception_lines("\n".join(lines)) if not _WARNING.search(exc.type)]
    if not chain:
        return []
    quiet = {
        exc.headline()
        for exc in chain
        if any(line_factor(line) < 1.0 and exc.headline()[:60] in line for line in lines)
    }
    out = []
    for s in traceback_signals(chain, at=at):
        f = EXCEPTION_LINES_FACTOR * (0.6 if any(q[:60] in s.detail for q in quiet) else 1.0)
        out.append(Signal(s.category, s.weight * f, s.id, "log", s.detail, s.at))
    return out


def _strongest_per_category(by_line: list[Signal], by_exception: list[Signal]) -> list[Signal]:
    """One line is one piece of evidence: where the line rules and the exception it names point
    at the same category, only the stronger reading of the line counts."""
    out = list(by_line)
    for category in {s.category for s in by_exception}:
        mine = [s for s in by_exception if s.category == category]
        theirs = [s for s in by_line if s.category == category]
        if max(s.weight for s in mine) > max((s.weight for s in theirs), default=0.0):
            out = [s for s in out if s.category != category] + mine
    return out


#: an exception as a launcher, a worker pool or a logger prints it outside a traceback
#: (``botocore.exceptions.NoCredentialsError: Unable to locate credentials``,
#: ``ray.exceptions.RayTaskError(ValueError): ...``, ``Caused by: ml.dmlc...XGBoostError: ...``)
_EXCEPTION_LINE = re.compile(
    r"(?:^|[\s:>\]|])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Timeout|Forbidden|Unavailable|NotFound))"
    r"(?:\([\w.]*\))?:\s*(?P<message>\S.*)$"
)
#: an exception line outside a traceback counts a little less than the traceback itself
_EXCEPTION_LINE_FACTOR = 0.8


def _exception_line(line: str, at: float | None, factor: float) -> list[Signal]:
    """The exception rules on a line that names an exception (``Type: message``)."""
    m = _EXCEPTION_LINE.search(line)
    if m is None:
        return []
    out: list[Signal] = []
    seen: set[str] = set()
    for rule in EXCEPTION_RULES:
        if not exception_matches(rule, m["type"], m["message"]):
            continue
        damp = 0.5 if rule.category in seen else 1.0
        seen.add(rule.category)
        out.append(
            Signal(rule.category, rule.weight * factor * damp * _EXCEPTION_LINE_FACTOR, rule.id, "log", line[:300], at)
        )
    return out


def _where(exc: ParsedException) -> str:
    frame = exc.innermost_own_frame() or (exc.frames[-1] if exc.frames else None)
    return f" (at {frame.where()})" if frame else ""
