"""``flightlog sync``, ``flightlog gc`` and ``flightlog version``."""

from __future__ import annotations

import platform
import sys
import time
from typing import Any

import click

from flightlog.cli.common import open_client
from flightlog.cli.output import emit_json, format_option
from flightlog.errors import InvalidInput
from flightlog.timefmt import format_size, parse_duration, parse_size

__all__ = ["sync_cmd", "gc_cmd", "version_cmd", "migrate_store_cmd"]


@click.command("sync")
@click.option("--run", "run_id", help="Only this run's journals (full id).")
@click.option("--keep", is_flag=True, help="Keep journals after shipping them.")
@format_option
def sync_cmd(run_id: str | None, keep: bool, fmt: str) -> None:
    """Ship journal records that never reached the store (offline runs, crashes, outages)."""
    from flightlog.journal.sync import sync

    client = open_client(reconcile=False)  # the sync settles the journals itself, and reports it
    progress = _progress("syncing journals") if sys.stderr.isatty() and fmt == "text" else None
    try:
        report = sync(
            client.settings.home, client.store, run_id=run_id, keep=keep, progress=progress.update if progress else None
        )
    finally:
        if progress:
            progress.close()
    if fmt == "json":
        emit_json(report.to_dict())
        return
    click.echo(
        f"synced {report.journals} journal(s): {report.records_shipped} record(s) shipped, "
        f"{report.duplicates} already there, {report.removed} journal(s) removed",
        err=True,
    )
    for line in report.damaged:
        click.echo(f"warning: {line}", err=True)
    for line in report.skipped[:20]:
        click.echo(f"warning: skipped {line}", err=True)
    for run in report.crashed_runs:
        click.echo(f"run {run[:8]} marked crashed (its process ended without an end record)", err=True)


class _progress:
    def __init__(self, label: str) -> None:
        from rich.progress import Progress

        self._p = Progress(transient=True)
        self._p.start()
        self._task = self._p.add_task(label, total=None)

    def update(self, done: int, total: int) -> None:
        self._p.update(self._task, completed=done, total=total)

    def close(self) -> None:
        self._p.stop()


@click.command("gc")
@click.option("--older-than", metavar="AGE", help="Delete finished runs that ended longer ago than this (e.g. 30d).")
@click.option(
    "--max-size", metavar="SIZE", help="Delete the oldest finished runs until the store holds at most this (e.g. 10G)."
)
@click.option("--dry-run", is_flag=True, help="Only show what would be deleted.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@format_option
def gc_cmd(older_than: str | None, max_size: str | None, dry_run: bool, yes: bool, fmt: str) -> None:
    """Retention: delete old runs by age and by size, then unreferenced artifact files and shipped journals."""
    from flightlog.store.retention import plan_gc, run_gc

    client = open_client()
    age = parse_duration(older_than, what="--older-than") if older_than else None
    size = parse_size(max_size, what="--max-size") if max_size else None
    plan = plan_gc(client, older_than=age, max_size=size, now=time.time())
    if not dry_run and plan.run_ids and not yes:
        if not sys.stdin.isatty():
            raise InvalidInput(f"gc would delete {len(plan.run_ids)} run(s): pass --yes (or --dry-run to look first)")
        click.confirm(f"Delete {len(plan.run_ids)} run(s) ({format_size(plan.run_bytes)})?", abort=True)
    report: dict[str, Any] = plan.to_dict() if dry_run else run_gc(client, plan)
    report["dry_run"] = dry_run
    if fmt == "json":
        emit_json(report)
        return
    verb = "would delete" if dry_run else "deleted"
    click.echo(
        f"{verb} {len(report['runs'])} run(s) ({format_size(report['run_bytes'])}), "
        f"{report['blobs']} artifact file(s) ({format_size(report['blob_bytes'])}), "
        f"{report['journals']} shipped journal(s)",
        err=True,
    )


@click.command("version")
@format_option
def version_cmd(fmt: str) -> None:
    """flightlog's version, Python's and the store schema's."""
    from flightlog._version import __version__
    from flightlog.store.sqlite.migrations import SCHEMA_VERSION

    doc = {"version": __version__, "python": platform.python_version(), "store_schema": SCHEMA_VERSION}
    if fmt == "json":
        emit_json(doc)
    else:
        click.echo(f"flightlog {__version__} (python {doc['python']}, store schema {SCHEMA_VERSION})")


@click.command("migrate-store")
@click.argument("source", metavar="SRC")
@click.argument("target", metavar="DST")
@format_option
def migrate_store_cmd(source: str, target: str, fmt: str) -> None:
    """Copy an embedded store (a FLIGHTLOG_HOME, its flightlog.db or sqlite:///PATH) into an empty
    PostgreSQL store (postgresql://USER:PASSWORD@HOST:5432/DB), every row, in one transaction.

    Artifact files stay under the home's artifacts/ directory (see docs/deploy.md)."""
    from flightlog.store.migrate import copy_sqlite_to_postgres
    from flightlog.store.postgres.connection import redact_uri

    def say(table: str, rows: int) -> None:
        if fmt != "json":
            click.echo(f"  {table}: {rows} row(s)", err=True)

    counts = copy_sqlite_to_postgres(source, target, progress=say)
    doc = {"source": source, "target": redact_uri(target), "rows": counts, "runs": counts.get("runs", 0)}
    if fmt == "json":
        emit_json(doc)
    else:
        click.echo(f"copied {doc['runs']} run(s), {sum(counts.values())} row(s) into {doc['target']}", err=True)
