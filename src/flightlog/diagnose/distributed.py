"""The diagnosis of a distributed run: the culprit rank first, its victims under it; and the
hang of a single process, found while it hangs.

`analyze_distributed` turns `culprit.judge`'s verdict into one finding carrying contract C5's
fields: ``rank`` (the culprit), ``culprit`` (``{"rank", "host", "where", "collective"}``) and
``victims`` (``[{"rank", "waited_s", "error"}]``). When it names a culprit with confidence,
`culprit_first` takes the whole-run failure findings out of the report: they were read from a
victim's traceback or the launcher's summary (rank 0's "Timed out waiting … for recv", the
launcher's ``ChildFailedError``), and the victims' errors are already the culprit finding's
evidence, never causes of their own.

When the verdict is judged: while the run is running, only if a rank (or the process) is stalled
now — a hang is a finding while it happens, not only after a watchdog killed the job; after an
unsuccessful end, always; after a success, a stall that resolved by itself is a hint at most.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Any

from flightlog.capture.launchers import is_victim_message
from flightlog.diagnose.culprit import MemoryAtTheEnd, Verdict, judge
from flightlog.diagnose.evidence import RunEvidence
from flightlog.diagnose.failures import memory_before_the_end
from flightlog.diagnose.findings import LEAD, Finding
from flightlog.diagnose.ranks import RankFacts, current_stacks, gather_ranks, where_in_stacks
from flightlog.diagnose.signals import Signal
from flightlog.diagnose.taxonomy import FAILURE_CATEGORIES
from flightlog.launchenv import ranks_text
from flightlog.statuses import UNSUCCESSFUL_STATUSES
from flightlog.timefmt import format_duration, format_size

__all__ = ["analyze_distributed", "culprit_first", "judge_attempt", "DISTRIBUTED"]

#: a finding this analyzer made (``Finding.extra["origin"]``)
DISTRIBUTED = "distributed"
#: a stall that resolved in a run that then succeeded weighs this much of its reading: a hint
_RESOLVED = 0.3


def analyze_distributed(ev: RunEvidence, now: float | None = None) -> list[Finding]:
    now = time.time() if now is None else now
    ranks, unranked = gather_ranks(ev)
    status = ev.info.status
    live = status == "running"
    if len(ranks) >= 2 or (ranks and any(f.world_size and f.world_size > 1 for f in ranks.values())):
        return _distributed(ev, ranks, live, now)
    single = [u for u in unranked if u["kind"] in ("stall", "stacks")]
    if ranks:  # one rank of several reported (the others without flightlog): its own story
        only = next(iter(ranks.values()))
        single = [{"kind": "stall", "data": s} for s in only.stalls] + [
            {"kind": "stacks", "data": s} for s in only.stacks
        ]
    return _single(ev, single, live, now)


def judge_attempt(client: Any, run_id: str, end_reason: str | None = None) -> dict[str, Any] | None:
    """The culprit of a distributed attempt that just failed, read from what its run holds now
    (``flightlog run``'s own quick verdict, before it sets the run's status: the runner's
    category is then the culprit's, not the one of a victim's timeout): ``{"category",
    "confidence", "summary", "rank"}`` of the lead finding, or None when none leads at 0.5.

    ``end_reason`` is the runner's own fact of how the attempt ended, read as the run's: the
    runner writes the run's end after this verdict, so without it a rank the kernel killed at
    the runner's memory limit read as a SIGKILL from outside (``killed_by_signal``) whenever no
    memory sample near the limit had reached the store (a loaded machine, a long interval)."""
    info = client.run(run_id)
    info = replace(info, status="failed", end_reason=end_reason or info.end_reason)
    findings = analyze_distributed(RunEvidence(client, info))
    lead = [f for f in findings if f.extra.get("culprit") and f.confidence >= LEAD]
    if not lead:
        return None
    top = max(lead, key=lambda f: f.confidence)
    verdict = {
        "category": top.category,
        "confidence": top.confidence,
        "summary": top.summary,
        "rank": top.extra["rank"],
    }
    if top.extra["culprit"].get("alike"):
        verdict["alike"] = list(top.extra["culprit"]["alike"])
    return verdict


# ── several ranks ──────────────────────────────────────────────────────────────────────────────


def _distributed(ev: RunEvidence, ranks: dict[int, RankFacts], live: bool, now: float) -> list[Finding]:
    stalled_now = [r for r, f in ranks.items() if f.stalled]
    failed = ev.info.status in UNSUCCESSFUL_STATUSES
    if live and not stalled_now:
        return []
    if not live and not failed and not any(f.stalls for f in ranks.values()):
        return []
    verdict = judge(ranks, live=live, now=now, memory=None if live else _memory_at_the_end(ev))
    if verdict is None:
        if live and stalled_now:
            return [_all_stalled(ranks, stalled_now, now)]
        return []
    finding = _finding(ev, verdict, ranks, live)
    if not live and not failed:  # it resolved by itself and the run succeeded: a hint
        finding = replace(finding, signals=[replace(s, weight=s.weight * _RESOLVED) for s in finding.signals])
        finding.summary = "A stall that resolved by itself: " + finding.summary
    return [finding]


def _memory_at_the_end(ev: RunEvidence) -> MemoryAtTheEnd:
    """The run's memory when it ended, as the failure analysis reads it for a process of its own:
    the runner's OOM kill record and the memory of the last samples against the limit."""
    near = None if ev.timed_out else memory_before_the_end(ev)
    if near is None:
        return MemoryAtTheEnd(oom_killed=ev.oom_killed)
    used, limit, _ = near
    detail = (
        f"memory was at {format_size(used)}, {used / limit:.0%} of the {format_size(limit)} limit, "
        "in the last samples before the rank was killed"
    )
    return MemoryAtTheEnd(oom_killed=ev.oom_killed, share=used / limit, detail=detail)


