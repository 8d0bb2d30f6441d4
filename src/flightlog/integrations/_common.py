"""What every framework integration shares: finding (or starting) the run, turning a
framework's metric dict into numbers, cleaning params, timing the gaps between batches, and
never letting flightlog trouble reach the training loop."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from flightlog.schema.values import is_json_value
from flightlog.sdk import active_run, init
from flightlog.sdk.run import Run, flatten
from flightlog.sdk.writer import warn

__all__ = ["RunHolder", "numeric_metrics", "clean_params", "never_raise", "BatchTimer"]

F = TypeVar("F", bound=Callable[..., Any])


def never_raise(method: F) -> F:
    """A callback hook that reports its own trouble on stderr instead of stopping training."""

    @functools.wraps(method)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            warn(f"{method.__qualname__}: {type(exc).__name__}: {exc}")
            return None

    return guarded  # type: ignore[return-value]


class RunHolder:
    """The run an integration records into: the one it was given, else the process's active
    run (``flightlog.init`` earlier, or ``flightlog run`` around the script), else one it
    starts itself with ``init_kwargs``. Only a run it started is finished by it."""

    def __init__(self, run: Run | None = None, **init_kwargs: Any) -> None:
        self._run = run
        self._init_kwargs = {k: v for k, v in init_kwargs.items() if v is not None}
        self.owned = False

    @property
    def run(self) -> Run:
        """The run (started on first use when there is none to record into)."""
        if self._run is None:
            active = active_run()
            if active is not None:
                self._run = active
            else:
                self._run = init(**self._init_kwargs)
                self.owned = True
        return self._run

    def recording(self) -> Run:
        """The run for a hook about to record: a run this holder started and an earlier
        ``fit`` finished is continued as a new attempt (``trainer.test`` after ``fit``)."""
        run = self.run
        if self.owned and run._finished:
            kwargs = {k: v for k, v in self._init_kwargs.items() if k not in ("params", "tags", "name", "id")}
            self._run = run = init(id=run.id, resume=True, **kwargs)
        return run

    @property
    def started(self) -> bool:
        return self._run is not None

    def finish(self, status: str | None = None) -> None:
        if self.owned and self._run is not None and not self._run._finished:
            self._run.finish(status)

    def fail(self, exc: BaseException | None) -> None:
        """End a run this holder started because training raised ``exc``: failed with the
        traceback (as a stderr event) and the last output lines, as the process's exception
        hook would record it — a framework that ends its loggers before re-raising
        (Lightning) would otherwise leave a failed run without either. With no exception at
        hand, failed all the same."""
        if not self.owned or self._run is None or self._run._finished:
            return
        if exc is None:
            self._run.finish("failed")
        else:
            self._run.fail(exc)


def numeric_metrics(data: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """The numeric entries of a framework's metric dict (floats, ints, numpy scalars, one-element
    tensors); strings and other values frameworks mix in are left out rather than raising."""
    out: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            out[f"{prefix}{key}"] = float(value)
            continue
        item = getattr(value, "item", None)
        if item is None:
            continue
        try:
            number = item()
        except Exception:  # a tensor with several elements
            continue
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            out[f"{prefix}{key}"] = float(number)
    return out


def clean_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Flattened params with values JSON can hold; others (dtypes, callables, enums) as text,
    so a framework's config never turns into a warning per field."""
    out: dict[str, Any] = {}
    for key, value in flatten(params).items():
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)
        elif isinstance(value, tuple):
            value = list(value)
        if not is_json_value(value):
            value = str(value)
        out[key] = value
    return out


class BatchTimer:
    """Per-batch stages from begin/end hooks: ``step_stage`` from a batch's begin to its end,
    ``data_stage`` from one batch's end to the next one's begin (the loader's time), so
    ``flightlog diagnose`` can tell a data-loader bottleneck from slow compute."""

    def __init__(self, step_stage: str = "train_step", data_stage: str = "data_loading") -> None:
        self.step_stage = step_stage
        self.data_stage = data_stage
        self._begin: float | None = None
        self._end: float | None = None

    def reset(self) -> None:
        """At an epoch's start: the first batch's wait counts from here."""
        self._begin = None
        self._end = time.time()

    def pause(self) -> None:
        """Validation or checkpointing in between: the next gap is not the loader's."""
        self._end = None

    def begin(self, run: Run) -> None:
        now = time.time()
        if self._end is not None:
            run.record_stage(self.data_stage, self._end, now)
        self._begin = now
        self._end = None

    def end(self, run: Run) -> None:
        now = time.time()
        if self._begin is not None:
            run.record_stage(self.step_stage, self._begin, now)
        self._begin = None
        self._end = now
