"""Performance analysis over the timeline, the stage spans and the resource samples:
``queue_wait``, ``slow_startup``, ``data_loader_bottleneck`` and ``slow_completion``.

Every finding needs a phase that is long in absolute terms (thresholds in
:class:`~.evidence.Thresholds`) *and* a large share of the run; its confidence grows with both
and with evidence that explains it (a stage that ran in that phase, idle CPU or GPU).
"""

from __future__ import annotations

import statistics

from flightlog.diagnose.evidence import RunEvidence
from flightlog.diagnose.findings import Finding
from flightlog.diagnose.signals import Signal
from flightlog.diagnose.window import (
    cpu_percent_between,
    cpu_wait_percent_between,
    gpu_percent_between,
    is_compute_stage,
    is_data_stage,
    is_runner_stage,
    ramp,
    stage_in,
    training_window,
)
from flightlog.timefmt import format_duration, format_size, iso

__all__ = ["analyze_performance", "queue_wait", "slow_startup", "slow_completion", "data_loader_bottleneck"]

#: a tree that ran or waited for a core this share of one core (or more) while it stepped was
#: ready to run most of the time: starved by other work, not waiting on its input (a sleeping
#: loop beside four spinners on its core: ~32 %; a busy loop beside them: ~100 %)
STARVED_READY_PERCENT = 75.0


def analyze_performance(ev: RunEvidence) -> list[Finding]:
    out: list[Finding] = []
    for analyzer in (queue_wait, slow_startup, data_loader_bottleneck, slow_completion):
        finding = analyzer(ev)
        if finding is not None:
            out.append(finding)
    return out


def _end(ev: RunEvidence) -> float | None:
    end = ev.process_end or ev.info.ended or ev.info.updated
    if end is None and ev.resources:
        end = ev.resources[-1].get("time")
    return end


def queue_wait(ev: RunEvidence) -> Finding | None:
    info = ev.info
    start = ev.process_start or info.started
    if info.queued is None or start is None:
        return None
    wait = start - info.queued
    th = ev.thresholds
    if wait < th.queue_wait_s:
        return None
    end = _end(ev) or start
    share = wait / max(1e-9, wait + (end - start))
    signals = [
        Signal(
            "queue_wait",
            ramp(wait, th.queue_wait_s, 3600.0, 0.3, 0.6),
            "time_in_the_queue",
            "timeline",
            f"queued at {iso(info.queued)}, started at {iso(start)}: {format_duration(wait)} in the queue",
            info.queued,
        ),
    ]
    if share >= th.share:
        signals.append(
            Signal(
                "queue_wait",
                ramp(share, th.share, 0.9, 0.2, 0.5),
                "share_of_the_wall_time",
                "timeline",
                f"{share:.0%} of the time from submission to the end was spent waiting to start",
                start,
            )
        )
    summary = f"The run waited {format_duration(wait)} in the queue before it started ({share:.0%} of its time from submission to the end)."
    return Finding("queue_wait", summary, signals)


