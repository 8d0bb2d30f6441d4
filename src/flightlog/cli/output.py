"""How the CLI speaks: one JSON document for ``--format json``, rich tables for people.

JSON has stable snake_case fields, ids as strings and ISO-8601 UTC times; NaN and infinities
(not valid JSON) are written as the strings "NaN", "Infinity", "-Infinity".
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

__all__ = ["format_option", "emit_json", "console", "err_console", "sparkline", "json_safe"]

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


def console() -> Any:
    from rich.console import Console

    # piped output is not cut to 80 columns: a script or a pager gets whole rows
    width = None if sys.stdout.isatty() else 200
    return Console(highlight=False, soft_wrap=False, width=width)


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