def _finding(ev: RunEvidence, v: Verdict, ranks: dict[int, RankFacts], live: bool) -> Finding:
    culprit = ranks.get(v.culprit) if v.culprit is not None else None
    summary = _alike_summary(v) if v.rule == "alike" else _summary(v, live)
    context = [
        {"source": "log" if victim.get("error") else "evidence", "detail": _victim_line(victim), "at": None}
        for victim in v.victims
    ]
    next_steps = []
    if v.where is not None and v.culprit is not None:
        next_steps.append(
            f"Start at rank {v.culprit}'s {v.where.get('function')} in {v.where.get('file')}:{v.where.get('line')}: "
            "what does it wait for or fail on?"
        )
    elif v.where is not None and v.alike:
        next_steps.append(
            f"Start at {v.where.get('function')} in {v.where.get('file')}:{v.where.get('line')}, where "
            f"{ranks_text(v.alike)} failed alike: what do they share there (a path, a configuration value, the image)?"
        )
    if v.rule == "left_early":
        next_steps.append(
            f"Count the steps each rank runs: rank {v.culprit} called fewer collectives than the others (a shard one "
            "batch shorter, an early return or break on one rank). Every rank must call the same collectives: split "
            "the data evenly (drop_last, a DistributedSampler), or use torch's Join context for uneven inputs."
        )
    next_steps.append(f"Where each rank was, its stacks and last collectives: `flightlog ranks {ev.id[:12]} --stacks`.")
    extra: dict[str, Any] = {
        "origin": DISTRIBUTED,
        "rank": v.culprit,
        "culprit": {
            "rank": v.culprit,
            "host": culprit.host if culprit is not None else None,
            "where": _where_dict(v.where),
            "collective": {"op": v.collective["op"], "seq": v.collective["seq"]} if v.collective else None,
        },
        "victims": v.victims,
    }
    if v.alike:  # no culprit: these ranks failed alike (docs/distributed.md, "Ranks that failed alike")
        extra["culprit"]["alike"] = list(v.alike)
    if v.stuck_for is not None:
        extra["culprit"]["stuck_s"] = round(v.stuck_for, 3)
    return Finding(v.category, summary, list(v.signals), next_steps, context=context, extra=extra)


