"""The diagnosis taxonomy of docs/architecture.md: category names, the kind of problem each one is, and
what a person should do first. Every other module of the package speaks these names.

That list is fixed, with ``loss_divergence`` added next to ``loss_plateau`` (issue 23: an
exploding loss is its own problem, not a plateau); flightlog's own extensions
(``EXTENSIONS``: ``metric_regressed``) come after it and are documented in
docs/troubleshooting.md."""

from __future__ import annotations

from typing import Final

__all__ = [
    "CATEGORIES",
    "EXTENSIONS",
    "FAILURE_CATEGORIES",
    "KINDS",
    "KIND_OF",
    "NEXT_STEPS",
    "TITLE",
]

KINDS: Final = ("software", "data", "infrastructure", "performance", "none")

#: category → kind of problem (the report's ``kind`` is the kind of its top finding)
KIND_OF: Final[dict[str, str]] = {
    "oom_killed": "infrastructure",
    "memory_leak": "software",
    "missing_file": "data",
    "dependency_error": "software",
    "service_unavailable": "infrastructure",
    "credentials_error": "infrastructure",
    "bad_parameter": "software",
    "data_error": "data",
    "disk_full": "infrastructure",
    "timeout": "performance",
    "killed_by_signal": "infrastructure",
    "code_error": "software",
    "nan_loss": "software",
    "loss_plateau": "software",
    "loss_divergence": "software",
    "data_loader_bottleneck": "performance",
    "slow_startup": "performance",
    "queue_wait": "performance",
    "slow_completion": "performance",
    "data_drift": "data",
    "cohort_regression": "data",
    # extensions of the list in docs/architecture.md
    "metric_regressed": "software",
    # distributed runs (issue 28, docs/distributed.md)
    "hang": "performance",
    "collective_mismatch": "software",
    "straggler": "performance",
}

#: categories flightlog adds to the taxonomy of docs/architecture.md
EXTENSIONS: Final = ("metric_regressed", "hang", "collective_mismatch", "straggler")

CATEGORIES: Final = tuple(KIND_OF)

#: the categories a failed process can be classified into from its exit and output
FAILURE_CATEGORIES: Final = (
    "oom_killed",
    "missing_file",
    "dependency_error",
    "service_unavailable",
    "credentials_error",
    "bad_parameter",
    "data_error",
    "disk_full",
    "timeout",
    "killed_by_signal",
    "code_error",
)

TITLE: Final[dict[str, str]] = {
    "oom_killed": "killed for exceeding memory",
    "memory_leak": "memory grows steadily",
    "missing_file": "a needed file or path does not exist",
    "dependency_error": "a package or program is missing or incompatible",
    "service_unavailable": "a service the run depends on was unreachable",
    "credentials_error": "permission denied or missing credentials",
    "bad_parameter": "an invalid parameter or configuration value",
    "data_error": "the data broke an assumption",
    "disk_full": "no space left on device",
    "timeout": "stopped by the timeout",
    "killed_by_signal": "terminated from outside",
    "code_error": "an error in the workload's code",
    "nan_loss": "a loss or metric became NaN or infinite",
    "loss_plateau": "the monitored metric stopped improving",
    "loss_divergence": "the loss exploded instead of converging",
    "data_loader_bottleneck": "compute waits on input data",
    "slow_startup": "slow start before the first step",
    "queue_wait": "long wait in the queue",
    "slow_completion": "long tail after the last step",
    "data_drift": "the input data drifted from the reference",
    "cohort_regression": "a cohort got worse while the aggregate improved",
    "metric_regressed": "a final metric is much worse than the baseline's",
    "hang": "progress stopped on some or all ranks",
    "collective_mismatch": "ranks called different collectives",
    "straggler": "one rank is consistently slower than the others",
}

