"""Right-sizing: from the peaks a run (all its attempts) or the runs of one name really used,
recommend memory and CPU requests with headroom, and flag runs that asked for far more than
they used — or were killed at a limit that was too small.

A run killed for memory never showed its real peak: the limit is then a floor, and the
recommendation adds more than the usual headroom on top of it.

A peak is evidence only when there is enough of it: an attempt that succeeded with a few
samples, or one killed for memory at a known limit, counts; an attempt that failed for another
reason counts only when it ran long enough to be past its start (its peak is then a floor too).
With too little, the report says so and recommends nothing rather than a number from one
sample of a process that died in a second (the minimums are ``rightsize_min_samples`` and
``rightsize_min_duration_s`` of the diagnosis settings, docs/troubleshooting.md).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from flightlog.diagnose.evidence import RunEvidence, Thresholds
from flightlog.errors import NotFound
from flightlog.models import SERVING_KIND, RunInfo
from flightlog.timefmt import format_duration, format_size

if TYPE_CHECKING:
    from flightlog.diagnose.reader import Reader

__all__ = ["rightsize", "rightsize_runs", "HEADROOM", "OOM_HEADROOM", "OVER_PROVISIONED"]

HEADROOM = 0.25  # on top of the observed memory peak
OOM_HEADROOM = 0.5  # on top of a limit the run was killed at
CPU_HEADROOM = 0.2
OVER_PROVISIONED = 0.5  # a peak below this share of the limit wastes the rest
_MIB = 1 << 20


def rightsize(
    client: Reader,
    ref: str | RunInfo,
    *,
    project: str | None = None,
    limit: int = 50,
    thresholds: Thresholds | None = None,
) -> dict[str, Any]:
    """Recommendations for one run (by id or prefix) or for the runs named ``ref``."""
    from flightlog.diagnose.settings import thresholds_for

    if isinstance(ref, RunInfo):
        th = thresholds or thresholds_for(client, ref.project)
        return rightsize_runs([RunEvidence(client, ref, th)], {"run": ref.id})
    try:
        info = client.run(ref)
    except NotFound:
        info = None
    if info is not None:
        th = thresholds or thresholds_for(client, info.project)
        return rightsize_runs([RunEvidence(client, info, th)], {"run": info.id})
    name = ref.replace("'", "''")
    runs = client.runs(project=project, filter=f"name = '{name}'", order_by="-created", limit=limit)
    if not runs:
        where = f" in project {project!r}" if project else ""
        raise NotFound(f"no run with id {ref!r} and no runs named {ref!r}{where}")
    th = thresholds or thresholds_for(client, project or runs[0].project)
    return rightsize_runs(
        [RunEvidence(client, r, th) for r in runs], {"name": ref, "project": project, "runs": len(runs)}
    )


def rightsize_runs(runs: list[RunEvidence], subject: dict[str, Any]) -> dict[str, Any]:
    th = runs[0].thresholds if runs else Thresholds()
    observations = [o for ev in runs for o in _observe(ev)]
    for o in observations:
        o["used"], o["why"] = _usable(o, th)
    used = [o for o in observations if o["used"]]
    cpu_samples = [
        s["cpu_percent"] / 100.0
        for ev in runs
        for s in ev.resources
        if isinstance(s.get("cpu_percent"), (int, float)) and any(o["used"] and o["run"] == ev.id for o in observations)
    ]
    mem_peaks = [o["memory_peak_bytes"] for o in used if o["memory_peak_bytes"]]
    limits = [o["memory_limit_bytes"] for o in observations if o["memory_limit_bytes"]]
    killed = [o for o in used if o["oom_killed"]]
    peak = max(mem_peaks) if mem_peaks else None
    recommended = None
    basis = None
    evidence = _evidence(observations, used, th)
    if killed:
        floor = max(max(o["memory_limit_bytes"] or 0 for o in killed), peak or 0)
        recommended = _round_memory(floor * (1 + OOM_HEADROOM)) if floor else None
        basis = (
            f"killed for memory at {format_size(floor)}: the real peak is above it, so this adds {OOM_HEADROOM:.0%}; "
            "confirm with one run at this size"
        )
    elif peak:
        recommended = _round_memory(peak * (1 + HEADROOM))
        basis = (
            f"observed peak {format_size(peak)} over {len(used)} attempt(s) "
            f"({evidence['samples']} samples, {_seconds(evidence['duration_s'])}), plus {HEADROOM:.0%} headroom"
        )
        if any(o["status"] != "succeeded" and not o["clean_service_stop"] for o in used):
            basis += "; from attempts that failed, so the real peak may be higher"
    elif not used and observations:
        basis = evidence["reason"]
    if len(cpu_samples) < th.rightsize_min_samples:
        cpu_samples = []  # a percentile of one or two samples is not a CPU request
    cpu_peak = max(cpu_samples) if cpu_samples else None
    cpu_p95 = _percentile(cpu_samples, 95) if cpu_samples else None
    cpu_avg = sum(cpu_samples) / len(cpu_samples) if cpu_samples else None
    cpu_rec = None if cpu_p95 is None else max(0.1, math.ceil(cpu_p95 * (1 + CPU_HEADROOM) * 10) / 10)
    gpu_peaks = [o["gpu_memory_peak_bytes"] for o in observations if o["gpu_memory_peak_bytes"]]
    flags = _flags(observations)
    return {
        "subject": subject,
        "observations": observations,
        "memory": {
            "peak_bytes": peak,
            "requested_bytes": max(limits) if limits else None,
            "recommended_bytes": recommended,
            "headroom": OOM_HEADROOM if killed else HEADROOM,
            "basis": basis,
        },
        "evidence": evidence,
        "cpu": {
            "peak_cores": _r(cpu_peak),
            "p95_cores": _r(cpu_p95),
            "avg_cores": _r(cpu_avg),
            "recommended_cores": cpu_rec,
            "samples": len(cpu_samples),
        },
        "gpu": {"memory_peak_bytes": max(gpu_peaks)} if gpu_peaks else None,
        "request": {
            "memory": _k8s_memory(recommended) if recommended else None,
            "cpu": f"{int(round(cpu_rec * 1000))}m" if cpu_rec else None,
        },
        "flags": flags,
    }


def _usable(o: dict[str, Any], th: Thresholds) -> tuple[bool, str]:
    """Is this attempt's peak evidence for a memory request, and why (not)?"""
    samples, duration = o.get("samples") or 0, o.get("duration_s")
    if o["oom_killed"]:
        return True, "killed for memory: its limit is a floor for the real peak"
    if not o["memory_peak_bytes"]:
        return False, "no memory samples"
    if samples < th.rightsize_min_samples:
        return False, f"{samples} sample(s), fewer than the {th.rightsize_min_samples} needed"
    if o["status"] == "succeeded":
        return True, "completed"
    if duration is None or duration < th.rightsize_min_duration_s:
        ran = f"after {_seconds(duration)}" if duration is not None else "early"
        return False, (
            f"it {o['status']} {ran}, before {_seconds(th.rightsize_min_duration_s)}: "
            "its peak says little about what the job needs"
        )
    return True, f"it {o['status']} after {_seconds(duration)}: its peak is a floor"


