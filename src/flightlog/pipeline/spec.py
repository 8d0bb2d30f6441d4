"""What a pipeline is: named steps, their dependencies, and how each one runs.

A step is one of three things: a command (``["python", "prep.py"]``), a Python function
(``module:function`` or ``path/to/file.py:function``, run by :mod:`flightlog.pipeline.stepmain`)
or a gate (checks that stop downstream steps: data validation suites and metric thresholds,
run by :mod:`flightlog.pipeline.gatemain`). Every step runs as a child run under
``flightlog run``, so the same :class:`StepSpec` fields map onto that command's options.

The spec is plain data (``to_dict`` / ``from_dict``): it is stored on the pipeline run, so
``flightlog pipeline resume`` rebuilds exactly what ran without the original file.
Everything is checked by :func:`validate` before anything runs, and every error names the
step and the field.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.pipeline.dag import topological_order
from flightlog.runner.options import DEFAULT_RETRY_ON, RETRYABLE

__all__ = ["StepSpec", "GateCheck", "PipelineSpec", "validate", "DEFAULT_RETRY_ON", "STEP_NAME_RE"]

STEP_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_BOUNDS = ("min", "max")


@dataclass
class GateCheck:
    """One check of a gate: a data validation suite on a file, or a metric threshold.

    ``expect`` + ``data``: ``flightlog data validate DATA --expect EXPECT`` must pass.
    ``metric`` + ``step`` + ``min``/``max``: the last value of METRIC on that (upstream) step's
    run must lie within the bounds.
    """

    expect: str | None = None
    data: str | None = None
    metric: str | None = None
    step: str | None = None
    min: float | None = None
    max: float | None = None

    @property
    def label(self) -> str:
        if self.expect is not None:
            return f"validation {Path(self.expect).name} on {self.data}"
        bounds = " and ".join(f"{k} {getattr(self, k):g}" for k in _BOUNDS if getattr(self, k) is not None)
        return f"metric {self.metric} of step {self.step} ({bounds})"

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class StepSpec:
    name: str
    command: list[str] | None = None
    function: str | None = None  # "module:function" or "path/file.py:function"
    gate: list[GateCheck] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    retries: int = 0
    retry_on: tuple[str, ...] = DEFAULT_RETRY_ON
    retry_delay: float = 1.0
    timeout: float | None = None
    memory_limit: int | None = None
    cache: bool = True
    source_hash: str | None = None  # of a function's source, filled where the function is known

    @property
    def kind(self) -> str:
        return "gate" if self.gate else "function" if self.function else "command"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gate"] = [g.to_dict() for g in self.gate]
        d["retry_on"] = list(self.retry_on)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepSpec:
        d = dict(d)
        d["gate"] = [GateCheck(**g) for g in d.get("gate") or []]
        d["retry_on"] = tuple(d.get("retry_on") or DEFAULT_RETRY_ON)
        return cls(**d)


@dataclass
class PipelineSpec:
    name: str
    steps: list[StepSpec]
    project: str | None = None
    source: str | None = None  # the file it came from, for messages
    workdir: str | None = None  # where steps run (paths in the spec are relative to it)

    def step(self, name: str) -> StepSpec:
        for s in self.steps:
            if s.name == name:
                return s
        raise InvalidInput(f"pipeline {self.name!r} has no step {name!r}; its steps: {', '.join(self.names)}")

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.steps]

    def order(self) -> list[str]:
        return topological_order({s.name: list(s.needs) for s in self.steps})

    def downstream(self, name: str) -> list[str]:
        """Every step that depends on ``name``, directly or not."""
        out: list[str] = []
        frontier = [name]
        while frontier:
            current = frontier.pop()
            for s in self.steps:
                if current in s.needs and s.name not in out:
                    out.append(s.name)
                    frontier.append(s.name)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "project": self.project,
            "source": self.source,
            "workdir": self.workdir,
            "steps": [s.to_dict() for s in self.steps],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PipelineSpec:
        return cls(
            name=d["name"],
            project=d.get("project"),
            source=d.get("source"),
            workdir=d.get("workdir"),
            steps=[StepSpec.from_dict(s) for s in d.get("steps") or []],
        )


def validate(spec: PipelineSpec) -> PipelineSpec:
    """Check everything that can be checked before a step runs; raise InvalidInput naming it."""
    where = f"pipeline {spec.name!r}" + (f" ({spec.source})" if spec.source else "")
    if not spec.name or not STEP_NAME_RE.match(spec.name):
        raise InvalidInput(f"{where}: the name must be letters, digits, '_', '-' or '.' (at most 64)")
    if not spec.steps:
        raise InvalidInput(f"{where} has no steps")
    seen: set[str] = set()
    for s in spec.steps:
        if not STEP_NAME_RE.match(s.name or ""):
            raise InvalidInput(f"{where}: step name {s.name!r} must be letters, digits, '_', '-' or '.' (at most 64)")
        if s.name in seen:
            raise InvalidInput(f"{where}: two steps are named {s.name!r}; step names must be unique")
        seen.add(s.name)
    for s in spec.steps:
        _check_step(spec, s, f"{where}, step {s.name!r}")
    spec.order()  # raises on a cycle, naming it
    return spec


def _check_step(spec: PipelineSpec, s: StepSpec, where: str) -> None:
    bodies = [k for k, v in (("command", s.command), ("function", s.function), ("gate", s.gate)) if v]
    if len(bodies) != 1:
        raise InvalidInput(
            f"{where}: give exactly one of command, function or gate"
            + (f" (it has {' and '.join(bodies)})" if bodies else " (it has none)")
        )
    for dep in s.needs:
        if dep not in spec.names:
            raise InvalidInput(f"{where}: needs unknown step {dep!r}; the steps are {', '.join(spec.names)}")
        if dep == s.name:
            raise InvalidInput(f"{where}: a step cannot need itself (cycle: {s.name} -> {s.name})")
    if s.command is not None:
        if not s.command or not all(isinstance(a, str) for a in s.command):
            raise InvalidInput(f"{where}: command must be a non-empty list of strings or a command line")
        _check_executable(s.command[0], spec.workdir, where)
    if s.function is not None:
        module, sep, func = s.function.rpartition(":")
        if not sep or not module or not func.isidentifier():
            raise InvalidInput(f"{where}: function {s.function!r} must be 'module:function' or 'file.py:function'")
        _check_module(module, spec.workdir, where)
    for check in s.gate:
        _check_gate(spec, s, check, where)
    if s.retries < 0:
        raise InvalidInput(f"{where}: retries must be 0 or more")
    unknown = [c for c in s.retry_on if c not in RETRYABLE]
    if unknown:
        raise InvalidInput(
            f"{where}: retry_on {', '.join(unknown)} is not a failure category; use any of {', '.join(RETRYABLE)}"
        )
    if s.retry_delay < 0:
        raise InvalidInput(f"{where}: retry_delay must be 0 or more")
    if s.timeout is not None and s.timeout <= 0:
        raise InvalidInput(f"{where}: timeout must be greater than 0")
    if s.memory_limit is not None and s.memory_limit <= 0:
        raise InvalidInput(f"{where}: memory_limit must be greater than 0")
    for key in ("inputs", "outputs"):
        if not all(isinstance(p, str) and p for p in getattr(s, key)):
            raise InvalidInput(f"{where}: {key} must be a list of paths")


def _check_executable(program: str, workdir: str | None, where: str) -> None:
    base = Path(workdir or ".")
    if "/" in program:
        path = Path(program) if Path(program).is_absolute() else base / program
        if not path.is_file():
            raise InvalidInput(f"{where}: command {program!r} does not exist (looked in {path.parent})")
    elif shutil.which(program) is None:
        raise InvalidInput(f"{where}: command {program!r} was not found on PATH")


def _check_module(module: str, workdir: str | None, where: str) -> None:
    """The step's module exists (found, not imported: importing would run its code here)."""
    if module.endswith(".py"):
        path = Path(module) if Path(module).is_absolute() else Path(workdir or ".") / module
        if not path.is_file():
            raise InvalidInput(f"{where}: function file {module!r} does not exist (looked for {path})")
        return
    import importlib.util
    import sys

    base = str(Path(workdir or ".").resolve())
    added = base not in sys.path
    if added:
        sys.path.insert(0, base)  # the step runs there, and imports from there
    importlib.invalidate_caches()  # a module written since the last import is found too
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    finally:
        if added:
            sys.path.remove(base)
    if not found:
        raise InvalidInput(
            f"{where}: function module {module!r} was not found (from {base}); "
            "is it installed, or in the pipeline's directory?"
        )