#: generic first steps per category; findings add specific ones in front of these
NEXT_STEPS: Final[dict[str, tuple[str, ...]]] = {
    "oom_killed": (
        "Compare the memory peak with the limit (`flightlog rightsize RUN`) and raise the limit.",
        "Reduce memory per step: a smaller batch size, fewer data-loader workers, streaming instead of loading whole files.",
    ),
    "memory_leak": (
        "Look for objects kept across steps (lists of losses as tensors, caches, growing history); log `.item()` values, not tensors.",
        "Profile with tracemalloc (`tracemalloc.start(); ... take_snapshot().statistics('lineno')`) between two steps.",
    ),
    "missing_file": (
        "Check the path in the evidence: is it relative to the working directory the run used (`flightlog runs show RUN`)?",
        "Make sure the step that produces it ran first, or that the volume or bucket holding it is mounted.",
    ),
    "dependency_error": (
        "Compare the run's packages with a run that worked (`flightlog compare RUN BASELINE`).",
        "Install the missing package or pin the version the code expects in the lock file or image.",
    ),
    "service_unavailable": (
        "Check that the service named in the evidence is up and reachable from the run's host (address, port, DNS, firewall).",
        "Retry transient failures: `flightlog run --retries 3 --retry-on service_unavailable -- ...`.",
    ),
    "credentials_error": (
        "Check the credentials the run used (environment, profile, mounted secret) and that they have not expired.",
        "Check the permissions of the path or resource named in the evidence.",
    ),
    "bad_parameter": (
        "Check the parameter named in the evidence against the valid values; compare with a run that worked.",
    ),
    "data_error": (
        "Compare the input data with the last good run's (`flightlog compare RUN BASELINE`: manifests, schema).",
        "Validate the input before training, so a schema change fails fast with a clear message.",
    ),
    "disk_full": (
        "Free space on the device named in the evidence, or write checkpoints and caches to a larger volume.",
        "Keep fewer checkpoints (rotate) and clean temporary files.",
    ),
    "timeout": (
        "Find where the time went (`flightlog diagnose` performance findings, `flightlog runs show RUN` stages).",
        "Raise `--timeout` if the run is legitimately longer, or resume from the last checkpoint (`flightlog run --resume RUN`).",
    ),
    "killed_by_signal": (
        "Find who sent the signal: a scheduler preemption, a user, a deployment; check the scheduler's events at the time shown.",
        "Save checkpoints regularly and resume (`flightlog run --resume RUN`); retry with `--retry-on killed_by_signal`.",
    ),
    "code_error": (
        "Open the innermost frame of the traceback in the evidence and reproduce with the same params.",
        "Compare with the last good run (`flightlog compare RUN BASELINE`) for code and package changes.",
    ),
    "nan_loss": (
        "Lower the learning rate or add gradient clipping; check the inputs of the first bad step for NaN or extreme values.",
        "Turn on anomaly detection (e.g. `torch.autograd.set_detect_anomaly(True)`) around the step shown.",
    ),
    "loss_plateau": (
        "Try a learning-rate schedule or a different learning rate; check that the data is shuffled and labels are right.",
        "Stop earlier: the remaining steps did not improve the metric.",
    ),
    "loss_divergence": (
        "Lower the learning rate (by 10× to start), add gradient clipping or a warm-up; compare the params with a run that converged.",
        "Check the initialisation and the input scale (normalised features, no extreme values) of the first steps.",
    ),
    "data_loader_bottleneck": (
        "Load data in parallel (more data-loader workers, prefetching, pinned memory) or cache decoded data.",
        "Move expensive preprocessing out of the training loop.",
    ),
    "slow_startup": (
        "Find what runs before the first step (imports, downloads, dataset indexing) and cache or parallelize it.",
    ),
    "queue_wait": (
        "Ask for fewer resources (`flightlog rightsize`) so the scheduler can place the run sooner, or use another queue.",
    ),
    "slow_completion": (
        "Write checkpoints and uploads asynchronously, less often, or to faster storage; evaluate on a sample.",
    ),
    "data_drift": (
        "Compare the drifted columns with the reference; retrain or fix the upstream source if the change is not expected.",
    ),
    "cohort_regression": (
        "Look at the cohort's examples; add it to the evaluation gate so an aggregate gain cannot hide it.",
    ),
    "metric_regressed": (
        "Find the change that cost quality: params, code, packages and inputs that differ from the baseline are listed in this report.",
        "Re-run the baseline's configuration on the same data to rule out noise before bisecting the changes.",
    ),
    "hang": (
        "Open the culprit's frame in the evidence: what does that line wait for (a file, a lock, a queue, a peer)?",
        "The other ranks only waited for it: their timeouts are consequences, not causes (docs/distributed.md).",
        "Give long phases without steps a sign of life (`run.heartbeat()`), or raise FLIGHTLOG_HANG_MIN if they are expected.",
    ),
    "collective_mismatch": (
        "Make every rank call the same collectives in the same order with the same shapes: look for a branch on the rank, "
        "an early `break`, or data of different sizes per rank (uneven last batch: `drop_last=True`).",
        "Run once with TORCH_DISTRIBUTED_DEBUG=DETAIL to have torch check each collective's shapes across ranks.",
    ),
    "straggler": (
        "Look at the slow rank's own stages in the evidence: its data loading, its host (CPU, disk, network), its device.",
        "Balance the work per rank (shard sizes, sequence lengths), or give the slow host's loader more workers.",
    ),
}