def _evidence(observations: list[dict[str, Any]], used: list[dict[str, Any]], th: Thresholds) -> dict[str, Any]:
    samples = sum(o.get("samples") or 0 for o in used)
    duration = sum(o.get("duration_s") or 0.0 for o in used)
    sufficient = bool(used)
    reason = None
    if not sufficient:
        if not observations:
            reason = "no resource samples were recorded"
        else:
            why = "; ".join(f"attempt {o['attempt']} of run {o['run'][:12]}: {o['why']}" for o in observations[:3])
            reason = (
                f"too little evidence to recommend a request ({why}); it needs an attempt that completed with at least "
                f"{th.rightsize_min_samples} samples, one that ran {_seconds(th.rightsize_min_duration_s)} or more, "
                "or an OOM kill at a known limit"
            )
    return {
        "sufficient": sufficient,
        "attempts_used": len(used),
        "attempts": len(observations),
        "samples": samples,
        "duration_s": round(duration, 3),
        "reason": reason,
        "min_samples": th.rightsize_min_samples,
        "min_duration_s": th.rightsize_min_duration_s,
    }


def _seconds(value: float | None) -> str:
    return format_duration(value) if value is not None else "an unknown time"


def _observe(ev: RunEvidence) -> list[dict[str, Any]]:
    info = ev.info
    limit = ev.memory_limit
    oom = (info.failure or {}).get("oom") or {}
    base = {
        "run": info.id,
        "status": info.status,
        "end_reason": info.end_reason,
        "memory_limit_bytes": limit,
        # a model server taken down by a rollout lived its whole life: its peak is not a floor
        "clean_service_stop": info.kind == SERVING_KIND and info.status == "stopped",
    }
    summaries = [e for e in ev.evidence_of("resources") if isinstance(e.get("data"), dict)]
    out = []
    if summaries:
        for i, e in enumerate(summaries, 1):
            d = e["data"]
            name = str(e.get("name") or "")
            suffix = name.rsplit("-", 1)[-1]
            attempt = int(suffix) if suffix.isascii() and suffix.isdigit() else i
            peak = max(
                (
                    v
                    for v in (
                        d.get("rss_bytes_max"),
                        d.get("cgroup_memory_max") if d.get("cgroup_memory_limit") else None,
                    )
                    if isinstance(v, (int, float))
                ),
                default=None,
            )
            last = attempt == info.attempt
            killed = last and info.end_reason == "oom_killed"
            if killed and oom.get("peak_bytes"):
                peak = max(peak or 0, oom["peak_bytes"])
            gpu = max(
                (g.get("process_memory_bytes_max") or g.get("memory_used_bytes_max") or 0 for g in d.get("gpus") or []),
                default=None,
            )
            out.append(
                {
                    **base,
                    "attempt": attempt,
                    "memory_peak_bytes": int(peak) if peak else None,
                    "cpu_peak_cores": _r((d.get("cpu_percent_max") or 0) / 100.0)
                    if d.get("cpu_percent_max") is not None
                    else None,
                    "gpu_memory_peak_bytes": gpu or None,
                    "oom_killed": killed,
                    "samples": int(d.get("samples") or 0),
                    "duration_s": _duration(d.get("duration_s"), info, last),
                }
            )
        return out
    rss = [s["rss_bytes"] for s in ev.resources if isinstance(s.get("rss_bytes"), (int, float))]
    cpu = [s["cpu_percent"] for s in ev.resources if isinstance(s.get("cpu_percent"), (int, float))]
    gpu_mem = [
        g["memory_used_bytes"]
        for s in ev.resources
        for g in s.get("gpus") or []
        if isinstance(g.get("memory_used_bytes"), (int, float))
    ]
    peak = max(rss) if rss else None
    if info.end_reason == "oom_killed" and oom.get("peak_bytes"):
        peak = max(peak or 0, oom["peak_bytes"])
    times = [float(s["time"]) for s in ev.resources if isinstance(s.get("time"), (int, float))]
    span = max(times) - min(times) if len(times) >= 2 else None
    return [
        {
            **base,
            "attempt": info.attempt,
            "memory_peak_bytes": int(peak) if peak else None,
            "cpu_peak_cores": _r(max(cpu) / 100.0) if cpu else None,
            "gpu_memory_peak_bytes": max(gpu_mem) if gpu_mem else None,
            "oom_killed": info.end_reason == "oom_killed",
            "samples": len(rss),
            "duration_s": _duration(span, info, True),
        }
    ]


