"""How the CLI speaks: one JSON document for ``--format json``, rich tables for people.

JSON has stable snake_case fields, ids as strings and ISO-8601 UTC times; NaN and infinities
(not valid JSON) are written as the strings "NaN", "Infinity", "-Infinity".

Human output is rich markup, so every piece of text that came from a run or a user (names,
params, tags, notes, paths, messages, rule names, labels) goes through :func:`esc` on its way
into a markup string or a table cell: ``[/x]`` would otherwise raise ``MarkupError`` and
``[bold]`` would vanish. Piped output is at most 200 columns wide, with no trailing padding;
a value too long for its line is cut in the middle with "…" (:func:`clip`); ``--format json``
has every value whole.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from typing import IO, Any, TypeVar, cast

import click

__all__ = [
    "format_option",
    "emit_json",
    "console",
    "err_console",
    "sparkline",
    "json_safe",
    "esc",
    "styled",
    "clip",
    "printable",
]

F = TypeVar("F", bound=Callable[..., Any])


def format_option(func: F) -> F:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="json: one JSON document on stdout (a listing is an array), for scripts.",
    )(func)


def json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def emit_json(obj: Any, *, lines: bool = False) -> None:
    text = json.dumps(json_safe(obj), ensure_ascii=False, default=str, allow_nan=False)
    sys.stdout.write(text + "\n")
    if lines:
        sys.stdout.flush()


# C0 controls but tab and newline, DEL, C1 controls (ESC starts a terminal's escape sequences)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return "\\r" if char == "\r" else f"\\x{ord(char):02x}"


def printable(text: str) -> str:
    """``text`` safe to write to a terminal: control characters become visible escapes
    (``\\x1b``, ``\\r``), so a stored line can neither move the cursor, recolour, retitle
    nor clear the screen. Tabs and newlines stay (a traceback keeps its lines)."""
    return _CONTROL.sub(_escaped, text)


def esc(value: Any) -> str:
    """``value`` as text that rich prints as itself, for a markup string or a table cell:
    markup escaped, control characters made visible (:func:`printable`)."""
    from rich.markup import escape

    return escape(printable(str(value)))


def styled(text: Any, style: str | None) -> str:
    """``text`` escaped and wrapped in ``style`` (no style: just escaped), as rich markup."""
    return f"[{style}]{esc(text)}[/]" if style else esc(text)


def clip(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut in the middle with "…" (a path keeps its
    file name, a command its last arguments). Clip first, then :func:`esc`."""
    if width < 1 or len(text) <= width:
        return text
    head = (width - 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


PIPED_WIDTH = 200


def console() -> Any:
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(highlight=False, soft_wrap=False)
    # piped output is not cut to 80 columns, so a script or a pager gets whole rows, and it
    # carries no padding to the right of a table's last column
    return Console(highlight=False, soft_wrap=False, width=PIPED_WIDTH, file=cast(IO[str], _Unpadded(sys.stdout)))


class _Unpadded:
    """A text stream that drops the spaces rich pads before each line end (not a terminal)."""

    _PADDING = re.compile(r" +(?=\n)")

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        self._stream.write(self._PADDING.sub("", text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return False


def err_console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], width: int = 24) -> str:
    finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if not finite:
        return ""
    n = len(values)
    if n > width:  # bucket means, so a long history still fits
        step = n / width
        buckets = []
        for i in range(width):
            chunk = [v for v in values[int(i * step) : int((i + 1) * step)] if math.isfinite(v)]
            buckets.append(sum(chunk) / len(chunk) if chunk else math.nan)
        values = buckets
    lo, hi = min(finite), max(finite)
    span = (hi - lo) or 1.0
    return "".join(
        "·" if not math.isfinite(v) else _BARS[min(len(_BARS) - 1, int((v - lo) / span * (len(_BARS) - 1) + 0.5))]
        for v in values
    )
