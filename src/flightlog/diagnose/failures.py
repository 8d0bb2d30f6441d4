"""Failure analysis: the exit, the signal, cgroup and OOM facts, the log events and the memory
samples of a run → findings in the failure categories of the taxonomy.

The same reading and ranking as the fast classifier (:mod:`.classify`): the run is read as one
structure (:func:`read_run`), the rules find the evidence, the ranker gives each category its
calibrated confidence. The full diagnosis has more to go on — every event with its JSON
fields, the memory samples before the end, the cgroup's OOM count — and more to say: the
summary names the path, module, endpoint or keys, and how close memory came to its limit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from flightlog.diagnose.candidates import collect
from flightlog.diagnose.evidence import RunEvidence
from flightlog.diagnose.findings import LEAD, REPORT_FLOOR, Finding
from flightlog.diagnose.memory import memory_figure
from flightlog.diagnose.memory import peak_memory as _peak_memory
from flightlog.diagnose.ranker import STRUCTURE, Ranked, rank
from flightlog.diagnose.signals import Signal, line_factor, signal_name
from flightlog.diagnose.structure import FailureRead, read_failure
from flightlog.diagnose.taxonomy import TITLE
from flightlog.diagnose.textforms import plain_text
from flightlog.diagnose.tracebacks import ParsedException
from flightlog.statuses import TERMINAL_STATUSES
from flightlog.timefmt import format_duration, format_size

__all__ = ["analyze_failure", "read_run", "FailureFacts", "missing_keys"]

_HEADER = "Traceback (most recent call last)"
#: a run that succeeded still shows what its log complained about, but never as a lead —
#: unless the complaint is how the process ended (:func:`_ends_the_process`)
_SUCCESS_FACTOR = 0.35
_NEAR_END = 5
#: a line's own level (``line_factor``) at or below which it says the run carried on: INFO or
#: DEBUG, or words of a retry, a fallback, a recovery
_CARRIED_ON = 0.5
#: a line that says the work came to its end ("notebook finished", "export done", "all 12
#: trials completed"): printed after a traceback by a process that exited 0, the traceback was
#: one it caught on the way (a notebook cell's ``traceback.print_exc()`` led as data_error 0.70
#: on a healthy run; issue 29)
_FINISHED = re.compile(r"\b(?:finished|completed?|done|all done)\b", re.I)
#: the places of a hit on the chain of exceptions (the last traceback of the log)
_ON_THE_CHAIN = frozenset({"only", "inner", "middle", "outer"})
#: the categories that say how a process was ended, which one that exited 0 may still tell in
#: its last lines: a signal or a time limit it caught ("Received SIGTERM", then a checkpoint
#: saved, then exit 0)
_ENDINGS = frozenset({"killed_by_signal", "timeout"})
# signal ids this module decides on
MEMORY_FAR_FROM_LIMIT = "memory_far_from_its_limit"
SILENT_BEFORE_TIMEOUT = "silent_before_the_timeout"
STEPPING_AT_TIMEOUT = "still_stepping_at_the_timeout"
BUSY_AT_TIMEOUT = "still_busy_at_the_timeout"
_PATHS = (
    # the name right before the words that say it is missing: "alias 'champion' not found for
    # model 'churn'" misses champion, not the name quoted after (issue 29: churn was "the file")
    re.compile(r"""['"]([^'"\n]+)['"][ \t:]{0,3}(?:does not exist|(?:was |is |could )?not (?:be )?found)\b""", re.I),
    re.compile(
        r"""(?:No such file or directory|does not exist|not found|Unable to open file)[^'"\n]*?['"]([^'"\n]+)['"]""",
        re.I,
    ),
    re.compile(r"""['"]([^'"\n]+)['"][^'"\n]{0,20}(?:does not exist|not found|\[Errno 2\])""", re.I),
    re.compile(r"""can't open file ['"]([^'"\n]+)['"]""", re.I),
)
#: a name that reads as a path or a file's name: a separator, a drive, a home or an extension
_PATH_LIKE = re.compile(r"[/\\~]|\.\w{1,8}$")
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
        self.chain: list[ParsedException] = []  # the read's links, innermost cause first
        self.traceback_at: float | None = None
        self.traceback_final = False
        self.read: FailureRead | None = None


#: how many of the last log events are read (besides the errors and warnings of the evidence)
_EVENTS = 400


