"""`flightlog models …`, `flightlog deploy` and `flightlog deployments …`: the registry at the
command line; every listing and report takes ``--format json`` (docs/cli.md, docs/models.md)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import click

from flightlog.cli.common import open_client, short_time
from flightlog.cli.output import console, emit_json, esc, format_option
from flightlog.errors import InvalidInput
from flightlog.registry import Registry
from flightlog.registry.loading import download
from flightlog.registry.refs import parse_ref
from flightlog.timefmt import parse_time

__all__ = ["deploy_cmd", "deployments_group", "models_group"]

_PROJECT = click.option("--project", "-p", help="The project (default: where the model is registered).")


def _registry() -> Any:
    return Registry(open_client())


def _tags(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--tag {pair!r}: give it as KEY=VALUE")
        out[key] = value
    return out


@click.group("models")
def models_group() -> None:
    """The model registry: models, versions from runs' artifacts, aliases (docs/models.md)."""


@models_group.command("ls")
@_PROJECT
@format_option
def models_ls(project: str | None, fmt: str) -> None:
    """List registered models with their latest version and aliases."""
    models = _registry().models(project)
    if fmt == "json":
        emit_json([m.to_dict() for m in models])
        return
    if not models:
        console().print("no registered models yet (flightlog models register RUN PATH NAME)")
        return
    from rich.table import Table

    table = Table(box=None)
    for col in ("project", "model", "latest", "aliases", "description"):
        table.add_column(col)
    for m in models:
        aliases = ", ".join(f"@{a}→{v}" for a, v in sorted(m.aliases.items()))
        table.add_row(esc(m.project), esc(m.name), str(m.latest_version), esc(aliases), esc(m.description or ""))
    console().print(table)


@models_group.command("show")
@click.argument("ref")
@_PROJECT
@format_option
def models_show(ref: str, project: str | None, fmt: str) -> None:
    """A model and its versions (REF: NAME), or one version with its lineage (NAME@ALIAS, NAME/3)."""
    reg = _registry()
    r = parse_ref(ref)
    if r.alias is None and r.version is None:
        model = reg.model(r.name, project)
        versions = reg.versions(r.name, model.project)
        if fmt == "json":
            emit_json({**model.to_dict(), "versions": [v.to_dict() for v in versions]})
            return
        console().print(f"[bold]{esc(model.name)}[/] in project {esc(model.project)}  {esc(model.description or '')}")
        from rich.table import Table

        table = Table(
            "version", "aliases", "created", "run", "artifact", "sha256", "description", box=None, padding=(0, 1, 0, 2)
        )
        for v in versions:
            table.add_row(
                f"v{v.version}",
                esc(" ".join(f"@{a}" for a in v.aliases)),
                short_time(v.created),
                v.run_id[:12],
                esc(v.artifact_path),
                (v.digest or "-")[:12],
                esc(v.description or ""),
            )
        console().print(table)
        return
    lineage = reg.lineage(ref, project)
    if fmt == "json":
        emit_json(lineage)
        return
    v = lineage["version"]
    console().print(
        f"[bold]{esc(v['ref'])}[/]  run {v['run_id'][:12]}  {esc(v['artifact_path'])}  sha256 {v['digest']}"
    )
    for item in lineage["inputs"]:
        a = item["artifact"]
        console().print(
            f"  input {esc(a['path'])}  {(a.get('sha256') or '-')[:12]}  produced by "
            f"{', '.join(r[:12] for r in item['produced_by']) or '-'}"
        )


@models_group.command("register")
@click.argument("run")
@click.argument("path")
@click.argument("name")
@click.option("--alias", help="Point this alias at the new version too (e.g. champion).")
@click.option("--description", help="The version's description.")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="A version tag (repeatable).")
@format_option
def models_register(
    run: str, path: str, name: str, alias: str | None, description: str | None, tags: tuple[str, ...], fmt: str
) -> None:
    """Register the artifact (or checkpoint) PATH that RUN logged as the next version of NAME."""
    mv = _registry().register(run, path, name, alias=alias, description=description, tags=_tags(tags))
    if fmt == "json":
        emit_json(mv.to_dict())
        return
    console().print(f"registered {esc(mv.ref)} from run {mv.run_id[:12]} ({esc(mv.artifact_path)})")


