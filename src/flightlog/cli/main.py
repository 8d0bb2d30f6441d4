"""The ``flightlog`` command: the core's commands, and each feature's from the feature table (`flightlog.plugins`)."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from flightlog.cli.modes import join_mode
from flightlog.errors import FlightlogError, MissingExtra
from flightlog.extras import install_line, missing_extra
from flightlog.plugins import CommandRef, features

__all__ = ["cli", "main"]


class _Flightlog(click.Group):
    """The root group: the core's commands, and every feature's from the feature table.

    A feature's commands are looked up only when asked for (``flightlog --help`` lists all,
    ``flightlog diagnose`` imports diagnosis's module only), so the table costs a command of
    the core nothing. A command that needs an extra this install lacks says what to install."""

    _feature_entries: list[click.Command | CommandRef] | None = None

    def _features(self) -> list[click.Command | CommandRef]:
        if self._feature_entries is None:
            self._feature_entries = features().cli_commands()
        return self._feature_entries

    def _add(self, entries: list[click.Command | CommandRef]) -> None:
        for entry in entries:
            command = _resolve(entry)
            name = command.name or ""
            if name not in self.commands:  # the core's commands, and the first feature's, win
                self.add_command(_with_modes(command))

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._add(self._features())
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            self._add([e for e in self._features() if _entry_name(e) == cmd_name])
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:
            missing = missing_extra(exc, f"`flightlog {ctx.invoked_subcommand}`")
            if missing is None:
                raise
            raise missing from None


@click.group(cls=_Flightlog, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--home",
    envvar="FLIGHTLOG_HOME",
    metavar="DIR",
    help="Embedded store directory (FLIGHTLOG_HOME; default: the nearest .flightlog above the working directory, else at the top of the git work tree, else ./.flightlog).",
)
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
    """The core's own commands; the features' come from the table (`_Flightlog`)."""
    from flightlog.cli.artifacts import artifacts_cmd
    from flightlog.cli.edit import runs_edit
    from flightlog.cli.logs import logs_cmd
    from flightlog.cli.maintenance import gc_cmd, migrate_store_cmd, sync_cmd, version_cmd
    from flightlog.cli.metrics import metrics_cmd
    from flightlog.cli.ranks import ranks_cmd  # as the other core commands: imported once, to register
    from flightlog.cli.runs import projects_cmd, runs_group

    for command in (
        runs_group,
        projects_cmd,
        logs_cmd,
        ranks_cmd,
        metrics_cmd,
        artifacts_cmd,
        sync_cmd,
        gc_cmd,
        version_cmd,
        migrate_store_cmd,
    ):
        cli.add_command(command)
    runs_group.add_command(runs_edit)


def _entry_name(entry: click.Command | CommandRef) -> str | None:
    return entry.name


def _resolve(entry: click.Command | CommandRef) -> click.Command:
    """A feature's command; one whose module needs a missing extra stays listed and says what to install."""
    loaded = _load(entry)
    return _needs_extra(entry.name or "", loaded) if isinstance(loaded, MissingExtra) else loaded


def _load(entry: click.Command | CommandRef) -> click.Command | MissingExtra:
    """The command ``entry`` names, or the error saying which extra its module needs."""
    if isinstance(entry, click.Command):
        return entry
    try:
        command: click.Command = getattr(importlib.import_module(entry.module), entry.attr)
    except ModuleNotFoundError as exc:
        error = missing_extra(exc, f"`flightlog {entry.name}`")
        if error is None:
            raise
        return error
    return command


def _with_modes(command: click.Command) -> click.Command:
    """A feature's command with the modes other features add to it (`CommandMode`); a mode whose
    module needs a missing extra is left out (its own command says what to install)."""
    for mode in features().command_modes(command.name or ""):
        target = _load(mode.target)
        if isinstance(target, click.Command):
            command = join_mode(command, mode, target)
    return command


def _needs_extra(name: str, error: MissingExtra) -> click.Command:
    """A stand-in for a command whose module needs an extra that is not installed."""

    def fail(args: tuple[str, ...]) -> None:
        raise error

    return click.Command(
        name,
        callback=fail,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
        help=error.message,
        short_help=f"(needs {install_line(error.details['extra'])})",
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