def read_run(ev: RunEvidence) -> FailureRead:
    """The run's failure read as one structure (:func:`~.structure.read_failure`): its log
    events (JSON fields unfolded; the runner's own lines left out), the failure summary's
    traceback when the log lacks it, the exit facts, and the memory at the end."""
    info = ev.info
    failure = info.failure or {}
    tail = ev.tail  # in the order they were written (several lines of one read share a time)
    first = tail[0].time if tail else float("inf")
    events = [e for e in [*(e for e in ev.recent if e.time < first), *tail] if e.component != "flightlog"][-_EVENTS:]
    texts = [plain_text(e.message, e.fields) if e.fields else e.message for e in events]
    if not texts:  # no stored events (pruned logs): the failure summary's last lines
        texts = [str(x) for x in failure.get("last_lines") or []]
    oom = failure.get("oom") or {}
    near = None if ev.timed_out else memory_before_the_end(ev)
    share = near[0] / near[1] if near else _share_of_the_host(ev)
    exit_code = info.exit_code
    if exit_code is None and info.signal is None and (info.end_reason == "exception" or failure.get("exception")):
        # an uncaught exception recorded by the SDK alone (no runner saw the exit): the
        # interpreter exits 1 on it, and that is how the same crash reads under `flightlog run`
        exit_code = 1
    facts: dict[str, Any] = {
        "exit_code": exit_code,
        "signal": info.signal,
        "end_reason": "crashed" if info.status == "crashed" else info.end_reason,
        "timed_out": ev.timed_out,
        "oom_killed": ev.oom_killed or bool(oom.get("oom_kills")),
        "memory_share_at_end": share,
        "rank": None,
    }
    read = read_failure(texts, **facts)
    recorded = str(failure.get("exception") or "")
    short = recorded.rsplit(".", 1)[-1]
    if short and not _holds(read, short):
        # the failure summary (the SDK's exception, the runner's last traceback) names another
        # exception than the log's last chain, or the log has none: the summary ended it
        summary = failure.get("traceback") or f"{_HEADER}:\n{recorded}: {failure.get('message', '')}"
        read = read_failure([*texts, summary], **facts)
    return read


def _holds(read: FailureRead, short: str) -> bool:
    """Whether the log's chain ends in the summary's exception, or holds it as a child's under a
    launcher's wrapper: torchrun's ``ChildFailedError`` printed after the rank's traceback that
    the runner recorded as the failure (read again with that traceback appended, the rank's
    exception would sit after the launcher's and read the launcher's traceback as its child)."""
    if read.launcher is not None and read.launcher.rsplit(".", 1)[-1] == short:
        return True  # the launcher's own wrapper, read with what its child printed before it
    if read.outermost is None:
        return False
    if read.outermost.short_type == short:
        return True
    return read.launcher is not None and len(read.links) > 1 and read.links[-2].short_type == short


def analyze_failure(ev: RunEvidence, facts: FailureFacts | None = None) -> list[Finding]:
    info = ev.info
    facts = facts or FailureFacts()
    if info.status not in TERMINAL_STATUSES:
        return []  # still running: nothing has ended yet
    ended = ev.process_end or info.ended
    read = read_run(ev)
    near = None if ev.timed_out else memory_before_the_end(ev)
    detail = None
    if near is not None:
        used, limit, _ = near
        detail = (
            f"memory was at {format_size(used)}, {used / limit:.0%} of the {format_size(limit)} limit, "
            "in the last samples before the process was killed"
        )
    hits = collect(read, at=ended, memory_detail=detail)
    ranked = rank(read, hits)
    facts.read = read
    facts.chain = list(read.links)
    facts.traceback_at = ended
    facts.traceback_final = read.end_reason == "exception" or (
        read.signal is None and read.exit_code == 1 and read.lines_after_chain <= 50
    )
    context_signals = _memory(ev) + (_timeout(ev) if ev.timed_out else [])
    succeeded = _succeeded(ev, read)
    findings = []
    for place, r in enumerate(ranked):
        confidence = r.confidence
        if succeeded and not _ends_the_process(r, read):
            confidence = round(confidence * _SUCCESS_FACTOR, 2)
        if confidence < REPORT_FLOOR:
            continue
        signals = r.signals + [s for s in context_signals if s.category == r.category]
        if place > 0 and confidence < LEAD and _unnamed(signals):
            continue  # a hint only the model's prior put there: nothing in the run names it
        findings.append(
            Finding(
                r.category,
                _summary(r.category, signals, ev, facts, _headline(r, read)),
                signals,
                _next_steps(r.category, signals, ev, facts),
                _kind(r.category, signals, facts),
                _context(r.category, ev) + _params_behind(r.category, signals, ev, facts),
                score=confidence,
            )
        )
    return findings


def _succeeded(ev: RunEvidence, read: FailureRead) -> bool:
    """Whether the process ended well: the run succeeded, exit 0 (or no exit seen, with the SDK
    alone), no signal, no timeout, no OOM kill."""
    return (
        ev.info.status == "succeeded"
        and read.exit_code in (None, 0)
        and read.signal is None
        and not read.timed_out
        and not read.oom_killed
    )


