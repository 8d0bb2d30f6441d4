"""``flightlog run [OPTIONS] -- CMD ARGS...``"""

from __future__ import annotations

import sys

import click

from flightlog.errors import InvalidInput
from flightlog.plugins import features
from flightlog.runner.options import DEFAULT_RETRY_ON, RETRYABLE, RunnerOptions, parse_assignments
from flightlog.timefmt import parse_duration, parse_size, parse_time

__all__ = ["run_cmd"]


class _RunCommand(click.Command):
    """``flightlog run``: the workload's own options pass through, a mistyped runner option does not.

    Click is told to keep unknown options (``python train.py --lr 0.1`` needs them) and to stop at
    the first word that is not one of ours, so that word starts the command. A word there that
    looks like an option was not written after ``--``, so it can only be a runner option the user
    mistyped (``--projct``): refused like every other command's unknown option, before a run, a
    journal or a child process exists.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        raw = list(args)
        rest = super().parse_args(ctx, args)
        command = ctx.params.get("command") or ()
        start = len(raw) - len(command)  # the command is the tail of what was typed
        first = command[0] if command else ""
        after_dashes = start > 0 and raw[start - 1] == "--"
        if first.startswith("-") and first not in ("-", "--") and not after_dashes:
            name = first.partition("=")[0]
            known = [
                opt
                for param in self.params
                if isinstance(param, click.Option)
                for opt in (*param.opts, *param.secondary_opts)
            ]
            import difflib  # cost: only a mistyped option pays it

            best = difflib.get_close_matches(name, known, n=1)  # one suggestion, the closest, as other commands give
            raise click.NoSuchOption(name, possibilities=best, ctx=ctx)
        return rest


@click.command(
    "run", cls=_RunCommand, context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.option("--project", "-p", envvar="FLIGHTLOG_PROJECT", help="Project of the run (FLIGHTLOG_PROJECT).")
@click.option("--name", "-n", help="Run name (default: the script's name; with --resume, the run's own).")
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="A parameter; repeatable. Values are parsed as JSON when they can be (0.1, true, [1,2]).",
)
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="A tag; repeatable.")
@click.option(
    "--timeout",
    metavar="DURATION",
    help="Stop the workload after this long (SIGTERM, then SIGKILL after --kill-grace): 90s, 30m, 2h.",
)
@click.option(
    "--kill-grace",
    metavar="DURATION",
    default="10s",
    show_default=True,
    help="Time between SIGTERM and SIGKILL on timeout.",
)
@click.option(
    "--retries",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Attempts after the first, for failures listed by --retry-on.",
)
@click.option(
    "--retry-on",
    multiple=True,
    type=click.Choice(RETRYABLE),
    metavar="CATEGORY",
    help=f"Failure categories worth a retry; repeatable (default: {', '.join(DEFAULT_RETRY_ON)}).",
)
@click.option(
    "--retry-delay",
    metavar="DURATION",
    default="1s",
    show_default=True,
    help="First backoff; doubles each retry, with jitter.",
)
@click.option("--memory-limit", metavar="SIZE", help="A real memory limit (cgroup) for the workload's tree: 512M, 8G.")
@click.option(
    "--memory-limit-mode",
    type=click.Choice(["cgroup", "rlimit"]),
    default="cgroup",
    show_default=True,
    help="rlimit caps address space instead (breaks JVM, CUDA, jemalloc programs).",
)
@click.option(
    "--sample-interval", metavar="DURATION", default="1s", show_default=True, help="Resource sampling interval."
)
@click.option(
    "--log-policy",
    type=click.Choice(["block", "drop"]),
    default="block",
    show_default=True,
    help="When storage falls behind: block (lose nothing; the workload may wait) or drop (never slow it; drops are counted).",
)
@click.option(
    "--max-log-rate",
    type=float,
    metavar="LINES_PER_S",
    help="Store at most this many lines per second; the rest are counted as dropped.",
)
@click.option(
    "--max-line-bytes",
    type=click.IntRange(min=256),
    default=65536,
    show_default=True,
    help="Longer lines are stored truncated (with a marker).",
)
@click.option(
    "--queued-at",
    metavar="TIME",
    envvar="FLIGHTLOG_QUEUED_AT",
    help="When a scheduler queued this job (ISO-8601 or epoch seconds), for queue wait.",
)
@click.option(
    "--resume", metavar="RUN", help="Start a new attempt of RUN with FLIGHTLOG_RESUME_FROM set to its last checkpoint."
)
@click.option(
    "--resume-from",
    "resume_from",
    metavar="PATH",
    help="Start a new run with FLIGHTLOG_RESUME_FROM set to this checkpoint.",
)
@click.option(
    "--parent", metavar="RUN", help="Record the run as a child of RUN (a pipeline's steps, a sweep's trials)."
)
@click.option(
    "--run-id",
    "run_id",
    metavar="ID",
    help="The new run's id (default: a fresh one); a caller that must know it beforehand sets it.",
)
@click.option(
    "--redact",
    multiple=True,
    metavar="REGEX",
    help="Also redact what matches this pattern from stored logs; repeatable.",
)
@click.option(
    "--alerts",
    "alerts",
    metavar="FILE",
    help="Alert rules to evaluate live (default: ./flightlog.alerts.yaml, else FLIGHTLOG_HOME/alerts.yaml; docs/alerting.md).",
)
@click.option(
    "--log-metrics/--no-log-metrics",
    "log_metrics",
    default=True,
    show_default=True,
    help="Read metrics from progress lines (step=10 loss=0.5; FLIGHTLOG_LOG_METRICS=0 also turns it off). A name the workload logs with the SDK is never read from lines.",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run_cmd(
    log_metrics: bool,
    project: str | None,
    name: str | None,
    params: tuple[str, ...],
    tags: tuple[str, ...],
    timeout: str | None,
    kill_grace: str,
    retries: int,
    retry_on: tuple[str, ...],
    retry_delay: str,
    memory_limit: str | None,
    memory_limit_mode: str,
    sample_interval: str,
    log_policy: str,
    max_log_rate: float | None,
    max_line_bytes: int,
    queued_at: str | None,
    resume: str | None,
    resume_from: str | None,
    parent: str | None,
    run_id: str | None,
    redact: tuple[str, ...],
    alerts: str | None,
    command: tuple[str, ...],
) -> None:
    """Run CMD and attach its logs, resources, exit and failure to a run.

    \b
    flightlog run --project vision --param lr=0.1 -- python train.py --epochs 3
    flightlog run --memory-limit 8G --timeout 2h --retries 2 -- ./pipeline.sh
    """
    import re

    cmd = list(command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    for pattern in redact:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise InvalidInput(f"--redact {pattern!r} is not a valid regular expression: {exc}") from None
    if alerts is not None:  # a file asked for by name must be usable before anything starts
        features().need(
            "flightlog_check_alert_rules", needed_by="--alerts", install="flightlog (its alerts feature)", path=alerts
        )
    options = RunnerOptions(
        command=cmd,
        project=project,
        name=name,
        params=parse_assignments(params, "--param", typed=True),
        tags=parse_assignments(tags, "--tag", typed=False),
        timeout=parse_duration(timeout, what="--timeout") if timeout else None,
        kill_grace=parse_duration(kill_grace, what="--kill-grace"),
        retries=retries,
        retry_on=tuple(retry_on) or DEFAULT_RETRY_ON,
        retry_delay=parse_duration(retry_delay, what="--retry-delay"),
        memory_limit=parse_size(memory_limit, what="--memory-limit") if memory_limit else None,
        memory_limit_mode=memory_limit_mode,
        sample_interval=parse_duration(sample_interval, what="--sample-interval"),
        log_policy=log_policy,
        max_log_rate=max_log_rate,
        max_line_bytes=max_line_bytes,
        queued_at=_queued(queued_at),
        resume=resume,
        resume_from=resume_from,
        parent=parent,
        run_id=run_id,
        redact=redact,
        alerts=alerts,
        log_metrics=log_metrics,
    )
    from flightlog.runner.runner import Runner

    sys.exit(Runner(options).execute())


def _queued(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return parse_time(text, what="--queued-at")