def slow_startup(ev: RunEvidence) -> Finding | None:
    start = ev.process_start
    window = training_window(ev)
    end = _end(ev)
    if start is None or window is None or end is None:
        return None
    startup = window.start - start
    th = ev.thresholds
    total = max(1e-9, end - start)
    share = startup / total
    # the interpreter and its imports come first (until the first output, or until the SDK's
    # init in a run without the runner); the workload's own setup (downloads, indexing) after
    began = _program_began(ev, start, window.start)
    setup = window.start - began
    imports = began - start
    if share < th.share or (setup < th.startup_s and imports < th.import_s):
        return None
    # the interpreter, its imports and a framework's own set-up come with the stack: in a short
    # run they are most of it, so their share is no evidence, only their length (imports from
    # a slow network file system); the share that counts is the program's own setup's
    before_init = _before_init(ev, start)
    whole = "of the process's time" if before_init else "of the run"
    signals = [
        Signal(
            "slow_startup",
            0.0,
            "time_before_the_first_step",
            "timeline",
            f"the first step came {format_duration(startup)} after the process started: {share:.0%} {whole}"
            + (
                f" (the process started {format_duration(before_init)} before flightlog.init() created the run)"
                if before_init
                else ""
            ),
            window.start,
        ),
    ]
    setup_share = setup / total
    if setup >= th.startup_s and setup_share >= th.share:
        signals.append(
            Signal(
                "slow_startup",
                ramp(setup_share, th.share, 0.8, 0.3, 0.6),
                "share_before_the_first_step",
                "timeline",
                f"the program's own setup (after its first output or flightlog.init()) took {setup_share:.0%} {whole}",
                began,
            )
        )
    if startup >= 60:
        signals.append(
            Signal(
                "slow_startup",
                ramp(startup, 60, 1800, 0.15, 0.45),
                "absolute_startup_time",
                "timeline",
                f"{format_duration(startup)} before training began",
                window.start,
            )
        )
    # a stage explains the start-up when it took a fair share of it (a first batch does not)
    explained = [(n, sec) for n, sec in _stages_within(ev, start, window.start) if sec >= 0.3 * startup]
    if explained:
        name, seconds = explained[0]
        signals.append(
            Signal(
                "slow_startup",
                ramp(seconds / startup, 0.3, 0.9, 0.15, 0.3),
                "a_stage_before_the_first_step",
                "stages",
                f"stage {name!r} took {format_duration(seconds)} before the first step",
                _stage_start(ev, name, start),
            )
        )
    if imports >= th.import_s:
        signals.append(
            Signal(
                "slow_startup",
                ramp(imports, th.import_s, 300, 0.2, 0.4),
                "silence_after_the_start",
                "timeline",
                f"{format_duration(imports)} passed before the program's first output or SDK call (interpreter, imports)",
                began,
            )
        )
    if setup >= th.startup_s:
        signals.append(
            Signal(
                "slow_startup",
                ramp(setup, th.startup_s, 300, 0.1, 0.3),
                "setup_before_the_first_step",
                "timeline",
                f"the program's own setup took {format_duration(setup)} between its first output and its first step",
                began,
            )
        )
    context = [
        {"source": "log", "detail": e.message.strip().splitlines()[0][:200], "at": iso(e.time)}
        for e in ev.tail
        if start <= e.time <= window.start and e.message.strip()  # a blank line (a launcher's bare prefix) says nothing
    ][:3]
    where = f"; {explained[0][0]!r} took {format_duration(explained[0][1])} of it" if explained else ""
    summary = (
        f"Slow start: {format_duration(startup)} passed between the process start and the first training step "
        f"({share:.0%} {whole}){where}."
    )
    steps = [f"Cache or parallelize stage {explained[0][0]!r}."] if explained else []
    return Finding("slow_startup", summary, signals, steps, context=context)