def _ends_the_process(ranked: Ranked, read: FailureRead) -> bool:
    """Whether a candidate's evidence is how a process that exited 0 ended, not what it
    complained about on the way: the last line it printed (a framework that caught SIGTERM
    and exited 0: "Received SIGTERM … exiting"), the last lines for a signal or a time limit
    (it saved a checkpoint after saying so), or the chain of a last traceback that nothing
    but a line or two followed. A warning, a retry or a handled error with the run's work
    printed after it ("CUDA out of memory … halving the batch", "503 … retrying", a record that
    holds the word "Killed") is what the run got over: the ranker, trained on processes that
    failed, reads it as if the process had failed on it (issue 29)."""
    chain_ended_it = _chain_ended_it(read)
    for h in ranked.hits:
        if h.weight <= 0:
            continue
        if h.position == "last" or (h.position in _ON_THE_CHAIN and chain_ended_it):
            return True
        if h.position == "tail" and ranked.category in _ENDINGS:
            return True
    return False


def _chain_ended_it(read: FailureRead) -> bool:
    """Whether the chain is the process's last words: a traceback followed by a line or two at
    most, or exception lines (no traceback) of which the last line printed is one. A line after
    the traceback that says the run carried on — its work logged at INFO ("epoch done: 2 of 3
    batches"), a retry, a fallback — makes it an error the run got over, however few lines
    followed: a ``log.exception`` of a batch that timed out and was skipped led at 0.76 on a
    healthy run (issue 29)."""
    if read.from_traceback:
        if read.lines_after_chain > 2:
            return False
        after = [ln for ln in read.lines if ln.strip()][-read.lines_after_chain :] if read.lines_after_chain else []
        return not any(line_factor(ln) <= _CARRIED_ON or _FINISHED.search(ln) for ln in after)
    last = read.last_line or ""
    return any(
        first and first in last for first in (link.message.strip().split("\n", 1)[0][:80] for link in read.links)
    )


def _unnamed(signals: list[Signal]) -> bool:
    """Whether no rule and no measurement named this category: its only evidence is the failure's
    structure (the exception and where it was raised), which every candidate shares. The top
    candidate may be chosen that way (a ValueError raised in a library's configuration code);
    a hint below it would only repeat the same line under another category's name."""
    return all(s.id == STRUCTURE for s in signals)


def _headline(ranked: Ranked, read: FailureRead) -> str:
    """The words of the link the category was found on (the innermost cause, not a wrapper's
    words, when the rules matched the cause), else its strongest evidence."""
    on_links = [h for h in ranked.hits if h.link >= 0 and h.weight > 0]
    if on_links:
        best = max(on_links, key=lambda h: (h.weight, -h.link))
        return read.links[best.link].statement()[:300]
    if ranked.hits and ranked.hits[0].rule == STRUCTURE and read.links:
        return read.links[-1].statement()[:300]
    sigs = ranked.signals
    return sigs[0].detail if sigs else ""


def _share_of_the_host(ev: RunEvidence) -> float | None:
    """Without a memory limit: the peak against the host's memory, for a process that vanished
    or was killed (the kernel's OOM killer acts at the host's size)."""
    info = ev.info
    if ev.memory_limit or not (info.status == "crashed" or info.signal == 9 or info.exit_code == 137):
        return None
    peak, _ = _peak_memory(ev)
    total = max((s.get("host_memory_total") or 0 for s in ev.resources), default=0)
    return peak / total if peak and total else None


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
#: samples this close to the end also count: a launcher's worker killed at the limit frees its
#: memory before the launcher itself reports it and exits
_LAST_SECONDS = 10.0