@models_group.command("alias")
@click.argument("ref")
@click.argument("version", required=False)
@click.option(
    "--history", is_flag=True, help="Show where the alias (or every alias of the model) pointed, and who moved it."
)
@click.option("--remove", is_flag=True, help="Remove the alias.")
@_PROJECT
@format_option
def models_alias(ref: str, version: str | None, history: bool, remove: bool, project: str | None, fmt: str) -> None:
    """Point NAME@ALIAS at VERSION (a number or another alias of the same model), e.g.
    `flightlog models alias fraud@production 4`; --history shows its moves."""
    r = parse_ref(ref)
    if r.version is not None:
        raise InvalidInput(f"{ref!r} names a version; give NAME@ALIAS (e.g. {r.name}@production)")
    reg = _registry()
    if history:
        changes = reg.alias_history(r.name, r.alias, project)
        if fmt == "json":
            emit_json([c.to_dict() for c in changes])
            return
        for c in changes:
            console().print(
                f"{short_time(c.time)}  @{esc(c.alias)}  {c.from_version or '-'} → {c.to_version or '-'}  "
                f"by {esc(c.actor or '?')}"
            )
        return
    if r.alias is None:
        raise InvalidInput(f"give the alias as NAME@ALIAS (e.g. {r.name}@production)")
    if remove == (version is not None):
        raise InvalidInput("give a VERSION to point the alias at, or --remove (not both)")
    change = reg.set_alias(r.name, r.alias, version, project)
    if fmt == "json":
        emit_json({"changed": change is not None, "change": None if change is None else change.to_dict()})
        return
    if change is None:
        console().print(f"{esc(ref)} already points at version {version}")
    else:
        console().print(f"{r.name}@{r.alias}: {change.from_version or '-'} → {change.to_version or 'removed'}")


@models_group.command("edit")
@click.argument("ref")
@click.option("--description", help="The model's description (or the version's, for NAME/3).")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Set a tag (repeatable).")
@click.option("--remove-tag", "remove_tags", multiple=True, metavar="KEY", help="Remove a tag (repeatable).")
@click.option(
    "--protect",
    "protect",
    multiple=True,
    metavar="ALIAS",
    help="Aliases that only an admin token may move (replaces the list; needs admin on a server).",
)
@_PROJECT
@format_option
def models_edit(
    ref: str,
    description: str | None,
    tags: tuple[str, ...],
    remove_tags: tuple[str, ...],
    protect: tuple[str, ...],
    project: str | None,
    fmt: str,
) -> None:
    """Set a model's (or a version's) description and tags, and the model's protected aliases."""
    r, reg = parse_ref(ref), _registry()
    if r.version is not None or r.alias is not None:
        if protect:
            raise InvalidInput("--protect is a model's setting: give the model's NAME")
        out = reg.update_version(
            ref, project=project, description=description, tags=_tags(tags), remove_tags=list(remove_tags)
        ).to_dict()
    else:
        out = reg.update_model(
            r.name,
            project=project,
            description=description,
            tags=_tags(tags),
            remove_tags=list(remove_tags),
            protected=list(protect) or None,
        ).to_dict()
    if fmt == "json":
        emit_json(out)
    else:
        console().print(f"updated {esc(ref)}")


@models_group.command("rm")
@click.argument("ref")
@click.option("--yes", "-y", is_flag=True, help="Do not ask before deleting a whole model (needed without a terminal).")
@_PROJECT
@format_option
def models_rm(ref: str, yes: bool, project: str | None, fmt: str) -> None:
    """Delete a version (NAME/3) and the aliases on it, or a whole model (NAME) with its versions.

    Refused while a deployment should serve it (deploy another version there first); a
    protected alias on it needs an admin token, as moving it does. The alias and deployment
    histories stay; a deleted version's number is never given again."""
    r, reg = parse_ref(ref), _registry()
    if r.alias is not None:
        raise InvalidInput(f"{ref!r} names an alias: remove it with `flightlog models alias {ref} --remove`")
    if r.version is not None:
        removed = reg.delete_version(r.name, r.version, project)
        if fmt == "json":
            emit_json(
                {"deleted": {"name": r.name, "version": r.version}, "aliases_removed": [c.to_dict() for c in removed]}
            )
            return
        gone = "".join(f", @{c.alias} removed" for c in removed)
        console().print(f"deleted {esc(r.name)} version {r.version}{esc(gone)}")
        return
    if not yes:
        count = len(reg.versions(r.name, project))
        if not sys.stdin.isatty():
            raise InvalidInput(f"deleting model {r.name!r} and its {count} version(s) asks first: pass --yes")
        click.confirm(f"delete model {r.name!r} and its {count} version(s)?", abort=True, err=True)
    numbers = reg.delete_model(r.name, project)
    if fmt == "json":
        emit_json({"deleted": r.name, "versions": numbers})
        return
    console().print(f"deleted model {esc(r.name)} ({len(numbers)} version(s))")


@models_group.command("rename")
@click.argument("name")
@click.argument("new_name")
@_PROJECT
@format_option
def models_rename(name: str, new_name: str, project: str | None, fmt: str) -> None:
    """Rename a model: its versions, aliases, deployments and their histories follow the name."""
    model = _registry().rename_model(name, new_name, project)
    if fmt == "json":
        emit_json(model.to_dict())
        return
    console().print(f"renamed {esc(name)} → {esc(model.name)}")


