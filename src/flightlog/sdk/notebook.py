"""Runs started in a Jupyter notebook (an IPython kernel).

A notebook is not a script: cells are re-run, an exception ends a cell but not the process,
and the last expression of a cell is displayed. So, in a kernel:

- ``flightlog.init()`` run again (the same cell re-run, or another one) first finishes the
  run this kernel started before as ``stopped`` with ``end_reason`` ``rerun``, instead of
  leaving it "running" until the kernel dies;
- what a cell prints is recorded on the run, as ``init()``'s console capture records a
  script's output (``sdk/console.py``; ``console=False`` or ``FLIGHTLOG_CONSOLE=off`` to not);
- an exception raised in a cell is recorded on the active run, through IPython's
  ``post_run_cell`` event, as a script's uncaught exception is: one ``stderr`` event at level
  error with its traceback (``flightlog logs RUN --level error``), after the lines the cell
  printed. IPython shows the error in the cell and the kernel goes on, so the run does too:
  a later cell that runs without an error means the user carried on, and the run ends as
  they say (``run.finish()``) or ``succeeded`` when the kernel shuts down. But a kernel that
  shuts down with the error of its last cell still standing (a notebook executed top to
  bottom that stopped there: ``jupyter nbconvert --execute``, papermill, nbclient) ends the
  run ``failed`` with that exception and the last lines printed, as ``flightlog run`` would
  have stored the same code run as a script, so ``flightlog diagnose`` names the same cause;
- a ``Run`` as a cell's last expression shows a small HTML summary (``Run._repr_html_``).
"""

from __future__ import annotations

import atexit
import html
import threading
import traceback
from typing import TYPE_CHECKING, Any

from flightlog.failure import failure_from_exception
from flightlog.sdk.writer import warn

if TYPE_CHECKING:
    from flightlog.sdk.run import Run

__all__ = ["kernel_shell", "on_init", "run_html"]

_lock = threading.Lock()
_kernel_runs: list[Run] = []  # runs this kernel started with init(), oldest first
_hooked: set[int] = set()
_standing: list[tuple[Run, BaseException]] = []  # the last cell's error and its run, until a cell runs clean


def kernel_shell() -> Any:
    """The IPython shell when this process is a Jupyter kernel, else None (scripts, plain IPython)."""
    import sys

    if "IPython" not in sys.modules:
        return None
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None


def on_init(run: Run, parent_id: str | None) -> None:
    """Called by ``init()`` for every new run; does nothing outside a kernel."""
    shell = kernel_shell()
    if shell is None:
        return
    if run.owner:
        with _lock:
            previous = [r for r in _kernel_runs if not r._finished and r.id != run.id and r.id != parent_id]
            _kernel_runs[:] = [r for r in _kernel_runs if not r._finished and r not in previous]
            _kernel_runs.append(run)
        for old in previous:
            old.finish("stopped", end_reason="rerun")
    if id(shell) not in _hooked:
        _hooked.add(id(shell))
        shell.events.register("post_run_cell", _after_cell)
        # registered after init()'s own exit hook, so run before it (atexit is last in, first out)
        atexit.register(_at_kernel_exit)


def _after_cell(result: Any) -> None:
    """IPython calls this after every cell the user runs (not the front end's silent ones)."""
    error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
    with _lock:
        _standing.clear()  # a cell ran: whatever the one before raised, the user carried on
    if error is None:
        return
    from flightlog.sdk.api import active_run

    run = active_run()
    if run is None:
        return
    try:
        run._last_output()  # the lines the cell printed are stored before its traceback
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip()
        cell = getattr(getattr(result, "info", None), "raw_cell", None) or ""
        run._log_traceback(text, component="notebook", fields={"exception": type(error).__name__, "cell": cell[:2000]})
        with _lock:
            _standing.append((run, error))
    except Exception:  # the notebook goes on whatever happens here
        pass


def _at_kernel_exit() -> None:
    """The kernel shuts down: a run whose notebook stopped at a cell's error ends with it.

    Its traceback is already on the run (``_after_cell``), so the run is finished here rather
    than by ``Run.fail``, which would record it a second time. Anything else is left to
    ``init()``'s exit hook (``succeeded``)."""
    with _lock:
        standing = list(_standing)
        _standing.clear()
    for run, error in standing:
        try:
            if run._finished:
                continue  # the user finished it after all
            if isinstance(error, KeyboardInterrupt):  # the kernel was interrupted in that cell
                run.finish("stopped", end_reason="signal", signal=2)
                continue
            failure = failure_from_exception(error)
            failure.update(run._last_output())
            run.finish("failed", end_reason="exception", failure=failure)
        except Exception as exc:
            warn(f"could not finish run {run.id[:12]} at the kernel's exit: {exc}")


def run_html(run: Run) -> str:
    """A small summary table: id, project, name, status, duration, params and last metric values."""
    rows: list[tuple[str, str]] = [("run", run.id), ("project", run.project), ("name", run.name or "")]
    info = None
    try:
        if not run._finished:
            run._w.flush()  # show what the cell just logged, not the last background flush
        from flightlog.client import Client

        with Client(settings=run.settings) as client:
            info = client.run(run.id, exact=True)
    except Exception:
        info = None
    if info is not None:
        from flightlog.timefmt import format_duration

        rows.append(("status", info.status))
        rows.append(("duration", format_duration(info.duration)))
        if info.params:
            rows.append(("params", ", ".join(f"{k}={v}" for k, v in list(info.params.items())[:12])))
        if info.metrics:
            rows.append(
                (
                    "metrics",
                    ", ".join(
                        f"{k}={m.last:.4g}" if isinstance(m.last, float) else f"{k}={m.last}"
                        for k, m in list(info.metrics.items())[:12]
                    ),
                )
            )
    else:
        rows.append(("status", "finished" if run._finished else "running"))
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>{html.escape(str(v))}</td></tr>"
        for k, v in rows
    )
    return f"<table class='flightlog-run'><caption style='text-align:left'>flightlog run</caption>{body}</table>"
