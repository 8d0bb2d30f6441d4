"""A feature's mode of another feature's command (`flightlog.plugins.CommandMode`), joined to
that command when the CLI assembles it: ``flightlog diagnose --deployment ENDPOINT`` is the
serving feature's mode of diagnose's command.

Why a mode and not an option the command owns: the command would then know a feature above it
(diagnose knowing deployments), and the call would go up through a function looked up by name.
Joined here, each side keeps its own: the command its arguments, the mode its options, and the
CLI checks that the two are not mixed, with the messages the mode declares.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

import click

from flightlog.plugins import CommandMode

__all__ = ["join_mode"]


def _given(param: click.Parameter, value: Any) -> bool:
    return value not in (None, False, ()) and value != param.default


def _shown(param: click.Parameter, value: Any) -> str:
    """A given parameter as a refusal names it: an argument by its value, an option by its name."""
    return repr(value) if isinstance(param, click.Argument) else repr(param.opts[0])


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def join_mode(command: click.Command, mode: CommandMode, target: click.Command) -> click.Command:
    """``command`` with ``mode`` joined (a copy: the command's own object stays as its module has
    it); the command unchanged when ``target`` has no option to select the mode by."""
    if not target.params or not isinstance(target.params[0], click.Option) or target.callback is None:
        return command
    trigger = target.params[0]
    own = {p.name for p in command.params}
    theirs = {p.name for p in target.params}
    added = [p for p in target.params if p.name not in own]
    mode_only = [p for p in added if p is not trigger]
    command_only = [p for p in command.params if p.name not in theirs]
    # the mode's options go before the first parameter both share (--format stays last)
    at = next((i for i, p in enumerate(command.params) if p.name in theirs), len(command.params))
    joined = copy.copy(command)
    joined.params = [*command.params[:at], *added, *command.params[at:]]
    if mode.help:
        joined.help = f"{inspect.cleandoc(command.help or '')}\n\n{inspect.cleandoc(mode.help)}".strip()
    option = trigger.opts[0]
    run_command: Callable[..., Any] | None = command.callback
    run_mode: Callable[..., Any] = target.callback

    def callback(**values: Any) -> Any:
        if _given(trigger, values[trigger.name]):
            given = [p for p in command_only if _given(p, values[p.name])]
            if given:
                raise click.UsageError(
                    mode.conflict.format(option=option, given=_shown(given[0], values[given[0].name]))
                )
            return run_mode(**{p.name: values[p.name] for p in target.params})
        if any(_given(p, values[p.name]) for p in mode_only):
            names = [p.opts[0] for p in mode_only if isinstance(p, click.Option)]
            raise click.UsageError(f"{_listed(names)} go with {option} {trigger.metavar or ''}".rstrip())
        if run_command is None:
            return None
        try:
            return run_command(**{p.name: values[p.name] for p in command.params})
        except click.UsageError as exc:
            if not mode.hint:
                raise
            raise click.UsageError(f"{exc.message}, {mode.hint}", exc.ctx) from None

    joined.callback = callback
    return joined
