"""``flightlog runs edit RUN``: rename, retag and describe a run after the fact."""

from __future__ import annotations

import click

from flightlog.cli.common import open_client
from flightlog.cli.output import emit_json, format_option
from flightlog.runner.options import parse_assignments

__all__ = ["runs_edit"]


@click.command("edit")
@click.argument("run")
@click.option("--name", help="A new name.")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Set a tag; repeatable.")
@click.option("--untag", "untags", multiple=True, metavar="KEY", help="Remove a tag; repeatable.")
@click.option("--description", "-d", help="What the run is for (kept as the 'description' tag); '' removes it.")
@format_option
def runs_edit(
    run: str, name: str | None, tags: tuple[str, ...], untags: tuple[str, ...], description: str | None, fmt: str
) -> None:
    """Rename, retag or describe a run, whatever its status.

    \b
    flightlog runs edit 3f2a --name resnet50-baseline --tag team=cv --untag tmp
    flightlog runs edit 3f2a -d "baseline for the augmentation study"
    """
    info = open_client().edit_run(
        run, name=name, description=description, tags=parse_assignments(tags, "--tag", typed=False), remove_tags=untags
    )
    if fmt == "json":
        emit_json(info.to_dict(detail=False))
        return
    click.echo(f"run {info.id[:8]}: name {info.name!r}, tags {dict(sorted(info.tags.items()))}", err=True)
