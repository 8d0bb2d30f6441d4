"""The SDK's side of the feature table: a run's start and end, and the records a feature asked for.

Why here and not in `Run`: the SDK is below every feature (docs/architecture.md), so it names
what it needs and the table answers. The table is built the first time a run starts in this
process (never at ``import flightlog``, never on ``run.log``); a feature's hook that raises is
reported on stderr and as a warning event on the run, and never reaches the user's code.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flightlog.logevents import level_code
from flightlog.plugins import features

if TYPE_CHECKING:
    from flightlog.sdk.run import Run

__all__ = ["run_started", "run_ended"]


def run_started(run: Run) -> None:
    """Tell the features that ``run`` started (its owner only), and hand its writer the record
    kinds some feature asked for."""
    table = _table(run)
    if table is None:
        return
    table.call("flightlog_run_start", run_id=run.id, project=run.project, _on_error=_on_error(run))
    kinds = table.record_kinds
    if kinds:
        _watch_records(run, table, kinds)


def run_ended(run: Run, status: str) -> None:
    """Tell the features that ``run`` ended with ``status`` (its owner only)."""
    table = _table(run)
    if table is not None:
        table.call("flightlog_run_end", run_id=run.id, status=status, _on_error=_on_error(run))


def _table(run: Run) -> Any:
    try:
        return features()
    except Exception as exc:  # noqa: BLE001 - a broken plugin setup never stops a run
        _on_error(run)(f"the feature table could not be loaded: {type(exc).__name__}: {exc}")
        return None


def _watch_records(run: Run, table: Any, kinds: frozenset[str]) -> None:
    on_error = _on_error(run)

    def on_records(records: list[dict[str, Any]]) -> None:  # the writer's flush (background thread)
        for record in records:
            if record.get("k") in kinds:
                table.call("flightlog_record", run_id=run.id, record=record, _on_error=on_error)

    run._w.on_records = on_records


def _on_error(run: Run) -> Callable[[str], None]:
    """A feature's failure, as a warning event on the run (stderr has it already)."""

    def report(message: str) -> None:
        run._w.add_log(
            time=time.time(),
            stream="sdk",
            level=level_code("warning"),
            message=message,
            component="flightlog.features",
            fields=None,
            rank=run._w.rank,
            attempt=run.attempt,
            stage=None,
        )

    return report
