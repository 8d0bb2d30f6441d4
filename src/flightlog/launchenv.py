"""Who this process is in a distributed job, read from what its launcher put in the environment.

``torchrun`` (and the elastic agent behind DeepSpeed's and Accelerate's multi-node launchers),
DeepSpeed's own launcher, Slurm's ``srun``, Open MPI's ``mpirun``, MPICH/Intel MPI's Hydra and
PMIx launchers each give a process its rank, its place on its node and the size of the job.
:func:`rank_identity` reads them into one :class:`RankIdentity`, so that the SDK (one job, one
run), the runner and every reader speak of ranks the same way.

The **job key** is what the ranks of one job share and two jobs do not: every rank computes the
same key on every host, and the SDK derives the job's run id from it (``sdk/ranks.py``). The rule,
per launcher (docs/distributed.md, "Ranks of one run"):

- torchrun / elastic with a rendezvous id (``--rdzv-id``, or the random one of ``--standalone``
  and of a single-node run without ``--master-port``): ``torchrun:<TORCHELASTIC_RUN_ID>``. The
  id stays across the agent's restarts (``TORCHELASTIC_RESTART_COUNT``), which are the same job.
- torchrun with ``TORCHELASTIC_RUN_ID=none`` (a static rendezvous, ``--master-port``), DeepSpeed's
  launcher, Accelerate, or ``RANK``/``WORLD_SIZE`` set by hand: the rendezvous address
  ``MASTER_ADDR:MASTER_PORT``, with Slurm's job and step ids when there are, and, when the whole job
  is on this node, the launching process (the parent of every rank: its pid and start time), so
  that two runs of one script one after the other get two keys. A job spread over several nodes
  without a rendezvous id has no such shared process: its key is the address alone, and the SDK
  tells two such jobs apart by their ranks (a rank already taken means another job).
- Slurm (``srun``): ``slurm:<cluster>:<SLURM_JOB_ID>.<SLURM_STEP_ID>``; a requeued job
  (``SLURM_RESTART_COUNT``) is the same job, restarted.
- MPI: the PMIx namespace (``PMIX_NAMESPACE``) or Open MPI's job id, else Slurm's ids, else the
  launching process on a single node.
- Lightning's own launcher (``Trainer(strategy="ddp")`` on one node, no ``RANK``: the script's
  process is rank 0 and starts the others with ``LOCAL_RANK``, ``NODE_RANK``, ``WORLD_SIZE``):
  ``lightning|MASTER_ADDR:MASTER_PORT|<rank 0's process>``. Rank 0 usually started its run before
  Lightning set these, so the SDK has the other ranks join rank 0's run (``sdk/ranks.py``).

No key (None) when nothing shared can be found: such ranks each record their own run unless
``FLIGHTLOG_RUN_ID`` (or ``init(id=...)``) names one. Nothing here raises: a malformed variable
reads as absent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["RankIdentity", "rank_identity", "ranks_text", "LAUNCHERS"]

LAUNCHERS = ("torchrun", "slurm", "mpi", "deepspeed", "accelerate", "lightning")
_INT = re.compile(r"-?[0-9]+")


@dataclass(frozen=True)
class RankIdentity:
    """One process of a distributed job, as its launcher described it."""

    rank: int
    local_rank: int | None
    world_size: int | None
    node_rank: int | None
    local_world_size: int | None
    restart_count: int
    launcher: str | None  # one of LAUNCHERS, or None for RANK/WORLD_SIZE set by hand
    job_key: str | None

    @property
    def distributed(self) -> bool:
        """More than one process (or a size nobody said): the ranks meet in one run."""
        return self.world_size is None or self.world_size > 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ranks_text(ranks: list[int]) -> str:
    """``rank 1``, ``ranks 0 and 2``, ``ranks 0, 1 and 3``: ranks named the one way every report
    (the diagnosis, the CLI, the runner's last line) says them."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks[:-1]) + f" and {ranks[-1]}"


def _int(env: Mapping[str, str], *names: str) -> int | None:
    """The first of ``names`` that holds an ASCII integer (``"¹".isdigit()`` is true too)."""
    for name in names:
        value = env.get(name, "").strip()
        if _INT.fullmatch(value):
            return int(value)
    return None


def _text(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def rank_identity(
    environ: Mapping[str, str] | None = None, *, launcher_process: str | None = None
) -> RankIdentity | None:
    """This process's rank, its node and its job, or None when no launcher made it a rank.

    ``launcher_process`` is the launching process's identity (``pid@start``) for the job key of
    a single-node job; by default this process's parent's, read from the system (tests pass one).
    """
    env = os.environ if environ is None else environ
    for read in (_torch, _mpi, _slurm, _lightning):
        found = read(env, launcher_process)
        if found is not None:
            return found
    return None


def _torch(env: Mapping[str, str], launcher_process: str | None) -> RankIdentity | None:
    """``RANK``/``WORLD_SIZE``: torchrun, DeepSpeed's launcher, Accelerate, or set by hand."""
    rank = _int(env, "RANK")
    if rank is None or rank < 0:
        return None
    world = _int(env, "WORLD_SIZE")
    elastic = _text(env, "TORCHELASTIC_RUN_ID")
    if any(k.startswith("ACCELERATE_") for k in env):
        launcher: str | None = "accelerate"
    elif "CROSS_RANK" in env or "LOCAL_SIZE" in env:
        launcher = "deepspeed"
    elif elastic is not None or "GROUP_RANK" in env:
        launcher = "torchrun"
    elif "SLURM_PROCID" in env:
        launcher = "slurm"  # RANK exported from SLURM_PROCID in a batch script
    elif "OMPI_COMM_WORLD_RANK" in env or "PMI_RANK" in env or "PMIX_RANK" in env:
        launcher = "mpi"
    else:
        launcher = None
    local_world = _int(env, "LOCAL_WORLD_SIZE", "LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE")
    if elastic is not None and elastic.lower() != "none":
        key: str | None = f"torchrun:{elastic}"
    else:
        parts = ["torchrun" if launcher in ("torchrun", "accelerate") else launcher or "env"]
        master = _text(env, "MASTER_ADDR")
        if master is not None:
            parts.append(f"{master}:{_text(env, 'MASTER_PORT') or ''}")
        slurm = _slurm_job(env)
        if slurm is not None:
            parts.append(slurm)
        single_node = local_world is not None and world is not None and local_world >= world
        if single_node or (local_world is None and master is None):
            parts.append(launcher_process or _parent_identity() or "")
        key = "|".join(parts) if len(parts) > 1 and any(parts[1:]) else None
    return RankIdentity(
        rank=rank,
        local_rank=_int(env, "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"),
        world_size=world,
        node_rank=_int(env, "GROUP_RANK", "CROSS_RANK", "SLURM_NODEID", "OMPI_COMM_WORLD_NODE_RANK"),
        local_world_size=local_world,
        restart_count=max(0, _int(env, "TORCHELASTIC_RESTART_COUNT", "SLURM_RESTART_COUNT") or 0),
        launcher=launcher,
        job_key=key,
    )


def _mpi(env: Mapping[str, str], launcher_process: str | None) -> RankIdentity | None:
    """Open MPI (``OMPI_COMM_WORLD_*``), PMIx (``PMIX_RANK``), PMI/Hydra (``PMI_RANK``)."""
    rank = _int(env, "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")
    if rank is None or rank < 0:
        return None
    world = _int(env, "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")
    local_world = _int(env, "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")
    job = _text(env, "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid")
    key: str | None
    if job is not None:
        key = f"mpi:{job}"
    elif (slurm := _slurm_job(env)) is not None:
        key = f"mpi|{slurm}"
    elif local_world is not None and world is not None and local_world >= world:
        key = f"mpi|{launcher_process or _parent_identity() or ''}"
    else:
        key = None
    return RankIdentity(
        rank=rank,
        local_rank=_int(env, "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"),
        world_size=world,
        node_rank=_int(env, "OMPI_COMM_WORLD_NODE_RANK", "SLURM_NODEID"),
        local_world_size=local_world,
        restart_count=max(0, _int(env, "SLURM_RESTART_COUNT") or 0),
        launcher="mpi",
        job_key=key if key != "mpi|" else None,
    )


def _slurm(env: Mapping[str, str], launcher_process: str | None) -> RankIdentity | None:
    """A task of a Slurm job step (``srun``). The batch script itself (no step id) is not one:
    a plain ``python train.py`` in an ``sbatch`` script is a single process."""
    rank = _int(env, "SLURM_PROCID")
    if rank is None or rank < 0 or _text(env, "SLURM_STEP_ID", "SLURM_STEPID") is None:
        return None
    return RankIdentity(
        rank=rank,
        local_rank=_int(env, "SLURM_LOCALID"),
        world_size=_int(env, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"),
        node_rank=_int(env, "SLURM_NODEID"),
        local_world_size=_int(env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"),  # "2(x3)" reads as absent
        restart_count=max(0, _int(env, "SLURM_RESTART_COUNT") or 0),
        launcher="slurm",
        job_key=f"slurm:{_slurm_job(env)}",
    )


def _lightning(env: Mapping[str, str], launcher_process: str | None) -> RankIdentity | None:
    """A process of Lightning's single-node launcher: ``LOCAL_RANK`` is the rank (``NODE_RANK``
    0; on several nodes Lightning runs under a launcher that sets ``RANK``)."""
    local, node, world = _int(env, "LOCAL_RANK"), _int(env, "NODE_RANK"), _int(env, "WORLD_SIZE")
    if local is None or local < 0 or node != 0 or world is None or "RANK" in env:
        return None
    rank0 = launcher_process or (_process_identity(os.getpid()) if local == 0 else _parent_identity())
    master = f"{_text(env, 'MASTER_ADDR') or ''}:{_text(env, 'MASTER_PORT') or ''}"
    return RankIdentity(
        rank=local,
        local_rank=local,
        world_size=world,
        node_rank=0,
        local_world_size=world,
        restart_count=0,
        launcher="lightning",
        job_key=f"lightning|{master}|{rank0}" if rank0 else None,
    )


def _slurm_job(env: Mapping[str, str]) -> str | None:
    """``<cluster>:<job>.<step>`` of a Slurm job (the step only inside ``srun``), or None."""
    job = _text(env, "SLURM_JOB_ID", "SLURM_JOBID")
    if job is None:
        return None
    step = _text(env, "SLURM_STEP_ID", "SLURM_STEPID")
    cluster = _text(env, "SLURM_CLUSTER_NAME") or ""
    return f"{cluster}:{job}" + (f".{step}" if step is not None else "")


def _parent_identity() -> str | None:
    """The launching process (this process's parent) as ``pid@start``, where ``start`` is its
    start in clock ticks since boot (``/proc/PID/stat``): exact, so every child reads the same
    value, unlike a wall-clock start computed from the boot time."""
    ppid = os.getppid()
    if ppid <= 1:
        return None  # re-parented to init: the launcher is gone
    return _process_identity(ppid)


def _process_identity(pid: int) -> str | None:
    """``pid@start`` of a process, its start in clock ticks since boot where Linux says."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return f"{pid}@{int(fields[19])}"
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        return f"{pid}@{psutil.Process(pid).create_time():.2f}"
    except Exception:  # noqa: BLE001 - no key is better than a crash at init
        return None
