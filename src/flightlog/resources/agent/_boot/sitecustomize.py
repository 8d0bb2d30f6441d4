"""flightlog's bootstrap for the processes of a ``flightlog run`` workload (docs/distributed.md).

``flightlog run`` puts this directory first on ``PYTHONPATH``; Python imports this module at
start-up. In the runner's direct child and in processes a launcher made ranks, it starts the
hang watch of ``flightlog/resources/agent`` (loaded by path under the private name
``_flightlog_agent``, whatever flightlog the workload has installed); in every other process it
does nothing. Then it imports the ``sitecustomize`` this one hides, if there is one, so a
site's or a virtual environment's own keeps working. ``FLIGHTLOG_BOOTSTRAP=off`` for
``flightlog run`` leaves it out.

It never changes what the workload does: standard library only, every step guarded, and a
failure of its own is one line on stderr.
"""

import os
import sys


def _flightlog_wanted():
    """The runner's direct child (which may become rank 0 of a launcher that starts its own ranks:
    Lightning, Accelerate's notebook launcher), or a process a launcher made a rank. Decided from
    the environment alone: every other process pays two lookups and nothing else."""
    env = os.environ
    try:
        if int(env.get("FLIGHTLOG_RUNNER_PID", "0")) == os.getppid():
            return True
    except ValueError:
        pass
    names = ("RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
    return any(env.get(n, "").strip() for n in names)


def _flightlog_start():
    directory = os.environ.get("FLIGHTLOG_HANG_DIR")
    if not directory or sys.version_info < (3, 8) or "_flightlog_agent" in sys.modules:
        return
    if not _flightlog_wanted() or not os.path.isdir(directory):
        return
    agent_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    package = type(sys)("_flightlog_agent")  # types.ModuleType, without importing types
    package.__path__ = [agent_dir]
    package.__package__ = "_flightlog_agent"
    sys.modules["_flightlog_agent"] = package
    __import__("_flightlog_agent.boot")  # importlib.import_module, without importing importlib (with warnings)
    sys.modules["_flightlog_agent.boot"].start(directory)


def _flightlog_chain():
    """Import the sitecustomize this module hides on sys.path (a site's or a venv's), if any."""
    here = os.path.dirname(os.path.abspath(__file__))
    ours = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        __import__("sitecustomize")
    except ImportError as exc:
        if getattr(exc, "name", "sitecustomize") != "sitecustomize":  # (Python 2 names no module)
            raise
    finally:
        sys.path[:] = saved
        if "sitecustomize" not in sys.modules and ours is not None:
            sys.modules["sitecustomize"] = ours


try:
    _flightlog_start()
except Exception as _exc:  # the workload starts as if flightlog were not there
    try:
        sys.stderr.write(
            "flightlog: hang watch not started in this process: " + type(_exc).__name__ + ": " + str(_exc) + "\n"
        )
    except Exception:
        pass
_flightlog_chain()