def _summary(v: Verdict, live: bool) -> str:
    parts: list[str] = []
    c = v.culprit
    coll = v.collective
    if v.rule == "flight_recorder" and coll is not None:
        head = f"rank {c} never entered {coll['op']} #{coll['seq']}"
        if live and v.stuck_for is not None:
            head += f" and has made no progress for {format_duration(v.stuck_for)}"
        parts.append(head)
    elif v.rule == "mismatch":
        parts.append(f"ranks called different collectives at #{coll['seq'] if coll else '?'}: {v.details[0]}")
        parts.append(f"rank {c}'s call is the odd one")
    elif v.rule == "unseen":
        parts.append(f"rank {c} left no record (no flightlog.init(), or it ended before its first records shipped)")
    elif v.rule == "torn_down":
        parts.append(
            f"rank {c} was stuck: it never reached the collective the others waited in, reported no error of its own, "
            "and its launcher stopped it (SIGTERM) once they gave up"
        )
    elif v.rule == "left_early":
        parts.append(f"rank {c} {v.cause or 'finished early'}: it left the job early")
    elif v.rule == "exit" and v.cause is not None:
        parts.append(f"rank {c} {v.cause} first")
    elif v.cause is not None:
        parts.append(f"rank {c} failed first: {v.cause}")
    else:
        parts.append(f"rank {c} stopped making progress")
    waited = [x for x in v.victims if x.get("waited_s") is not None]
    if waited:
        parts.append(_waited_text(waited, live))
    elif v.victims:
        parts.append(ranks_text(sorted(x["rank"] for x in v.victims)) + " only waited for it")
    if v.where is not None:
        verb = "is" if live else "was"
        where = f"rank {c} {verb} in {v.where.get('function')} at {_short(v.where.get('file'))}:{v.where.get('line')}"
        if v.where.get("code"):
            where += f" (`{v.where['code']}`)"
        parts.append(where)
    if v.rule in ("flight_recorder", "stacks") and v.cause is not None:
        parts.append(f"its own end: {v.cause}")
    parts.extend(d for d in v.details if v.rule != "mismatch")
    return "; ".join(parts) + "."


def _alike_summary(v: Verdict) -> str:
    """Ranks that failed alike: no culprit, the shared cause first."""
    parts = [f"{ranks_text(v.alike)} failed alike: {v.cause}" if v.cause else f"{ranks_text(v.alike)} failed alike"]
    parts.append("no rank caused it: the cause is one they share (an input, a configuration value, the environment)")
    if v.victims:
        parts.append(ranks_text(sorted(x["rank"] for x in v.victims)) + " only waited")
    if v.where is not None:
        where = f"raised in {v.where.get('function')} at {_short(v.where.get('file'))}:{v.where.get('line')}"
        if v.where.get("code"):
            where += f" (`{v.where['code']}`)"
        parts.append(where)
    return "; ".join(parts) + "."


def _waited_text(waited: list[dict[str, Any]], live: bool) -> str:
    groups: dict[str, list[int]] = {}
    for x in waited:
        groups.setdefault(format_duration(float(x["waited_s"])), []).append(int(x["rank"]))
    bits = []
    for took, who in groups.items():
        verb = ("has waited" if len(who) == 1 else "have waited") if live else "waited"
        bits.append(f"{ranks_text(sorted(who))} {verb} {took}")
    text = ", ".join(bits)
    errors = [x["error"] for x in waited if x.get("error")]
    if errors and not live:
        text += f" (then: {errors[0]})"
    return text


def _victim_line(victim: dict[str, Any]) -> str:
    line = f"rank {victim['rank']} (a victim)"
    if victim.get("waited_s") is not None:
        line += f" waited {format_duration(float(victim['waited_s']))}"
    if victim.get("error"):
        line += f": {victim['error']}"
    return line


def _all_stalled(ranks: dict[int, RankFacts], stalled: list[int], now: float) -> Finding:
    """Every watched rank stalled and nothing singles one out: the hang, each rank where it is."""
    since = min(s for s in (ranks[r].stalled_since for r in stalled) if s is not None) if stalled else now
    where = []
    for r in sorted(stalled):
        w = where_in_stacks(ranks[r].current_stacks)
        if w is not None:
            where.append(f"rank {r} in {w.get('function')} at {_short(w.get('file'))}:{w.get('line')}")
    summary = f"{ranks_text(sorted(stalled))} made no progress for {format_duration(max(0.0, now - since))}"
    if where:
        summary += ": " + "; ".join(where)
    signal = Signal("hang", 0.7, "every_rank_stalled", "evidence", summary, since)
    extra: dict[str, Any] = {"origin": DISTRIBUTED, "victims": [], "culprit": None}
    return Finding("hang", summary + ".", [signal], extra=extra)