def memory_before_the_end(ev: RunEvidence) -> tuple[int, int, float | None] | None:
    """``(bytes, limit, time)``: the most memory of the last samples before the process ended
    (the last three, and any of its last ten seconds), against its limit — or the peak the
    runner's cgroup recorded, when there are no samples."""
    limit = ev.memory_limit
    if not limit:
        return None
    end = ev.process_end or ev.info.ended
    samples = [s for s in ev.resources if end is None or (s.get("time") or 0.0) <= end + 1.0]
    best: tuple[int, float | None] | None = None
    recent = [s for s in samples if end is not None and (s.get("time") or 0.0) >= end - _LAST_SECONDS]
    for s in recent if len(recent) > _LAST_SAMPLES else samples[-_LAST_SAMPLES:]:
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
def _summary(category: str, signals: list[Signal], ev: RunEvidence, facts: FailureFacts, head: str) -> str:
    info = ev.info
    took = format_duration(info.duration) if info.duration is not None else None
    text = f"{TITLE[category][0].upper()}{TITLE[category][1:]}: {head.rstrip('.')}."
    if category == "oom_killed":
        figure = memory_figure(ev)  # the figure triage shows for the run, too
        how = "the kernel killed the process for memory" if ev.oom_killed or info.signal == 9 else head
        text = f"Killed for exceeding memory: {how}"
        if figure.limit_bytes:
            text += f"; {figure.text()}"
        text += "."
    elif category == "timeout" and not ev.timed_out:
        text = f"A time limit stopped the run: {head.rstrip('.')}."
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
        if path and not _PATH_LIKE.search(path):
            # a name, not a path (a registry's alias or version, a key of a store): no "file"
            text = f"What the run asked for does not exist: {path!r} ({head.rstrip('.')})."
        elif path:
            text = f"A file the run needed does not exist: {path}."
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
        # a server of the run raised in a request's handler: its exception, not the client's 500
        raised = facts.chain[0] if facts.read is not None and facts.read.served else facts.chain[-1]
        own = raised.innermost_own_frame()
        if own is not None:
            text = f"The workload's code raised {raised.statement()[:200]} at {own.where()}."
    if not facts.traceback_final and facts.chain and any(s.source == "traceback" for s in signals):
        text += " (The last traceback in the log was followed by more output: it may have been handled.)"
    return text


def _next_steps(category: str, signals: list[Signal], ev: RunEvidence, facts: FailureFacts) -> list[str]:
    steps: list[str] = []
    cwd = ev.runner_config.get("cwd") or ((ev.info.failure or {}).get("workload") or {}).get("cwd")
    if category == "missing_file" and (path := _path(signals)):
        where = f" (the run's working directory was {cwd})" if cwd and not path.startswith("/") else ""
        steps.append(f"Check that {path} exists on the host that ran the job{where}.")
        for key, value, _ in _params_naming(category, signals, facts, ev.info.params):
            steps.append(f"The path is param {key}'s ({key}={value}): check the value the run was given.")
    elif category == "dependency_error" and (module := _module(signals)):
        steps.append(
            f"Install the package that provides {module.split('.')[0]!r} into the run's environment, or fix the import."
        )
    elif category == "service_unavailable" and (endpoint := _endpoint(signals)):
        steps.append(f"Check that {endpoint} is listening and reachable from the run's host.")
    elif category == "data_error" and (keys := missing_keys(facts)):
        for key, _, _ in _params_naming(category, signals, facts, ev.info.params):
            steps.append(f"If the input is right, param {key} is not: rerun with {key} set to a column it has.")
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
    # the last line with words in it: a run that printed a blank line last (nbclient's cell
    # error ends with one) has no "last line" in its last event, and reading one crashed
    # `diagnose` (issue 29)
    last = next((e for e in reversed(ev.tail) if e.message.strip()), None)
    if category in ("timeout", "killed_by_signal") and last is not None:
        line = next(ln for ln in reversed(last.message.splitlines()) if ln.strip())
        out.append({"source": "log", "detail": f"last line before the end: {line[:200]}", "at": iso(last.time)})
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


def _params_behind(category: str, signals: list[Signal], ev: RunEvidence, facts: FailureFacts) -> list[dict[str, Any]]:
    """The run's params whose value is the missing thing itself: a column a KeyError names, a path
    that does not exist. Whether the data lost a column or the run was told the wrong one, the
    message alone cannot say; a param that holds the name is the first place to look."""
    return [
        {
            "source": "params",
            "detail": f"{name!r} is the value of param {key}"
            if value == name
            else f"param {key} names a file of the same name as {name!r} ({key}={value})",
            "at": None,
        }
        for key, value, name in _params_naming(category, signals, facts, ev.info.params)
    ]


def _params_naming(
    category: str, signals: list[Signal], facts: FailureFacts, params: Mapping[str, Any]
) -> list[tuple[str, str, str]]:
    """``(key, value, name)``: a string param whose value is a missing column or key the
    KeyError names, or the missing file (the same path, or the same file name)."""
    if category == "data_error":
        names, same = missing_keys(facts), _same_text
    elif category == "missing_file" and (path := _path(signals)):
        names, same = [path], _same_path
    else:
        return []
    found = [(k, v, n) for k, v in params.items() if isinstance(v, str) for n in names if same(v, n)]
    return found[:3]


def _same_text(value: str, name: str) -> bool:
    return value == name


def _same_path(value: str, name: str) -> bool:
    base = os.path.basename(value.rstrip("/"))
    return value == name or (len(base) >= 3 and base == os.path.basename(name.rstrip("/")))


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
