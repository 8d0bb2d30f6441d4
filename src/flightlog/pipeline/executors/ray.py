"""Steps as Ray tasks (``flightlog pipeline run --executor ray``; ``pip install 'flightlog[ray]'``).

Each task runs the step's ``flightlog run`` command on a Ray worker, so a step is captured
exactly as it is locally: its logs, resources, status and failure land on its run. The
controller stays where it was started and only schedules.

Which cluster: an already initialised Ray (``ray.init(...)`` in the calling program), else
``RAY_ADDRESS`` (e.g. ``ray://head:10001`` or ``auto``), else a local Ray started for the
pipeline and shut down after it. On a real cluster every worker needs flightlog installed and
the same store: point them at a flightlog server with ``FLIGHTLOG_URL`` (and
``FLIGHTLOG_TOKEN``), which the controller passes to each step's environment, and keep paths
in the pipeline on storage the workers share (docs/pipelines.md).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.pipeline.executors.base import StepLaunch

__all__ = ["RayExecutor", "run_step_command"]


def run_step_command(argv: list[str], env: dict[str, str], cwd: str) -> int:
    """Body of a Ray task: run the step's ``flightlog run`` and return its exit status."""
    from flightlog.pipeline.executors.local import parent_death_signal

    if not os.path.exists(argv[0]):
        argv = [sys.executable, *argv[1:]]  # another machine: this worker's Python
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd if os.path.isdir(cwd) else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=parent_death_signal(),
    )
    try:
        return proc.wait()
    except BaseException:  # cancelled: stop the step so its run says so
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()


class RayExecutor:
    name = "ray"

    def __init__(self, max_parallel: int = 4) -> None:
        try:
            import ray
        except ImportError:
            raise InvalidInput(
                "the ray executor needs Ray: pip install 'flightlog[ray]' (or pip install ray)"
            ) from None
        self._ray = ray
        self._owned = False
        if not ray.is_initialized():
            address = os.environ.get("RAY_ADDRESS") or None
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is None:
                options["num_cpus"] = max(1, max_parallel)  # a local Ray, sized for the pipeline
            ray.init(address=address, **options)
            self._owned = True
        self._task = ray.remote(num_cpus=1, max_retries=0)(run_step_command)

    def start(self, launch: StepLaunch) -> Any:
        return self._task.remote(launch.argv, launch.env, launch.cwd)

    def poll(self, handle: Any) -> int | None:
        ready, _ = self._ray.wait([handle], timeout=0)
        if not ready:
            return None
        try:
            return int(self._ray.get(handle))
        except Exception:
            return 1

    def stop(self, handle: Any, signum: int) -> None:
        try:
            self._ray.cancel(handle, force=signum == signal.SIGKILL)
        except Exception:
            pass

    def prepare(self, env: dict[str, str]) -> None:
        pass  # the cluster is already there (__init__ connected to it)

    def wakeup_fds(self) -> list[int]:
        return []  # Ray says nothing when a task ends: the controller's loop looks at each in turn

    def close(self) -> None:
        if self._owned:
            self._ray.shutdown()
