"""``flightlog sweep``: a hyperparameter search over a command, each trial a child run."""

from __future__ import annotations

import sys

import click

from flightlog.cli.common import open_client
from flightlog.cli.output import console, emit_json, format_option

__all__ = ["sweep_cmd"]


@click.command("sweep", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--param",
    "params",
    multiple=True,
    required=True,
    metavar="NAME=SPEC",
    help="A searched parameter; repeatable: lr=log:1e-4:1e-1, dropout=uniform:0:0.5, layers=int:1:4, bs=16,32,64.",
)
@click.option("--metric", required=True, help="The metric to optimize (its last value in each trial).")
@click.option("--goal", type=click.Choice(["minimize", "maximize"]), default="minimize", show_default=True)
@click.option(
    "--method",
    type=click.Choice(["grid", "random", "tpe"]),
    default="random",
    show_default=True,
    help="grid: every combination; random: sampled; tpe: Optuna's TPE (flightlog[sweeps]).",
)
@click.option("--trials", type=click.IntRange(min=1), default=10, show_default=True, help="At most this many trials.")
@click.option("--project", "-p", envvar="FLIGHTLOG_PROJECT", help="Project of the sweep and its trials.")
@click.option("--name", "-n", help="Name of the sweep (trials are NAME-0, NAME-1, ...).")
@click.option(
    "--alerts",
    metavar="FILE",
    help="Alert rules for early stopping: a trial for which one fires is stopped (docs/alerting.md).",
)
@click.option("--seed", type=int, help="Seed of the random and TPE samplers, for a repeatable sweep.")
@format_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def sweep_cmd(
    params: tuple[str, ...],
    metric: str,
    goal: str,
    method: str,
    trials: int,
    project: str | None,
    name: str | None,
    alerts: str | None,
    seed: int | None,
    fmt: str,
    command: tuple[str, ...],
) -> None:
    """Search hyperparameters: run CMD once per trial, {NAME} replaced by the trial's value.

    \b
    flightlog sweep --param lr=log:1e-4:1e-1 --param bs=16,32 --metric val_loss --trials 20 \\
        -- python train.py --lr {lr} --batch-size {bs}

    Each trial runs under `flightlog run` as a child run of the sweep's run, with the trial's
    params. The UI's sweep view (a run's "Sweep" tab, or Explore) plots params against the metric.
    """
    from flightlog.sweeps.driver import CommandTarget, Trial, run_sweep
    from flightlog.sweeps.space import parse_param

    cmd = list(command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    space = dict(parse_param(p) for p in params)
    out = console()

    def progress(trial: Trial) -> None:
        if fmt == "text":
            value = "-" if trial.value is None else f"{trial.value:.6g}"
            stopped = f" (stopped by {trial.stopped_by})" if trial.stopped_by else ""
            click.echo(f"trial {trial.number}: {trial.state}{stopped} {metric}={value} {trial.params}", err=True)

    result = run_sweep(
        CommandTarget(cmd),
        space,
        metric=metric,
        goal=goal,
        method=method,
        trials=trials,
        project=project,
        name=name,
        alerts=alerts,
        seed=seed,
        client=open_client(),
        on_trial=progress,
    )
    if fmt == "json":
        emit_json(result.to_dict())
    else:
        best = result.best
        out.print(
            f"sweep {result.sweep_id}: {len(result.trials)} trials"
            + (
                f"; best {metric}={best.value:.6g} with {best.params} (run {best.run_id})"
                if best
                else "; no trial scored"
            )
        )
    if not any(t.state != "failed" for t in result.trials):
        sys.exit(1)
