"""The web UI: its page and assets at ``/``, and ``flightlog ui``.

The UI is a static single-page app (``frontend/``, built by ``scripts/setup-ui.sh`` into
``static/ui``) that reads everything through the public API under ``/api/v1``. Any GET that is
not an API route answers with its page, so a deep link (``/projects/vision/runs/ID/logs?level=error``)
opens the right view; ``/api/...`` never falls through to it. The page carries a ``<base href>``
set to the server's root path, so the UI also works behind a proxy's sub-path (``--root-path``).

The page is served with a strict Content-Security-Policy (scripts from this origin only, and the
page's own inline script named by its SHA-256: the first API requests, started while the page is
parsed, ``frontend/vite.config.ts``), on top of the UI rendering every workload value as text;
artifacts are downloads in a sandbox (``blobs.py``), so nothing a run logged can run script here.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import sys
from functools import lru_cache
from pathlib import Path

import click
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

__all__ = ["STATIC", "routes", "ui_cmd"]

STATIC = Path(__file__).resolve().with_name("static") / "ui"
_ASSET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
_BASE = '<base href="/" />'
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'"
)
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)
_PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}
_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".woff2": "font/woff2",
    ".map": "application/json",
}
_NOT_BUILT = """<!doctype html><html lang="en"><meta charset="utf-8"><title>flightlog</title>
<body style="font-family: system-ui, sans-serif; max-width: 40em; margin: 3em auto; line-height: 1.5">
<h1>The web UI is not built</h1>
<p>This flightlog was installed without its web UI. In a source checkout, build it with
<code>make install</code> (or <code>scripts/setup-ui.sh</code>; it needs Node.js and npm), then reload.</p>
<p>The HTTP API works as it is: <a href="api/v1/openapi.json">api/v1/openapi.json</a>.</p>
</body></html>
"""


def _root(request: Request) -> str:
    return str(request.scope.get("root_path") or "").rstrip("/")


def policy_for(text: str) -> str:
    """The page's Content-Security-Policy: CSP, with each inline script of ``text`` allowed by
    its SHA-256 and nothing else inline (a changed or injected script does not run)."""
    hashes = [
        "'sha256-" + base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii") + "'"
        for body in _INLINE_SCRIPT.findall(text)
    ]
    return CSP.replace("script-src 'self'", " ".join(["script-src 'self'", *hashes]), 1)


@lru_cache(maxsize=4)
def _index(mtime_ns: int, size: int) -> tuple[str, dict[str, str]]:
    """index.html and its headers, read once per build (the key: the file's mtime and size)."""
    text = (STATIC / "index.html").read_text(encoding="utf-8")
    return text, {**_PAGE_HEADERS, "Content-Security-Policy": policy_for(text)}


async def page(request: Request) -> Response:
    path = request.path_params.get("path", "")
    if path == "api" or path.startswith(("api/", "assets/")):
        raise HTTPException(404)  # the API's own 404, in the one JSON error shape
    try:
        stat = (STATIC / "index.html").stat()
        text, headers = _index(stat.st_mtime_ns, stat.st_size)
    except FileNotFoundError:
        return HTMLResponse(_NOT_BUILT, status_code=503, headers=_PAGE_HEADERS)
    base = html.escape(_root(request) + "/", quote=True)
    return HTMLResponse(text.replace(_BASE, f'<base href="{base}" />', 1), headers=headers)


async def asset(request: Request) -> Response:
    name = request.path_params.get("name", "")
    target = STATIC / "assets" / name
    if not _ASSET.match(name) or not target.is_file():
        raise HTTPException(404)
    return FileResponse(
        target,
        media_type=_TYPES.get(target.suffix),
        headers={
            "Cache-Control": "public, max-age=31536000, immutable",  # names carry a content hash
            "X-Content-Type-Options": "nosniff",
        },
    )


def routes() -> list[Route]:
    """The UI's routes; they go after the API's, so every API path keeps its own answers."""
    return [
        Route("/assets/{name}", asset, methods=["GET"], name="ui_asset"),
        Route("/{path:path}", page, methods=["GET"], name="ui_page"),
    ]


@click.command("ui")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port on 127.0.0.1 (a busy default port falls back to a free one; 0: any free port).",
)
@click.option(
    "--home",
    metavar="DIR",
    help="The store to show (default FLIGHTLOG_HOME, else the nearest .flightlog above the working directory; docs/configuration.md).",
)
@click.option("--project", metavar="NAME", help="Also print the address of this project's runs.")
@click.pass_context
def ui_cmd(ctx: click.Context, port: int, home: str | None, project: str | None) -> None:
    """Serve the web UI over this machine's store and print its address (Ctrl-C stops it).

    \b
    Local and without tokens: it listens on 127.0.0.1 only. It never opens a browser;
    open the printed address. For a team, run `flightlog server --auth` instead.
    """
    from urllib.parse import quote

    from flightlog.errors import InvalidInput
    from flightlog.server.app import create_app
    from flightlog.server.config import ServerConfig
    from flightlog.server.serve import Server, address, bind, uvicorn_config

    config = ServerConfig.for_home(home or ctx.find_root().params.get("home"))
    try:
        sock = bind("127.0.0.1", port)
    except InvalidInput:
        if port != 8765:
            raise
        sock = bind("127.0.0.1", 0)
    app = create_app(config)
    try:
        url = address(sock) + "/"
        click.echo(f"flightlog UI: {url}  (store {config.home}; Ctrl-C stops it)")
        if project:
            click.echo(f"  project {project}: {url}projects/{quote(project, safe='')}")
        if not STATIC.joinpath("index.html").exists():
            click.echo("flightlog: the web UI is not built: run `make install` or scripts/setup-ui.sh", err=True)
        sys.stdout.flush()
        server = Server(uvicorn_config(app, grace=3), app)
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:
            pass  # Ctrl-C is how this command ends (uvicorn re-raises the signal once it has stopped)
        finally:
            sock.close()
    finally:
        app.close()