def slow_completion(ev: RunEvidence) -> Finding | None:
    info = ev.info
    if info.status == "failed" and info.end_reason in ("exit", "exception", "oom_killed"):
        return None  # the tail of a crash is its failure, not a slow completion
    window = training_window(ev)
    start = ev.process_start
    end = _end(ev)
    if window is None or end is None or start is None:
        return None
    tail = end - window.end
    th = ev.thresholds
    share = tail / max(1e-9, end - start)
    if tail < th.completion_s or share < th.share:
        return None
    # a few seconds of teardown (a last checkpoint, the interpreter's exit) are most of a short
    # run: the share weighs in full once the tail is long in absolute terms too
    material = ramp(tail, th.completion_s, 10 * th.completion_s, 0.7, 1.0)
    signals = [
        Signal(
            "slow_completion",
            ramp(share, th.share, 0.8, 0.3, 0.6) * material,
            "share_after_the_last_step",
            "timeline",
            f"the process ended {format_duration(tail)} after the last training step: {share:.0%} of the run",
            window.end,
        ),
    ]
    if tail >= 60:
        signals.append(
            Signal(
                "slow_completion",
                ramp(tail, 60, 1800, 0.15, 0.45),
                "absolute_tail",
                "timeline",
                f"{format_duration(tail)} after training ended",
                window.end,
            )
        )
    explained = [(n, sec) for n, sec in _stages_within(ev, window.end, end) if sec >= 0.3 * tail]
    if explained:
        name, seconds = explained[0]
        signals.append(
            Signal(
                "slow_completion",
                ramp(seconds / tail, 0.3, 0.9, 0.15, 0.3),
                "a_stage_after_the_last_step",
                "stages",
                f"stage {name!r} took {format_duration(seconds)} after the last step",
                window.end,
            )
        )
    late = [a for a in ev.artifacts if a.time >= window.end and a.role == "output"]
    if late:
        size = sum(a.size or 0 for a in late)
        names = ", ".join(a.path for a in late[:3])
        signals.append(
            Signal(
                "slow_completion",
                0.15,
                "artifacts_written_at_the_end",
                "artifacts",
                f"{len(late)} artifact(s) written after the last step ({format_size(size)}): {names}",
                late[0].time,
            )
        )
    context = [
        {"source": "log", "detail": e.message.strip().splitlines()[0][:200], "at": iso(e.time)}
        for e in ev.tail
        if e.time >= window.end and e.message.strip()
    ][:3]
    where = f"; {explained[0][0]!r} took {format_duration(explained[0][1])} of it" if explained else ""
    summary = (
        f"Slow completion: the run went on for {format_duration(tail)} after its last training step "
        f"({share:.0%} of the run){where}."
    )
    steps = [f"Make stage {explained[0][0]!r} asynchronous, less frequent or smaller."] if explained else []
    return Finding("slow_completion", summary, signals, steps, context=context)


def data_loader_bottleneck(ev: RunEvidence) -> Finding | None:
    window = training_window(ev)
    if window is None or window.duration <= 0:
        return None
    th = ev.thresholds
    signals: list[Signal] = []
    summary_bits: list[str] = []
    data = [s for s in ev.stages if is_data_stage(s.name) and s.count >= 3]
    compute = [s for s in ev.stages if is_compute_stage(s.name) and s.count >= 3]
    if data:
        data_total = sum(s.total for s in data)
        compute_total = sum(s.total for s in compute)
        denominator = data_total + compute_total if compute else window.duration
        share = data_total / max(1e-9, denominator)
        if share >= th.data_share:
            top = max(data, key=lambda s: s.total)
            versus = (
                f" against {format_duration(compute_total)} in {', '.join(repr(s.name) for s in compute)}"
                if compute
                else " of the training window"
            )
            material = ramp(data_total, 0.1, 1.0, 0.6, 1.0)  # a share of milliseconds is not a problem yet
            signals.append(
                Signal(
                    "data_loader_bottleneck",
                    ramp(share, th.data_share, 0.9, 0.45, 0.8) * material,
                    "data_stage_share_of_step_time",
                    "stages",
                    f"stage {top.name!r}: {top.count} spans, {format_duration(top.total)} in all "
                    f"(mean {format_duration(top.mean)}){versus}: {share:.0%} of step time waits on data",
                    top.first_start,
                )
            )
            summary_bits.append(f"{share:.0%} of step time is spent in data stage {top.name!r}")
        elif compute:
            return None  # stages say the loader keeps up
    starved: tuple[Signal, ...] = ()
    cpu, n_cpu = cpu_percent_between(ev, window.start, window.end)
    gpu, n_gpu = gpu_percent_between(ev, window.start, window.end)
    idle_bits = []
    if gpu is not None and gpu < th.idle_gpu_percent:
        idle_bits.append(f"the GPU averaged {gpu:.0f}% utilization")
    if cpu is not None and cpu < th.idle_cpu_percent:
        waited = cpu_wait_percent_between(ev, window.start, window.end)
        if waited is not None and waited >= max(cpu, 1.0) and cpu + waited >= STARVED_READY_PERCENT:
            # ready to run most of the time and waiting for a core at least as long as it ran:
            # the machine's CPUs were busy with other work (a shared node, an oversubscribed
            # host); that starves the loader and the step alike, and no change to the input
            # pipeline would help. Said beside other signals, never a finding of its own. A tree
            # that sleeps on its input also waits a moment at each wake-up on a busy machine,
            # which can add up to more than its little CPU: it is ready a small share of the time
            # and stays idle
            starved = (
                Signal(
                    "data_loader_bottleneck",
                    0.0,
                    "cpu_starved_not_idle",
                    "resources",
                    f"the process tree used {cpu:.0f}% of one CPU core while it stepped and waited "
                    f"{waited:.0f}% of one core for a CPU: other work on the machine held the CPUs",
                    window.start,
                ),
            )
        else:
            idle_bits.append(f"the process tree used {cpu:.0f}% of one CPU core")
    if idle_bits and (gpu is None or gpu < th.idle_gpu_percent):
        weight = 0.3 if signals else 0.35
        if gpu is not None:
            weight += 0.1
        signals.append(
            Signal(
                "data_loader_bottleneck",
                weight,
                "compute_idle_while_stepping",
                "resources",
                " and ".join(idle_bits) + f" while training steps ran ({format_duration(window.duration)}, "
                f"{n_cpu + n_gpu} samples)",
                window.start,
            )
        )
        summary_bits.append(" and ".join(idle_bits) + " while it stepped")
    gaps = _step_gaps(ev)
    if gaps is not None and signals:
        median, p90, n = gaps
        if median > 0 and p90 / median >= 3:
            signals.append(
                Signal(
                    "data_loader_bottleneck",
                    0.15,
                    "irregular_steps",
                    "metrics",
                    f"step intervals: median {format_duration(median)}, 90th percentile {format_duration(p90)} over {n} steps "
                    "(periodic stalls)",
                    window.start,
                )
            )
        elif not data:  # context: how slowly the steps came, not a signal of its own
            signals.append(
                Signal(
                    "data_loader_bottleneck",
                    0.0,
                    "slow_steps",
                    "metrics",
                    f"steps arrive every {format_duration(median)} (median over {n} steps)",
                    window.start,
                )
            )
    if not signals:
        return None
    signals.extend(starved)
    summary = "Compute waits on input: " + "; ".join(summary_bits) + "."
    return Finding("data_loader_bottleneck", summary, signals)


