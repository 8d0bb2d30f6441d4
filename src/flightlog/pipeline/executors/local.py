"""Steps as child processes of the controller.

Each step attempt is a ``flightlog run`` of its own, forked from a warm runner that has loaded
the runner's code once (:mod:`.forkserver`); if that cannot start, each is a new process.

Each step's ``flightlog run`` gets its own session, so a Ctrl-C at the terminal reaches the
controller alone and is forwarded once (a second SIGINT would mean "kill now" to the runner).
On Linux each one also asks the kernel for SIGTERM when the controller dies
(``PR_SET_PDEATHSIG``): a controller killed with SIGKILL takes its steps down with it and they
are recorded as killed, instead of running on unwatched. Processes are started from the
controller's main thread, which lives as long as the controller (the death signal follows
the thread that forked).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from flightlog.notices import notice
from flightlog.pipeline.executors.base import StepLaunch
from flightlog.pipeline.executors.forkserver import ForkedRunner, ForkServer, ForkServerError

__all__ = ["LocalExecutor", "parent_death_signal"]


def parent_death_signal() -> Any:
    """A preexec function that sets PR_SET_PDEATHSIG to SIGTERM (None where unsupported)."""
    if not sys.platform.startswith("linux"):
        return None
    from flightlog.runner.reaper import libc

    try:
        prctl = libc().prctl
    except (OSError, TypeError, AttributeError):
        return None

    def setup() -> None:
        prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG

    return setup


class LocalExecutor:
    name = "local"

    def __init__(self, max_parallel: int = 4) -> None:
        self.max_parallel = max_parallel
        self._preexec = parent_death_signal()
        self._server: ForkServer | None = None
        self._cold = False  # the warm runner failed once: every step starts as a new process

    def prepare(self, env: dict[str, str]) -> None:
        """Start the warm runner now: it loads its code while the controller starts the pipeline."""
        if self._server is None and not self._cold:
            try:
                self._server = ForkServer.start(env, self._preexec)
            except ForkServerError as exc:
                self._go_cold(exc)

    def start(self, launch: StepLaunch) -> subprocess.Popen[bytes] | ForkedRunner:
        if not self._cold and ForkServer.accepts(launch):
            self.prepare(launch.env)
            try:
                if self._server is not None:
                    return self._server.launch(launch)
            except ForkServerError as exc:
                self._go_cold(exc)
        output = None if launch.verbose else subprocess.DEVNULL
        return subprocess.Popen(
            launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
            preexec_fn=self._preexec,
            close_fds=True,
        )

    def poll(self, handle: subprocess.Popen[bytes] | ForkedRunner) -> int | None:
        if isinstance(handle, ForkedRunner):
            return self._server.poll(handle) if self._server is not None else -signal.SIGKILL
        return handle.poll()

    def stop(self, handle: subprocess.Popen[bytes] | ForkedRunner, signum: int) -> None:
        if self.poll(handle) is None:
            try:
                os.kill(handle.pid, signum)
            except ProcessLookupError:
                pass

    def _go_cold(self, exc: ForkServerError) -> None:
        notice(f"{exc.message}; steps start as new processes")
        self._cold = True

    def wakeup_fds(self) -> list[int]:
        return [self._server.replies] if self._server is not None else []

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
