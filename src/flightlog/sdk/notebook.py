"""Runs started in a Jupyter notebook (an IPython kernel).

A notebook is not a script: cells are re-run, an exception ends a cell but not the process,
and the last expression of a cell is displayed. So, in a kernel:

- ``flightlog.init()`` run again (the same cell re-run, or another one) first finishes the
  run this kernel started before as ``stopped`` with ``end_reason`` ``rerun``, instead of
  leaving it "running" until the kernel dies;
- an exception raised in a cell is recorded on the active run as an error log event with its
  traceback (``flightlog logs RUN --level error``), through IPython's ``post_run_cell`` event;
  the run goes on, as the kernel does;
- a ``Run`` as a cell's last expression shows a small HTML summary (``Run._repr_html_``).
"""

from __future__ import annotations

import html
import threading
import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flightlog.sdk.run import Run

__all__ = ["kernel_shell", "on_init", "run_html"]

_lock = threading.Lock()
_kernel_runs: list[Run] = []  # runs this kernel started with init(), oldest first
_hooked: set[int] = set()


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


def _after_cell(result: Any) -> None:
    error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
    if error is None:
        return
    from flightlog.sdk.api import active_run

    run = active_run()
    if run is None:
        return
    try:
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip()
        cell = getattr(getattr(result, "info", None), "raw_cell", None) or ""
        run.log_event(text, level="error", component="notebook",
                      fields={"exception": type(error).__name__, "cell": cell[:2000]})
    except Exception:  # the notebook goes on whatever happens here
        pass


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
            rows.append(("metrics", ", ".join(f"{k}={m.last:.4g}" if isinstance(m.last, float) else f"{k}={m.last}"
                                              for k, m in list(info.metrics.items())[:12])))
    else:
        rows.append(("status", "finished" if run._finished else "running"))
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>{html.escape(str(v))}</td></tr>"
                   for k, v in rows)
    return f"<table class='flightlog-run'><caption style='text-align:left'>flightlog run</caption>{body}</table>"
