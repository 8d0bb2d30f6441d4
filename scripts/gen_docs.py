"""Generate the reference pages that must never drift from the code.

    docs/cli-reference.md     every command and option, from the click definitions
    docs/configuration.md     the environment variables section, from flightlog.config.VARIABLES

`python scripts/gen_docs.py` rewrites them; `--check` (used by the tests) fails when they are stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
CLI_DOC = ROOT / "docs" / "cli-reference.md"
CONFIG_DOC = ROOT / "docs" / "configuration.md"
CONFIG_MARK = "<!-- generated: variables -->"


def _commands(group: click.Group, prefix: str) -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    ctx = click.Context(group)
    for name in sorted(group.list_commands(ctx)):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        full = f"{prefix} {name}"
        out.append((full, cmd))
        if isinstance(cmd, click.Group):
            out.extend(_commands(cmd, full))
    return out


def cli_reference() -> str:
    from flightlog.cli.main import cli

    lines = [
        "# CLI reference",
        "",
        "Generated from the code by `scripts/gen_docs.py`; do not edit by hand.",
        "Every listing and report takes `--format json` and then prints exactly one JSON document.",
        "",
    ]
    for full, cmd in _commands(cli, "flightlog"):
        ctx = click.Context(cmd, info_name=full)
        lines += [f"## `{full}`", "", "```", cmd.get_help(ctx).replace("\b\n", ""), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def configuration_section() -> str:
    from flightlog.config import VARIABLES

    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    rows += [f"| `{v.name}` | {f'`{v.default}`' if v.default else '—'} | {v.doc} |" for v in VARIABLES]
    return "\n".join(rows) + "\n"


def render_configuration(current: str) -> str:
    head, sep, _ = current.partition(CONFIG_MARK)
    if not sep:
        raise SystemExit(f"{CONFIG_DOC} lacks the marker {CONFIG_MARK}")
    return head + CONFIG_MARK + "\n\n" + configuration_section()


def main() -> int:
    import os

    os.environ["COLUMNS"] = "100"
    check = "--check" in sys.argv
    wanted = {CLI_DOC: cli_reference(), CONFIG_DOC: render_configuration(CONFIG_DOC.read_text())}
    stale = [p for p, text in wanted.items() if not p.exists() or p.read_text() != text]
    if check:
        for p in stale:
            print(f"{p.relative_to(ROOT)} is out of date: run `python scripts/gen_docs.py`", file=sys.stderr)
        return 1 if stale else 0
    for p in stale:
        p.write_text(wanted[p])
        print(f"wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
