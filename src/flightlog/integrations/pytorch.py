"""Plain PyTorch (or any loop over an iterable of batches): time the loader against the step.

    from flightlog.integrations.pytorch import timed_batches
    for batch in timed_batches(loader, run):
        loss = step(batch)              # timed as "train_step"
        run.log({"loss": loss.item()})

Each batch's ``next()`` is recorded as a ``data_loading`` span and the loop body that follows
as a ``train_step`` span, so ``flightlog diagnose`` can say whether compute waits on input
(``data_loader_bottleneck``). Nothing here imports torch: a ``DataLoader`` is just an iterable.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

from flightlog.integrations._common import RunHolder
from flightlog.sdk.run import Run

__all__ = ["timed_batches"]

T = TypeVar("T")


def timed_batches(
    loader: Iterable[T],
    run: Run | None = None,
    *,
    data_stage: str = "data_loading",
    step_stage: str = "train_step",
) -> Iterator[T]:
    """Yield the loader's batches, recording how long each took to arrive and to be used.

    ``run`` defaults to the active run (``flightlog.init`` or ``flightlog run``); with none, a
    run is started. The time after the last batch (the loader's end) is not a step.
    """
    target = RunHolder(run).run
    iterator = iter(loader)
    while True:
        asked = time.time()
        try:
            batch = next(iterator)
        except StopIteration:
            return
        got = time.time()
        target.record_stage(data_stage, asked, got)
        try:
            yield batch
        finally:
            target.record_stage(step_stage, got, time.time())