def _duration(sampled: Any, info: RunInfo, last_attempt: bool) -> float | None:
    """How long the attempt ran: the span its samples cover, else (the last attempt) the run's duration."""
    if isinstance(sampled, (int, float)) and sampled > 0:
        return float(sampled)
    if last_attempt and info.duration is not None:
        return float(info.duration)
    return None


def _flags(observations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    flags = []
    for o in observations:
        limit, peak = o["memory_limit_bytes"], o["memory_peak_bytes"]
        if not limit:
            continue
        where = f"run {o['run'][:12]} attempt {o['attempt']}"
        if o["oom_killed"]:
            flags.append(
                {
                    "kind": "killed_at_limit",
                    "run": o["run"],
                    "attempt": o["attempt"],
                    "detail": f"{where} was killed for memory at its {format_size(limit)} limit",
                }
            )
        elif not o.get("used", True):
            continue  # too little evidence to call a request too big or too small
        elif peak and peak < OVER_PROVISIONED * limit:
            flags.append(
                {
                    "kind": "over_provisioned",
                    "run": o["run"],
                    "attempt": o["attempt"],
                    "detail": f"{where} asked for {format_size(limit)} and used at most {format_size(peak)} "
                    f"({peak / limit:.0%}): {format_size(limit - peak)} held for nothing",
                }
            )
        elif peak and peak >= 0.9 * limit:
            flags.append(
                {
                    "kind": "near_limit",
                    "run": o["run"],
                    "attempt": o["attempt"],
                    "detail": f"{where} peaked at {format_size(peak)}, {peak / limit:.0%} of its {format_size(limit)} limit",
                }
            )
    return flags


def _round_memory(n: float) -> int:
    step = 64 * _MIB if n < 4096 * _MIB else 256 * _MIB
    return int(math.ceil(n / step) * step)


def _k8s_memory(n: int) -> str:
    if n % (1 << 30) == 0:
        return f"{n >> 30}Gi"
    return f"{math.ceil(n / _MIB)}Mi"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