def _check_gate(spec: PipelineSpec, s: StepSpec, check: GateCheck, where: str) -> None:
    base = Path(spec.workdir or ".")
    if check.expect is not None:
        if check.data is None:
            raise InvalidInput(f"{where}: gate with expect {check.expect!r} needs data: the file to validate")
        suite = Path(check.expect) if Path(check.expect).is_absolute() else base / check.expect
        if not suite.is_file():
            raise InvalidInput(
                f"{where}: gate names unknown suite {check.expect!r} (no file {suite}); "
                "give a YAML or Python expectation file (docs/data.md)"
            )
        from flightlog.data.expectfile import load_expectations

        load_expectations(suite)  # a suite that does not parse fails now, with its line
    elif check.metric is not None:
        if check.step is None:
            raise InvalidInput(f"{where}: gate on metric {check.metric!r} needs step: the step whose run logs it")
        if check.step not in spec.names:
            raise InvalidInput(f"{where}: gate reads step {check.step!r}, which is not a step of the pipeline")
        if check.step not in s.needs:
            raise InvalidInput(f"{where}: gate reads step {check.step!r}; add it to needs so it runs first")
        if check.min is None and check.max is None:
            raise InvalidInput(f"{where}: gate on metric {check.metric!r} needs min or max")
    else:
        raise InvalidInput(f"{where}: a gate check is either expect + data or metric + step + min/max")


def command_of(value: Any, where: str) -> list[str]:
    """A command as a list: a string is split like a shell would (no shell runs it)."""
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise InvalidInput(f"{where}: command {value!r} cannot be split: {exc}") from None
    if isinstance(value, list | tuple) and all(isinstance(a, str | int | float) for a in value):
        return [str(a) for a in value]
    raise InvalidInput(f"{where}: command must be a string or a list of strings")
