"""Real tracebacks for the diagnosis's reading tests: the text Python itself prints for an
exception raised here, never one written by hand."""

from __future__ import annotations

import traceback
from collections.abc import Callable


def traceback_of(func: Callable[[], object]) -> str:
    """The traceback ``func()`` prints (it must raise)."""
    try:
        func()
    except BaseException:  # noqa: BLE001 - the real text of anything
        return traceback.format_exc()
    raise AssertionError("expected an exception")


def disk_full_under_a_wrapper() -> None:
    """A full disk (``OSError`` 28) under a generic wrapper raised from it, as a checkpoint
    writer reports it: the chain's root is the cause, the last line the wrapper."""
    try:
        raise OSError(28, "No space left on device")
    except OSError as exc:
        raise RuntimeError("checkpoint could not be written") from exc
