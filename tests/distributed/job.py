"""The distributed job of tests/distributed: one rank (rank 1, the culprit) misbehaves as the
scenario says, on gloo; the others only wait for it. In ``raises_alike`` no rank is the culprit:
every rank fails to open its own shard of a data directory that is not there.

    SCENARIO=stuck|exit|exit_while_others_read|killed|raises|raises_alike|mismatch|straggler|leaves_early|\
        fails_otherwise_after_restart|healthy \
        torchrun --nproc_per_node N job.py

SIGNALS is a directory the test and the job meet in: the stuck rank waits for ``release`` there
(a read that never returns until the test says so), the rank to be killed writes its ``pid``.
With USE_SDK=1 each rank calls ``flightlog.init()`` and times its data loading as a stage.
SLOW_START=S makes rank 0 reach the rendezvous S seconds late (a loaded machine): the others wait
in ``init_process_group`` meanwhile.
"""

import datetime
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist

SCENARIO = os.environ["SCENARIO"]
SIGNALS = Path(os.environ["SIGNALS"])
CULPRIT = 1
STEPS = int(os.environ.get("STEPS", "8"))
AT_STEP = int(os.environ.get("AT_STEP", "3"))  # the step at which the culprit misbehaves


def read_shard(rank, step):
    if SCENARIO == "raises_alike" and step == AT_STEP:
        # every rank raises, none before all have reached here: no rank is torn down first
        (SIGNALS / f"reading-{rank}").write_text("")
        while len(list(SIGNALS.glob("reading-*"))) < int(os.environ["WORLD_SIZE"]):
            time.sleep(0.01)
        with open(SIGNALS / "shards" / f"train-{rank:05d}.bin", "rb") as f:
            return torch.frombuffer(bytearray(f.read(16)), dtype=torch.float32)
    if SCENARIO == "fails_otherwise_after_restart" and step == AT_STEP:
        # torchrun --max-restarts 1: rank 1 fails the first time, rank 0 the second
        restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        if restart == 0 and rank == CULPRIT:
            raise ValueError(f"shard 7 has 0 rows (rank {rank})")
        if restart > 0 and rank == 0:
            raise KeyError("label")
    if rank == CULPRIT and step == AT_STEP:
        if SCENARIO == "stuck":
            while not (SIGNALS / "release").exists():  # a storage read that stopped answering
                time.sleep(0.05)
        elif SCENARIO in ("exit", "exit_while_others_read"):
            os._exit(1)
        elif SCENARIO == "killed":
            (SIGNALS / "pid").write_text(str(os.getpid()))
            while True:
                time.sleep(0.05)
        elif SCENARIO == "raises":
            raise ValueError(f"shard 7 has 0 rows (rank {rank})")
    if SCENARIO == "exit_while_others_read" and rank != CULPRIT and step == AT_STEP:
        # still reading when the culprit exits: torchrun stops this rank (SIGTERM) before it could
        # wait in a collective and say so — what a loaded machine does to the "exit" scenario
        while True:
            time.sleep(0.05)
    if SCENARIO == "straggler" and rank == CULPRIT:
        time.sleep(0.25)  # a slow disk on this rank's host
    return torch.ones(4) * (rank + 1)


def main():
    run = None
    if os.environ.get("USE_SDK") == "1":
        import flightlog

        run = flightlog.init(project="dist", name="job")
    if os.environ.get("RANK") == "0" and os.environ.get("SLOW_START"):
        time.sleep(float(os.environ["SLOW_START"]))
    timeout = datetime.timedelta(seconds=float(os.environ.get("GROUP_TIMEOUT", "60")))
    if SCENARIO == "fails_otherwise_after_restart":
        # each restart's group under its own keys: the launcher's store still holds the first
        # try's addresses, and gloo read them now and then ("connectFullMesh failed")
        agent = dist.TCPStore(
            os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False, timeout=timeout
        )
        store = dist.PrefixStore(f"restart-{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}", agent)
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timeout)
    else:
        dist.init_process_group("gloo", timeout=timeout)
    rank = dist.get_rank()
    for step in range(STEPS):
        if SCENARIO == "leaves_early" and rank == CULPRIT and step == AT_STEP:
            return  # its shard is shorter: it ends well, while the others enter the next all_reduce
        if run is not None:
            with run.stage("data_loading"):
                x = read_shard(rank, step)
        else:
            x = read_shard(rank, step)
        if SCENARIO == "mismatch" and rank == CULPRIT and step == AT_STEP:
            dist.broadcast(x, src=0)  # the others all_reduce here
        else:
            dist.all_reduce(x)
        loss = 1.0 / (step + 1)
        if run is not None:
            run.log({"loss": loss}, step=step)
        else:
            print(f"step={step} loss={loss:.4f}", flush=True)
        time.sleep(0.05)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