# ── one process ────────────────────────────────────────────────────────────────────────────────


def _single(ev: RunEvidence, items: list[dict[str, Any]], live: bool, now: float) -> list[Finding]:
    stalls = [i["data"] for i in items if i["kind"] == "stall"]
    if not stalls:
        return []
    stalls.sort(key=lambda d: d.get("time") or 0.0)
    last = stalls[-1]
    if last.get("state") != "stalled":
        return []  # it resumed: a slow phase, no hang
    failed = ev.info.status in UNSUCCESSFUL_STATUSES
    if not live and not failed:
        return []
    stacks = [i["data"] for i in items if i["kind"] == "stacks"]
    where = where_in_stacks(current_stacks(stacks, stalls=stalls))
    since = float(last.get("since") or now)
    end = now if live else float(ev.info.ended or last.get("time") or now)
    stuck = max(0.0, end - since)
    usual = last.get("usual_s")
    head = f"no progress for {format_duration(stuck)}"
    if isinstance(usual, (int, float)):
        head += f" (usually {format_duration(float(usual))} between steps)"
    summary = head + (
        f"; the process {'is' if live else 'was'} in {where['function']} at {_short(where['file'])}:{where['line']}"
        if where
        else ""
    )
    signals = [Signal("hang", 0.75 if live else 0.55, "no_progress", "evidence", summary, since)]
    extra: dict[str, Any] = {"origin": DISTRIBUTED}
    if where is not None:
        extra["where"] = _where_dict(where)
    steps = []
    if where is not None:
        steps.append(f"Open {where['file']}:{where['line']} ({where['function']}): what does it wait for?")
    return [Finding("hang", summary + ".", signals, steps, extra=extra)]


# ── the report's order ─────────────────────────────────────────────────────────────────────────


def culprit_first(findings: list[Finding], *, distributed: bool = False) -> list[Finding]:
    """With a culprit named at 0.5 or more, the failure findings read from the run as a whole
    (a victim's traceback, the launcher's wrapper) leave the report: the culprit finding holds
    the victims' errors as its evidence.

    Without one, in a run its ranks or its runner tagged distributed (``distributed``: not a
    replay of a launcher's text by a process that is no rank), a failure finding read from what a rank says when it only waited for another (gloo's
    "Connection closed by peer … a remote worker crashing", a receive that timed out:
    ``capture.launchers.VICTIM_MESSAGES``) is a hint at most: its rules read "a service the run
    depends on was unreachable" at 0.89 where the peer that went away was another rank (issue 28)."""
    lead = [
        f for f in findings if f.extra.get("origin") == DISTRIBUTED and f.extra.get("culprit") and f.confidence >= LEAD
    ]
    if lead:
        return [f for f in findings if f.extra.get("origin") == DISTRIBUTED or f.category not in FAILURE_CATEGORIES]
    if not distributed:
        return findings
    return [_only_waited(f) if _read_from_a_victim(f) else f for f in findings]


#: what a victim's reading keeps of its weight: under 0.5 however sure its rules were
_WAITED = 0.3


def _read_from_a_victim(f: Finding) -> bool:
    return f.extra.get("origin") != DISTRIBUTED and f.category in FAILURE_CATEGORIES and is_victim_message(f.summary)


def _only_waited(f: Finding) -> Finding:
    weaker = replace(
        f,
        signals=[replace(s, weight=s.weight * _WAITED) for s in f.signals],
        added=[replace(s, weight=s.weight * _WAITED) for s in f.added],
        score=f.score * _WAITED if f.score is not None else None,
    )
    weaker.summary = (
        f"{f.summary} This is what a rank says when it only waited for another one that failed, exited or hung: "
        "a consequence, not the cause (which rank caused it: `flightlog ranks RUN`)."
    )
    return weaker


def _where_dict(where: dict[str, Any] | None) -> dict[str, Any] | None:
    if where is None:
        return None
    return {"file": where.get("file"), "line": where.get("line"), "function": where.get("function")}


def _short(path: Any) -> str:
    text = str(path or "?")
    return os.path.basename(text) or text
