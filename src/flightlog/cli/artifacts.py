"""``flightlog artifacts RUN [get PATH]``: list a run's artifacts, or copy one out."""

from __future__ import annotations

from pathlib import Path

import click

from flightlog.cli.common import open_client
from flightlog.cli.output import console, emit_json, esc, format_option
from flightlog.errors import Conflict, InvalidInput
from flightlog.timefmt import format_size

__all__ = ["artifacts_cmd"]


@click.command("artifacts")
@click.argument("run")
@click.argument("action", required=False, type=click.Choice(["get", "lineage"]))
@click.argument("path", required=False)
@click.option("--output", "-o", type=click.Path(dir_okay=True), help="With get: where to write (default: ./NAME).")
@click.option("--force", "-f", is_flag=True, help="With get: replace a file that is already there.")
@format_option
def artifacts_cmd(run: str, action: str | None, path: str | None, output: str | None, force: bool, fmt: str) -> None:
    """List artifacts; `get PATH` copies one out; `lineage` shows inputs and outputs with related runs."""
    client = open_client()
    info = client.run(run)
    if action == "get":
        if not path:
            raise InvalidInput("artifacts RUN get PATH: name the artifact path (see `flightlog artifacts RUN`)")
        dest = Path(output) if output else Path.cwd() / Path(path).name
        if dest.is_dir():
            dest = dest / Path(path).name
        if (dest.exists() or dest.is_symlink()) and not force:
            # a local file may be the user's only copy of something: replacing it is asked for, never silent
            raise Conflict(
                f"{dest} already exists; nothing was written. Pass --force to replace it, "
                "or --output PATH to write elsewhere",
                details={"path": str(dest)},
            )
        written = client.download_artifact(info.id, path, dest)
        if fmt == "json":
            emit_json({"path": path, "written": str(written)})
        else:
            click.echo(str(written))
        return
    if action == "lineage":
        emit_json(client.lineage(info.id)) if fmt == "json" else _print_lineage(client.lineage(info.id))
        return
    artifacts = client.artifacts(info)
    if fmt == "json":
        emit_json([a.to_dict() for a in artifacts])
        return
    from rich.table import Table

    table = Table(box=None, header_style="bold")
    for head in ("ROLE", "KIND", "PATH", "SIZE", "SHA256", "STEP", "KEPT"):
        table.add_column(head, no_wrap=True)
    for a in artifacts:
        table.add_row(
            esc(a.role),
            esc(a.kind or "-"),
            esc(a.path),
            format_size(a.size),
            (a.sha256 or "-")[:12],
            "-" if a.step is None else str(a.step),
            "yes" if (a.uri or "").startswith("cas:") else "path only",
        )
    console().print(table)


def _print_lineage(lineage: dict) -> None:
    out = console()
    out.print(f"[bold]run {lineage['run'][:8]}[/]" + (f"  parent {lineage['parent'][:8]}" if lineage["parent"] else ""))
    for item in lineage["inputs"]:
        a = item["artifact"]
        src = ", ".join(r[:8] for r in item["produced_by"]) or "-"
        out.print(f"  input  {esc(a['path'])}  ({(a['sha256'] or '')[:12]})  produced by {src}")
    for item in lineage["outputs"]:
        a = item["artifact"]
        dst = ", ".join(r[:8] for r in item["used_by"]) or "-"
        out.print(f"  output {esc(a['path'])}  ({(a['sha256'] or '')[:12]})  used by {dst}")
    if lineage["children"]:
        out.print("  children " + ", ".join(c[:8] for c in lineage["children"]))
