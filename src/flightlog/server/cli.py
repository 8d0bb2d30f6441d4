"""``flightlog server`` and ``flightlog token create | ls | revoke``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, cast

import click

from flightlog.cli.common import short_time
from flightlog.cli.output import console, emit_json, esc, format_option
from flightlog.plugins import features
from flightlog.timefmt import iso, parse_size

if TYPE_CHECKING:
    from flightlog.server.storeapi import ServerStore

__all__ = ["server_cmd", "token_group"]


def _home(ctx: click.Context, home: str | None) -> str | None:
    return home or ctx.find_root().params.get("home")


@click.command("server")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (other than loopback needs --auth or --insecure).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port (0: any free port).")
@click.option(
    "--home",
    metavar="DIR",
    help="The store to serve (default FLIGHTLOG_HOME, else the nearest .flightlog above the working directory; docs/configuration.md).",
)
@click.option("--auth", is_flag=True, help="Every request needs a token (see `flightlog token create`).")
@click.option("--insecure", is_flag=True, help="Allow a non-loopback address without --auth (a trusted network only).")
@click.option(
    "--max-body",
    default="32M",
    show_default=True,
    metavar="SIZE",
    help="Largest request body (ingest batches count compressed).",
)
@click.option(
    "--max-upload", default="64G", show_default=True, metavar="SIZE", help="Largest artifact upload (streamed to disk)."
)
@click.option(
    "--query-timeout",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="Longest one search (runs by filter, logs by grep) may run; 0: no limit. [default: FLIGHTLOG_QUERY_TIMEOUT, else 10]",
)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="Seconds to let requests finish on shutdown.",
)
@click.option(
    "--root-path",
    default="",
    metavar="PATH",
    help="The path prefix when a proxy serves this under a sub-path (e.g. /flightlog).",
)
@click.option(
    "--trusted-proxies",
    "--forwarded-allow-ips",
    "forwarded_allow_ips",
    default="127.0.0.1",
    show_default=True,
    metavar="IPS",
    help="Proxies (addresses or networks, comma-separated, or *) whose X-Forwarded-For/-Proto/-Host headers are believed.",
)
@click.option(
    "--allowed-hosts",
    metavar="NAMES",
    help="Host names the server answers for (comma-separated; *.domain, or * for any). "
    "[default: FLIGHTLOG_ALLOWED_HOSTS, else any with --auth, loopback names and --host without]",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
)
@click.option(
    "--alerts",
    metavar="FILE",
    help="Alert rules to evaluate for every run (default: ./flightlog.alerts.yaml, else HOME/alerts.yaml; docs/alerting.md).",
)
@click.option(
    "--export-run-metrics",
    is_flag=True,
    help="Also put the last value of each metric of every running run on /metrics (per-run gauges; docs/integrations.md).",
)
@click.pass_context
def server_cmd(
    ctx: click.Context,
    host: str,
    port: int,
    home: str | None,
    auth: bool,
    insecure: bool,
    max_body: str,
    max_upload: str,
    query_timeout: float | None,
    grace: float,
    root_path: str,
    forwarded_allow_ips: str,
    allowed_hosts: str | None,
    log_level: str,
    alerts: str | None,
    export_run_metrics: bool,
) -> None:
    """Serve runs to a team: the HTTP API (and the web UI) over this machine's store.

    \b
    Writers:  FLIGHTLOG_URL=http://HOST:8765 FLIGHTLOG_TOKEN=... python train.py
    Readers:  FLIGHTLOG_URL=http://HOST:8765 flightlog runs ls
    Docs:     docs/server.md (tokens, proxies, backups)
    """
    import logging

    from flightlog.server.app import create_app
    from flightlog.server.config import ServerConfig
    from flightlog.server.hosts import parse_list
    from flightlog.server.serve import Server, address, bind, check_host, uvicorn_config
    from flightlog.store.budget import query_timeout_from_env

    check_host(host, auth=auth, insecure=insecure)
    if alerts is not None:  # a file asked for by name must be valid before the server starts
        features().need(
            "flightlog_check_alert_rules", needed_by="--alerts", install="flightlog (its alerts feature)", path=alerts
        )
    config = ServerConfig.for_home(
        _home(ctx, home),
        auth=auth,
        alerts=alerts,
        export_run_metrics=export_run_metrics,
        max_body=parse_size(max_body, what="--max-body"),
        max_upload=parse_size(max_upload, what="--max-upload"),
        query_timeout=query_timeout_from_env() if query_timeout is None else (query_timeout or None),
        bind=host,
        allowed_hosts=None if allowed_hosts is None else parse_list(allowed_hosts, what="--allowed-hosts"),
        trusted_proxies=parse_list(forwarded_allow_ips, what="--trusted-proxies"),
    )
    app = create_app(config)
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if auth and not app.state.store.tokens():
            click.echo(
                f"flightlog: no tokens yet: make one with `flightlog token create --role admin --home {config.home}`",
                err=True,
            )
        sock = bind(host, port)
        click.echo(
            f"flightlog server listening on {address(sock)}{root_path} (store {config.store_uri}, auth {'on' if auth else 'off'})"
        )
        sys.stdout.flush()
        server = Server(uvicorn_config(app, grace=grace, log_level=log_level, root_path=root_path), app)
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:
            pass  # Ctrl-C is how a foreground server ends (uvicorn re-raises the signal once it has drained)
        finally:
            sock.close()
    finally:
        app.close()


@click.group("token")
def token_group() -> None:
    """API tokens of a server: made, listed and revoked on its store directly (run these on the server's host)."""


def _store(ctx: click.Context, home: str | None) -> ServerStore:
    from flightlog.server.config import ServerConfig
    from flightlog.store.registry import open_store

    store = cast("ServerStore", open_store(ServerConfig.for_home(_home(ctx, home)).store_uri))
    ctx.call_on_close(store.close)
    return store


_home_option = click.option(
    "--home",
    metavar="DIR",
    help="The server's store (default FLIGHTLOG_HOME, else the nearest .flightlog above the working directory; docs/configuration.md).",
)


@token_group.command("create")
@click.option(
    "--role",
    type=click.Choice(["reader", "writer", "admin"]),
    required=True,
    help="reader: read; writer: also write runs; admin: also manage tokens.",
)
@click.option("--project", metavar="NAME", help="Limit the token to one project.")
@click.option("--name", metavar="TEXT", help="A note on what the token is for (e.g. ci, alice's laptop).")
@_home_option
@format_option
@click.pass_context
def token_create(
    ctx: click.Context, role: str, project: str | None, name: str | None, home: str | None, fmt: str
) -> None:
    """Make a token; its secret is printed once (only a hash of it is kept)."""
    from flightlog.server.tokens import create_token

    new = create_token(_store(ctx, home), role, project, name)
    if fmt == "json":
        emit_json(new.to_dict())
        return
    click.echo(new.secret)
    scope = f"project {project}" if project else "every project"
    click.echo(f"token {new.id}: {role} of {scope}. This is the only time the secret is shown: keep it now.", err=True)


@token_group.command("ls")
@_home_option
@format_option
@click.pass_context
def token_ls(ctx: click.Context, home: str | None, fmt: str) -> None:
    """Tokens with their role, project and last use (never their secrets)."""
    rows = _store(ctx, home).tokens()
    if fmt == "json":
        emit_json(
            [
                {**r, "created": iso(r["created"]), "last_used": iso(r["last_used"]), "revoked": iso(r["revoked"])}
                for r in rows
            ]
        )
        return
    from rich.table import Table

    table = Table(box=None, header_style="bold")
    for head in ("ID", "ROLE", "PROJECT", "NAME", "CREATED", "LAST USED", "STATUS"):
        table.add_column(head, no_wrap=True)
    for r in rows:
        table.add_row(
            esc(r["id"]),
            esc(r["role"]),
            esc(r["project"] or "(all)"),
            esc(r["name"] or "-"),
            short_time(r["created"]),
            short_time(r["last_used"]),
            "[red]revoked[/]" if r["revoked"] else "active",
        )
    console().print(table)


@token_group.command("revoke")
@click.argument("token_id")
@_home_option
@format_option
@click.pass_context
def token_revoke(ctx: click.Context, token_id: str, home: str | None, fmt: str) -> None:
    """Revoke a token by its id (requests with it get 401 from then on)."""
    from flightlog.server.tokens import revoke_token

    revoke_token(_store(ctx, home), token_id)
    if fmt == "json":
        emit_json({"revoked": token_id})
    else:
        click.echo(f"token {token_id} revoked", err=True)
