"""The executor protocol: get ready, start a step's command, ask whether it ended, stop it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Executor", "StepLaunch"]


@dataclass(frozen=True)
class StepLaunch:
    """One attempt of a step: the ``flightlog run ...`` command line, its environment and
    working directory, and the id its run will have."""

    run_id: str
    argv: list[str]
    env: dict[str, str]
    cwd: str
    verbose: bool = False  # pass the step's output through to the controller's terminal


class Executor(Protocol):
    name: str

    def prepare(self, env: dict[str, str]) -> None:
        """Called once, first, with the controller's environment (each step brings its own): get
        ready to start steps while the controller starts the pipeline's run."""

    def start(self, launch: StepLaunch) -> Any:
        """Start the attempt; return a handle for :meth:`poll` and :meth:`stop`."""

    def poll(self, handle: Any) -> int | None:
        """The exit status of ``flightlog run`` once the attempt ended, else None (never blocks)."""

    def stop(self, handle: Any, signum: int) -> None:
        """Ask the attempt to stop (its runner records it as stopped or killed)."""

    def wakeup_fds(self) -> list[int]:
        """Descriptors that turn readable when an attempt may have ended: the controller's loop
        waits on them, so it learns of an end at once instead of at its next look."""

    def close(self) -> None:
        """Release what the executor holds (processes are already stopped)."""
