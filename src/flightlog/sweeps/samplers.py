"""How the next trial's params are chosen: one small protocol, three backends by name.

``grid`` walks every combination, ``random`` samples the space (seeded), ``tpe`` asks Optuna's
Tree-structured Parzen Estimator, which learns from the results told so far (the ``sweeps``
extra: ``pip install "flightlog[sweeps]"``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol

from flightlog.errors import InvalidInput
from flightlog.sweeps.space import Choice, IntUniform, LogUniform, Param, grid, sample

__all__ = ["Sampler", "open_sampler", "METHODS"]


class Sampler(Protocol):
    def ask(self) -> dict[str, Any] | None:
        """The next trial's params, or None when the space is exhausted."""
        ...

    def tell(self, params: dict[str, Any], value: float | None, state: str) -> None:
        """The trial's objective (None if it has none) and how it ended: complete, pruned or failed."""
        ...


class GridSampler:
    def __init__(self, space: dict[str, Param], seed: int | None) -> None:
        self._todo = grid(space)

    def ask(self) -> dict[str, Any] | None:
        return self._todo.pop(0) if self._todo else None

    def tell(self, params: dict[str, Any], value: float | None, state: str) -> None:
        return None


class RandomSampler:
    def __init__(self, space: dict[str, Param], seed: int | None) -> None:
        self._space = space
        self._rng = random.Random(seed)

    def ask(self) -> dict[str, Any] | None:
        return sample(self._space, self._rng)

    def tell(self, params: dict[str, Any], value: float | None, state: str) -> None:
        return None


class TpeSampler:
    def __init__(self, space: dict[str, Param], seed: int | None, direction: str = "minimize") -> None:
        try:
            import optuna
        except ImportError:
            raise InvalidInput('--method tpe needs Optuna: pip install "flightlog[sweeps]"') from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self._study = optuna.create_study(direction=direction, sampler=optuna.samplers.TPESampler(seed=seed))
        self._dists = {name: _distribution(optuna, p) for name, p in space.items()}
        self._open: list[Any] = []

    def ask(self) -> dict[str, Any] | None:
        trial = self._study.ask(self._dists)
        self._open.append(trial)
        return dict(trial.params)

    def tell(self, params: dict[str, Any], value: float | None, state: str) -> None:
        trial = next((t for t in self._open if t.params == params), None)
        if trial is None:
            return
        self._open.remove(trial)
        states = self._optuna.trial.TrialState
        if state == "complete" and value is not None:
            self._study.tell(trial, value)
        elif state == "pruned":
            self._study.tell(trial, state=states.PRUNED)
        else:
            self._study.tell(trial, state=states.FAIL)


def _distribution(optuna: Any, param: Param) -> Any:
    d = optuna.distributions
    if isinstance(param, Choice):
        return d.CategoricalDistribution(list(param.values))
    if isinstance(param, IntUniform):
        return d.IntDistribution(param.low, param.high)
    if isinstance(param, LogUniform):
        return d.FloatDistribution(param.low, param.high, log=True)
    return d.FloatDistribution(param.low, param.high)


METHODS: dict[str, Callable[..., Sampler]] = {"grid": GridSampler, "random": RandomSampler, "tpe": TpeSampler}


def open_sampler(method: str, space: dict[str, Param], *, seed: int | None, goal: str) -> Sampler:
    if method not in METHODS:
        raise InvalidInput(f"--method {method!r}: use one of {', '.join(METHODS)}")
    if method == "tpe":
        return TpeSampler(space, seed, "minimize" if goal == "minimize" else "maximize")
    return METHODS[method](space, seed)
