"""A two-rank training job whose rank 1 gets stuck reading its data (examples/distributed/README.md).

Every rank calls ``flightlog.init()``, times its data loading and its compute as stages and logs
its loss. At step ``--stuck-at`` rank 1's data read stops answering (a storage mount that hangs):
rank 0 enters ``all_reduce`` #4 and waits there until the process group's ``--timeout``, then
torchrun stops rank 1. flightlog sees the stall while it happens, takes every rank's stacks and
Flight Recorder, and ``flightlog diagnose`` names rank 1, the line it was stuck on and the
collective it never entered.

    flightlog run -- torchrun --nproc_per_node 2 --standalone examples/distributed/hang.py
    flightlog diagnose RUN
"""

from __future__ import annotations

import argparse
import datetime
import time

import torch
import torch.distributed as dist

import flightlog


def read_shard(rank: int, step: int, stuck_at: int) -> torch.Tensor:
    """This rank's batch. On rank 1, at step ``stuck_at``, the read never returns."""
    if rank == 1 and step == stuck_at:
        time.sleep(3600)  # the storage stopped answering
    return torch.randn(256) + rank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--stuck-at", type=int, default=3, help="the step at which rank 1's read hangs (-1: never)")
    parser.add_argument("--timeout", type=float, default=60.0, help="the process group's collective timeout (seconds)")
    args = parser.parse_args()

    run = flightlog.init(name="ddp-hang", params=vars(args))  # every rank: they meet in one run
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank = dist.get_rank()
    weights = torch.zeros(256)
    for step in range(args.steps):
        with run.stage("data_loading"):
            batch = read_shard(rank, step, args.stuck_at)
        with run.stage("compute"):
            grad = batch - weights
            dist.all_reduce(grad)  # every rank waits here for every other one
            weights += 0.1 * grad / dist.get_world_size()
        run.log({"loss": float((batch - weights).pow(2).mean())}, step=step)
        time.sleep(0.05)
    run.finish()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
