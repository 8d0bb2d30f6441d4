"""A search space: each parameter a list of choices or a numeric range.

On the command line (``flightlog sweep --param NAME=SPEC``):

    lr=log:1e-4:1e-1        log-uniform between the bounds
    dropout=uniform:0:0.5   uniform
    layers=int:1:4          integers, bounds included
    batch_size=16,32,64     choices (each parsed as JSON when it can be: numbers, true, "text")
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.runner.options import parse_value

__all__ = ["Choice", "Uniform", "LogUniform", "IntUniform", "Param", "parse_param", "grid", "sample"]


@dataclass(frozen=True)
class Choice:
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Uniform:
    low: float
    high: float


@dataclass(frozen=True)
class LogUniform:
    low: float
    high: float


@dataclass(frozen=True)
class IntUniform:
    low: int
    high: int


Param = Choice | Uniform | LogUniform | IntUniform


def parse_param(text: str) -> tuple[str, Param]:
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not name or not spec:
        raise InvalidInput(f"--param {text!r}: write NAME=SPEC, e.g. lr=log:1e-4:1e-1, layers=int:1:4 or bs=16,32,64")
    kind, _, rest = spec.partition(":")
    if kind in ("uniform", "log", "int") and rest:
        low_text, sep2, high_text = rest.partition(":")
        try:
            low, high = (int(low_text), int(high_text)) if kind == "int" else (float(low_text), float(high_text))
        except ValueError:
            raise InvalidInput(f"--param {text!r}: the bounds of {kind}:LOW:HIGH must be numbers") from None
        if not sep2 or not low < high:
            raise InvalidInput(f"--param {text!r}: write {kind}:LOW:HIGH with LOW < HIGH")
        if kind == "log":
            if low <= 0:
                raise InvalidInput(f"--param {text!r}: a log range needs LOW > 0")
            return name, LogUniform(low, high)
        return name, (IntUniform(int(low), int(high)) if kind == "int" else Uniform(low, high))
    values = tuple(parse_value(v) for v in spec.split(","))
    return name, Choice(values)


def grid(space: dict[str, Param]) -> list[dict[str, Any]]:
    """Every combination; a grid needs choices or integer ranges."""
    axes = []
    for name, param in space.items():
        if isinstance(param, Choice):
            axes.append([(name, v) for v in param.values])
        elif isinstance(param, IntUniform):
            axes.append([(name, v) for v in range(param.low, param.high + 1)])
        else:
            raise InvalidInput(
                f"--param {name}: a grid search needs choices (a,b,c) or int:LOW:HIGH, not a continuous range"
            )
    return [dict(combo) for combo in itertools.product(*axes)]


def sample(space: dict[str, Param], rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, param in space.items():
        if isinstance(param, Choice):
            out[name] = rng.choice(param.values)
        elif isinstance(param, IntUniform):
            out[name] = rng.randint(param.low, param.high)
        elif isinstance(param, LogUniform):
            out[name] = math.exp(rng.uniform(math.log(param.low), math.log(param.high)))
        else:
            out[name] = rng.uniform(param.low, param.high)
    return out
