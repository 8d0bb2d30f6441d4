"""``python -m flightlog.runner [OPTIONS] -- CMD ARGS...``: ``flightlog run`` without loading the
other commands of the CLI. A pipeline starts every step attempt this way, so each step pays
only for the runner's own imports."""

from __future__ import annotations

import sys

import click

from flightlog.errors import FlightlogError
from flightlog.runner.cli import run_cmd


def main() -> None:
    try:
        run_cmd.main(args=sys.argv[1:], prog_name="flightlog run", standalone_mode=False)
    except FlightlogError as exc:  # the same words and exit status as `flightlog run`
        click.echo(f"error: {exc.message}", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
