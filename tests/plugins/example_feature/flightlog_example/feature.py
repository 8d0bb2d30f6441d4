"""The example feature's entry in flightlog's feature table: a command, a route, an analyzer."""

from __future__ import annotations

from typing import Any

import click

from flightlog.plugins import hookimpl


@click.command("example-hello")
@click.argument("who", default="world")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", help="Output format.")
def hello_cmd(who: str, fmt: str) -> None:
    """Say hello from the example feature."""
    if fmt == "json":
        click.echo(f'{{"hello": "{who}", "feature": "example"}}')
    else:
        click.echo(f"hello, {who} (from the example feature)")


@hookimpl
def flightlog_cli_commands() -> list[Any]:
    return [hello_cmd]


@hookimpl
def flightlog_api_operations() -> list[Any]:
    from flightlog.server.operations import Operation
    from flightlog.server.responses import json_response

    async def hello(ctx: Any) -> Any:
        return json_response({"hello": ctx.request.query_params.get("who", "world"), "feature": "example"})

    return [Operation("GET", "/example/hello", hello, "reader", "Say hello from the example feature", "example")]


def too_many_retries(ctx: Any) -> list[Any]:
    """A finding when the run carries the tag ``example: suspicious``."""
    from flightlog.diagnose.findings import Finding
    from flightlog.diagnose.signals import Signal

    if ctx.run.info.tags.get("example") != "suspicious":
        return []
    signal = Signal("example_suspicious", 0.9, "example_tag", "evidence", "the run is tagged example=suspicious")
    return [
        Finding(
            "example_suspicious",
            "the example feature finds this run suspicious",
            [signal],
            kind="software",
            next_steps=["remove the example tag"],
        )
    ]


@hookimpl
def flightlog_diagnosis_analyzers() -> list[Any]:
    return [too_many_retries]