def _before_init(ev: RunEvidence, start: float) -> float | None:
    """How long the process ran before ``flightlog.init()`` created its run (SDK only: under
    ``flightlog run`` the run exists before the process), None when it did not."""
    created = ev.info.created or ev.info.started
    if created is None or created - start < 0.05:
        return None
    return created - start


def _stage_start(ev: RunEvidence, name: str, default: float) -> float:
    stage = next((s for s in ev.stages if s.name == name), None)
    return stage.first_start if stage is not None and stage.first_start is not None else default


def _program_began(ev: RunEvidence, start: float, first_step: float) -> float:
    """When the workload's own code started working: its first output, or the SDK's init."""
    candidates = [
        t
        for t in (ev.info.timeline.get("first_output"), ev.info.started)
        if t is not None and start + 0.01 < t <= first_step + 0.05
    ]
    # silent until its first step: all of it counts as interpreter and imports
    return min(min(candidates), first_step) if candidates else first_step


def _stages_within(ev: RunEvidence, start: float, end: float) -> list[tuple[str, float]]:
    """Stages by the seconds they spent inside [start, end], longest first (the runner's own
    per-attempt stage is left out)."""
    out = []
    for s in ev.stages:
        if is_runner_stage(s.name):
            continue
        seconds = stage_in(s, start - 1e-3, end + 1e-3)
        if seconds > 0:
            out.append((s.name, seconds))
    out.sort(key=lambda x: -x[1])
    return out


def _step_gaps(ev: RunEvidence) -> tuple[float, float, int] | None:
    series = [m for m in ev.info.metrics.values() if m.count >= 5]
    if not series:
        return None
    name = max(series, key=lambda m: m.count).name
    times = sorted(float(t) for t in ev.history(name).times.tolist())
    gaps = [b - a for a, b in zip(times, times[1:], strict=False) if b > a]
    if len(gaps) < 4:
        return None
    gaps.sort()
    return statistics.median(gaps), gaps[int(0.9 * (len(gaps) - 1))], len(gaps) + 1
