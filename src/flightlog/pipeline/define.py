"""Pipelines written in Python: ``@flightlog.step`` functions and ``flightlog.Pipeline``.

    @flightlog.step(outputs=["data/clean.npz"])
    def prepare(rows: int = 1000): ...

    @flightlog.step(needs=[prepare], inputs=["data/clean.npz"], retries=2)
    def train(lr: float = 0.1): ...

    flightlog.Pipeline("churn", [prepare, train]).run(max_parallel=2)

A decorated function stays callable as before. In the pipeline it runs in its own process
(``python -m flightlog.pipeline.stepmain module:function`` under ``flightlog run``), so it
must be defined at the top level of a module or script; its parameters are the step's
``params``. Command steps join with :meth:`Pipeline.add`.
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.pipeline.spec import (
    DEFAULT_RETRY_ON,
    GateCheck,
    PipelineSpec,
    StepSpec,
    command_of,
    validate,
)
from flightlog.timefmt import parse_duration, parse_size

__all__ = ["step", "StepFunction", "Pipeline"]


class StepFunction:
    """A function marked as a pipeline step, with how it runs."""

    def __init__(self, func: Callable[..., Any], spec: StepSpec) -> None:
        self.func = func
        self.spec = spec
        self.__name__ = getattr(func, "__name__", spec.name)
        self.__doc__ = func.__doc__
        self.__wrapped__ = func

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<flightlog step {self.spec.name} ({self.spec.function})>"


def _reference(func: Callable[..., Any]) -> str:
    qualname = getattr(func, "__qualname__", "")
    if "<locals>" in qualname or "." in qualname:
        raise InvalidInput(
            f"step {func.__name__!r} must be a function at the top level of a module: "
            "it runs in its own process, which imports it by name"
        )
    module = getattr(func, "__module__", None)
    if module in (None, "__main__"):
        return f"{Path(inspect.getfile(func)).resolve()}:{func.__name__}"
    return f"{module}:{func.__name__}"


def source_hash(func: Callable[..., Any]) -> str | None:
    """sha256 of the function's source: an edit to the step invalidates its cache."""
    try:
        return hashlib.sha256(inspect.getsource(func).encode()).hexdigest()
    except (OSError, TypeError):
        return None


def _seconds(value: str | float | None, what: str) -> float | None:
    if value is None:
        return None
    return parse_duration(value, what=what) if isinstance(value, str) else float(value)


def _bytes(value: str | int | None, what: str) -> int | None:
    if value is None:
        return None
    return parse_size(value, what=what) if isinstance(value, str) else int(value)


def _needs(needs: Iterable[str | StepFunction]) -> list[str]:
    return [n.spec.name if isinstance(n, StepFunction) else str(n) for n in needs]


def _gates(gate: Sequence[GateCheck | dict[str, Any]] | None) -> list[GateCheck]:
    return [g if isinstance(g, GateCheck) else GateCheck(**g) for g in gate or []]


def step(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    needs: Iterable[str | StepFunction] = (),
    params: dict[str, Any] | None = None,
    inputs: Sequence[str] = (),
    outputs: Sequence[str] = (),
    retries: int = 0,
    retry_on: Sequence[str] = DEFAULT_RETRY_ON,
    retry_delay: str | float = 1.0,
    timeout: str | float | None = None,
    memory_limit: str | int | None = None,
    cache: bool = True,
) -> Any:
    """Mark a top-level function as a pipeline step (``@flightlog.step`` or ``@flightlog.step(...)``)."""

    def mark(f: Callable[..., Any]) -> StepFunction:
        spec = StepSpec(
            name=name or f.__name__,
            function=_reference(f),
            needs=_needs(needs),
            params=dict(params or {}),
            inputs=list(inputs),
            outputs=list(outputs),
            retries=retries,
            retry_on=tuple(retry_on),
            retry_delay=_seconds(retry_delay, "retry_delay") or 0.0,
            timeout=_seconds(timeout, "timeout"),
            memory_limit=_bytes(memory_limit, "memory_limit"),
            cache=cache,
            source_hash=source_hash(f),
        )
        return StepFunction(f, spec)

    return mark(func) if func is not None else mark


class Pipeline:
    """A named DAG of steps: ``@step`` functions, command steps and gates."""

    def __init__(
        self,
        name: str,
        steps: Iterable[StepFunction | StepSpec] = (),
        *,
        project: str | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.name = name
        self.project = project
        self.workdir = str(Path(workdir).resolve()) if workdir is not None else os.getcwd()
        self._steps: list[StepSpec] = []
        for s in steps:
            self._steps.append(s.spec if isinstance(s, StepFunction) else s)

    def add(
        self,
        name: str,
        command: str | Sequence[str] | None = None,
        *,
        gate: Sequence[GateCheck | dict[str, Any]] | None = None,
        needs: Iterable[str | StepFunction] = (),
        params: dict[str, Any] | None = None,
        inputs: Sequence[str] = (),
        outputs: Sequence[str] = (),
        retries: int = 0,
        retry_on: Sequence[str] = DEFAULT_RETRY_ON,
        retry_delay: str | float = 1.0,
        timeout: str | float | None = None,
        memory_limit: str | int | None = None,
        cache: bool = True,
    ) -> Pipeline:
        """Add a command step (or, with ``gate=``, a gate); returns the pipeline for chaining."""
        where = f"pipeline {self.name!r}, step {name!r}"
        self._steps.append(
            StepSpec(
                name=name,
                command=command_of(command, where) if command is not None else None,
                gate=_gates(gate),
                needs=_needs(needs),
                params=dict(params or {}),
                inputs=list(inputs),
                outputs=list(outputs),
                retries=retries,
                retry_on=tuple(retry_on),
                retry_delay=_seconds(retry_delay, "retry_delay") or 0.0,
                timeout=_seconds(timeout, "timeout"),
                memory_limit=_bytes(memory_limit, "memory_limit"),
                cache=cache,
            )
        )
        return self

    @property
    def spec(self) -> PipelineSpec:
        return validate(
            PipelineSpec(
                name=self.name, steps=list(self._steps), project=self.project, source=None, workdir=self.workdir
            )
        )

    def run(
        self, *, max_parallel: int = 4, executor: str = "local", use_cache: bool = True, quiet: bool = False
    ) -> Any:
        """Run the pipeline here (this process is the controller) and return its result."""
        from flightlog.pipeline.controller import run_pipeline

        return run_pipeline(self.spec, max_parallel=max_parallel, executor=executor, use_cache=use_cache, quiet=quiet)
