"""What ``flightlog run`` was asked to do, validated once, before anything starts."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flightlog.errors import InvalidInput

__all__ = [
    "RunnerOptions",
    "child_run_argv",
    "parse_assignments",
    "parse_value",
    "retry_backoff",
    "DEFAULT_RETRY_ON",
    "RETRYABLE",
    "RETRY_MAX_DELAY",
]

DEFAULT_RETRY_ON = ("service_unavailable", "oom_killed", "killed_by_signal")
RETRYABLE = (
    "oom_killed",
    "memory_leak",
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
    "nan_loss",
)
RETRY_MAX_DELAY = 300.0  # seconds: the backoff stops doubling here


def retry_backoff(first: float, retry: int, max_delay: float = RETRY_MAX_DELAY) -> float:
    """The wait before retry number ``retry`` (1, 2, ...): ``first`` doubling each time, at most
    ``max_delay``, with jitter (x0.5 to x1.5). A run's retries and a pipeline step's use it."""
    return min(max_delay, first * (2 ** (retry - 1))) * random.uniform(0.5, 1.5)


def child_run_argv(
    *, project: str, name: str, parent: str, run_id: str, tags: Mapping[str, str], params: Mapping[str, Any]
) -> list[str]:
    """``python -m flightlog.runner`` for a child run (a pipeline step, a sweep trial) whose id the
    caller chose; the caller adds its own options, then ``--`` and the command."""
    argv = [
        sys.executable,
        "-m",
        "flightlog.runner",
        "--project",
        project,
        "--name",
        name,
        "--parent",
        parent,
        "--run-id",
        run_id,
    ]
    for key, value in tags.items():
        argv += ["--tag", f"{key}={value}"]
    for key, value in params.items():
        argv += ["--param", f"{key}={json.dumps(value)}"]
    return argv


@dataclass
class RunnerOptions:
    command: list[str]
    project: str | None = None
    name: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    kill_grace: float = 10.0
    retries: int = 0
    retry_on: tuple[str, ...] = DEFAULT_RETRY_ON
    retry_delay: float = 1.0
    retry_max_delay: float = RETRY_MAX_DELAY
    memory_limit: int | None = None
    memory_limit_mode: str = "cgroup"
    sample_interval: float = 1.0
    log_policy: str = "block"
    max_log_rate: float | None = None
    max_line_bytes: int = 65536
    queued_at: float | None = None
    resume: str | None = None
    resume_from: str | None = None  # a checkpoint path handed to the workload (pipelines' retries)
    parent: str | None = None  # the parent run (a pipeline's step runs under the pipeline run)
    run_id: str | None = None  # the id of the new run, chosen by the caller (a pipeline controller)
    redact: tuple[str, ...] = ()
    alerts: str | None = None  # a rules file (else flightlog.alerts.yaml, else FLIGHTLOG_HOME/alerts.yaml)
    log_metrics: bool = True  # read metrics from progress lines (FLIGHTLOG_LOG_METRICS=0 also turns it off)

    def __post_init__(self) -> None:
        if not self.command:
            raise InvalidInput("nothing to run: put the command after --, e.g. flightlog run -- python train.py")
        if self.retries < 0:
            raise InvalidInput("--retries must be 0 or more")
        unknown = [c for c in self.retry_on if c not in RETRYABLE]
        if unknown:
            raise InvalidInput(
                f"--retry-on {', '.join(unknown)}: not a failure category; use any of {', '.join(RETRYABLE)}"
            )
        if self.log_policy not in ("block", "drop"):
            raise InvalidInput(f"--log-policy {self.log_policy!r}: use block or drop")
        if self.memory_limit_mode not in ("cgroup", "rlimit"):
            raise InvalidInput(f"--memory-limit-mode {self.memory_limit_mode!r}: use cgroup or rlimit")
        if self.sample_interval <= 0:
            raise InvalidInput("--sample-interval must be greater than 0")
        if self.timeout is not None and self.timeout <= 0:
            raise InvalidInput("--timeout must be greater than 0")
        if self.resume and (self.run_id or self.resume_from):
            raise InvalidInput("--resume continues RUN itself: it cannot be combined with --run-id or --resume-from")
        if self.max_log_rate is not None and self.max_log_rate <= 0:
            raise InvalidInput("--max-log-rate must be greater than 0 lines per second")


def parse_value(text: str) -> Any:
    """``0.1`` → 0.1, ``3`` → 3, ``true`` → True, ``[1,2]`` → [1, 2], anything else stays text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_assignments(items: tuple[str, ...], option: str, *, typed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"{option} {item!r}: write KEY=VALUE, e.g. {option} lr=0.01")
        out[key.strip()] = parse_value(value) if typed else value
    return out