@models_group.command("get")
@click.argument("ref")
@click.option(
    "--output", "-o", "dest", required=True, type=click.Path(file_okay=False), help="Directory to download into."
)
@_PROJECT
@format_option
def models_get(ref: str, dest: str, project: str | None, fmt: str) -> None:
    """Download the version REF names (models:/fraud@production) into DIR, checked by its digest
    (a file, or a directory: every file and the whole; the copy comes from the model cache)."""
    client = open_client()
    mv = Registry(client).resolve(ref, project)
    got = download(mv, client=client)  # checked: a mismatch is an error and nothing reaches DIR
    target = Path(dest) / got.name
    target.parent.mkdir(parents=True, exist_ok=True)
    if got.is_dir():
        shutil.copytree(got, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".flightlog-*"))
    else:
        shutil.copyfile(got, target)
    out = {**mv.to_dict(), "path": str(target), "verified": mv.digest is not None}
    if fmt == "json":
        emit_json(out)
    else:
        console().print(f"{esc(mv.ref)} → {esc(str(target))} (sha256 {'checked' if out['verified'] else 'unknown'})")


@click.command("deploy")
@click.argument("ref")
@click.option("--endpoint", required=True, help="The endpoint (e.g. fraud-api).")
@click.option("--env", "env", required=True, help="The environment (e.g. prod).")
@_PROJECT
@format_option
def deploy_cmd(ref: str, endpoint: str, env: str, project: str | None, fmt: str) -> None:
    """Set the version ENDPOINT in ENV should serve: REF's version now (fraud@production)."""
    deployment, change = _registry().deploy(ref, endpoint, env, project)
    if fmt == "json":
        emit_json({**deployment.to_dict(), "changed": change is not None})
        return
    if change is None:
        console().print(f"{esc(endpoint)} ({esc(env)}) already serves {deployment.name} v{deployment.version}")
    else:
        what = "first deploy" if change.from_version is None else f"was v{change.from_version}"
        console().print(f"{esc(endpoint)} ({esc(env)}): {esc(deployment.name)} v{deployment.version} ({what})")


@click.group("deployments")
def deployments_group() -> None:
    """Deployments: which version each endpoint should serve, and what its replicas report."""


@deployments_group.command("ls")
@_PROJECT
@format_option
def deployments_ls(project: str | None, fmt: str) -> None:
    """List deployments (desired state)."""
    found = _registry().deployments(project)
    if fmt == "json":
        emit_json([d.to_dict() for d in found])
        return
    if not found:
        console().print("no deployments yet (flightlog deploy MODEL@ALIAS --endpoint E --env V)")
    for d in found:
        console().print(
            f"{esc(d.endpoint)}  {esc(d.env)}  {esc(d.name)} v{d.version}  ({esc(d.ref)})  "
            f"{short_time(d.updated)} by {esc(d.updated_by or '?')}"
        )


@deployments_group.command("show")
@click.argument("endpoint")
@click.option("--env", "env", required=True, help="The environment.")
@_PROJECT
@format_option
def deployments_show(endpoint: str, env: str, project: str | None, fmt: str) -> None:
    """A deployment: desired version, its history, and the replicas serving (gone: stopped heartbeating)."""
    report = _registry().deployment_report(endpoint, env, project)
    if fmt == "json":
        emit_json(report)
        return
    d = report["desired"]
    console().print(f"[bold]{esc(endpoint)}[/] ({esc(env)}): {esc(d['model'])} v{d['version']} ({esc(d['ref'])})")
    for h in report["history"]:
        console().print(
            f"  {_when(h['time'])}  {_move(h['from_version'], h['to_version'])}  by {esc(h['actor'] or '?')}"
        )
    if not report["replicas"]:
        console().print("  no replicas have reported yet (a model server reports with flightlog.serving.attach)")
        return
    from rich.table import Table

    serving = sum(1 for r in report["replicas"] if r["state"] == "serving")
    console().print(
        f"  {serving} serving, {len(report['replicas']) - serving} gone (flightlog serving replicas {esc(endpoint)} --env {esc(env)})"
    )
    table = Table(
        "replica", "version", "state", "status", "started", "heartbeat", "run", box=None, padding=(0, 1, 0, 2)
    )
    for r in report["replicas"]:
        version = f"v{r['version']}" + ("" if r["current"] else " (not desired)")
        table.add_row(
            esc(str(r["replica"])),
            version,
            esc(str(r["state"])),
            esc(str(r["status"])),
            _when(r["started"]),
            _when(r.get("heartbeat")),
            r["run_id"][:12],
        )
    console().print(table)


def _move(before: Any, after: Any) -> str:
    """``v1 → v2``, or ``first: v1`` when there was nothing before."""
    return f"v{before} → v{after}" if before is not None else f"first: v{after}"


def _when(text: str | None) -> str:
    """An ISO time from a report as a table shows times (local, to the second)."""
    return short_time(parse_time(text)) if text else "-"
