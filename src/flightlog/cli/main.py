"""The ``flightlog`` command."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from flightlog.errors import FlightlogError, MissingExtra
from flightlog.extras import install_line, missing_extra

__all__ = ["cli", "main"]


class _Flightlog(click.Group):
    """The root group: a command that needs an extra this install lacks says what to install."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:
            missing = missing_extra(exc, f"`flightlog {ctx.invoked_subcommand}`")
            if missing is None:
                raise
            raise missing from None


@click.group(cls=_Flightlog, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--home", envvar="FLIGHTLOG_HOME", metavar="DIR", help="Embedded store directory (FLIGHTLOG_HOME; default: the nearest .flightlog above the working directory, else at the top of the git work tree, else ./.flightlog).")
@click.version_option(package_name="flightlog", message="flightlog %(version)s")
@click.pass_context
def cli(ctx: click.Context, home: str | None) -> None:
    """flightlog: every ML run carries its own evidence.

    \b
    Start:    flightlog run --project vision -- python train.py
    Inspect:  flightlog runs ls, flightlog runs show RUN, flightlog logs RUN --level error
    Docs:     docs/cli.md
    """
    ctx.ensure_object(dict)


def _register() -> None:
    from flightlog.cli.artifacts import artifacts_cmd
    from flightlog.cli.logs import logs_cmd
    from flightlog.cli.maintenance import gc_cmd, migrate_store_cmd, sync_cmd, version_cmd
    from flightlog.cli.metrics import metrics_cmd
    from flightlog.cli.runs import projects_cmd, runs_group

    for command in (runs_group, projects_cmd, logs_cmd, metrics_cmd, artifacts_cmd, sync_cmd, gc_cmd, version_cmd,
                    migrate_store_cmd):
        cli.add_command(command)
    from flightlog.cli.edit import runs_edit

    runs_group.add_command(runs_edit)
    # features that live in their own sub-packages plug their commands in here
    for module, attr in (
        ("flightlog.runner.cli", "run_cmd"),
        ("flightlog.data.cli", "data_group"),
        ("flightlog.server.cli", "server_cmd"),
        ("flightlog.server.cli", "token_group"),
        ("flightlog.server.ui", "ui_cmd"),
        ("flightlog.diagnose.cli", "diagnose_cmd"),
        ("flightlog.diagnose.cli", "compare_cmd"),
        ("flightlog.diagnose.cli", "rightsize_cmd"),
        ("flightlog.alerts.cli", "alerts_group"),
        ("flightlog.importers.cli", "import_group"),
        ("flightlog.sweeps.cli", "sweep_cmd"),
        ("flightlog.pipeline.cli", "pipeline_group"),
    ):
        try:
            if importlib.util.find_spec(module) is None:
                continue
        except ModuleNotFoundError:
            continue  # that feature's package is not installed in this build
        try:
            command = getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as exc:
            # a plain install lacks the extras: the command stays listed and says what to install
            name = attr.removesuffix("_cmd").removesuffix("_group")
            error = missing_extra(exc, f"`flightlog {name}`")
            if error is None:
                raise
            command = _needs_extra(name, error)
        cli.add_command(command)


def _needs_extra(name: str, error: MissingExtra) -> click.Command:
    """A stand-in for a command whose module needs an extra that is not installed."""

    def fail(args: tuple[str, ...]) -> None:
        raise error

    return click.Command(
        name, callback=fail,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
        help=error.message, short_help=f"(needs {install_line(error.details['extra'])})",
    )


_register()


def main(argv: list[str] | None = None) -> Any:
    try:
        return cli.main(args=argv, prog_name="flightlog", standalone_mode=False)
    except FlightlogError as exc:
        click.echo(f"error: {exc.message}", err=True)
        sys.exit(1)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except KeyboardInterrupt:
        sys.exit(130)
