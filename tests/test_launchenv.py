"""rank_identity from launchers' environments, as recorded from real launches (torchrun 2.x on
this machine; the others from their launchers' documented variables)."""

from __future__ import annotations

from flightlog.config import rank_identity
from flightlog.launchenv import RankIdentity

# torchrun --nproc_per_node 2 t.py (single node, no --master-port: a random rendezvous id)
TORCHRUN = {
    "GROUP_RANK": "0",
    "GROUP_WORLD_SIZE": "1",
    "LOCAL_RANK": "1",
    "LOCAL_WORLD_SIZE": "2",
    "MASTER_ADDR": "localhost",
    "MASTER_PORT": "42925",
    "OMP_NUM_THREADS": "1",
    "RANK": "1",
    "ROLE_NAME": "default",
    "ROLE_RANK": "1",
    "ROLE_WORLD_SIZE": "2",
    "TORCHELASTIC_ERROR_FILE": "/tmp/torchelastic_p43j7xw2/b2345faf/attempt_0/1/error.json",
    "TORCHELASTIC_MAX_RESTARTS": "0",
    "TORCHELASTIC_RESTART_COUNT": "0",
    "TORCHELASTIC_RUN_ID": "b2345faf-7d00-4e1e-a02b-4209a7728827",
    "TORCHELASTIC_SIGNALS_TO_HANDLE": "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
    "TORCHELASTIC_USE_AGENT_STORE": "True",
    "WORLD_SIZE": "2",
}
# torchrun --nnodes 2 --node-rank 1 --master-addr 10.0.0.1 --master-port 29511 --nproc-per-node 2 (static)
TORCHRUN_STATIC_NODE1 = {
    **TORCHRUN,
    "GROUP_RANK": "1",
    "GROUP_WORLD_SIZE": "2",
    "RANK": "3",
    "WORLD_SIZE": "4",
    "MASTER_ADDR": "10.0.0.1",
    "MASTER_PORT": "29511",
    "TORCHELASTIC_RUN_ID": "none",
    "TORCHELASTIC_RESTART_COUNT": "2",
}
# deepspeed --num_gpus 2 train.py (deepspeed.launcher.launch)
DEEPSPEED = {
    "RANK": "0",
    "LOCAL_RANK": "0",
    "WORLD_SIZE": "2",
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": "29500",
    "CROSS_RANK": "0",
    "CROSS_SIZE": "1",
    "LOCAL_SIZE": "2",
}
# accelerate launch --multi_gpu --num_processes 2 (torch's elastic launch under it)
ACCELERATE = {**TORCHRUN, "ACCELERATE_MIXED_PRECISION": "no", "ACCELERATE_DYNAMO_BACKEND": "NO"}
# srun -N 2 --ntasks-per-node 2 python train.py, task 2
SRUN = {
    "SLURM_PROCID": "2",
    "SLURM_LOCALID": "0",
    "SLURM_NODEID": "1",
    "SLURM_NTASKS": "4",
    "SLURM_STEP_NUM_TASKS": "4",
    "SLURM_STEP_TASKS_PER_NODE": "2(x2)",
    "SLURM_JOB_ID": "81234",
    "SLURM_STEP_ID": "0",
    "SLURM_CLUSTER_NAME": "gpu",
}
# mpirun -np 4 (Open MPI 5, PMIx)
OPENMPI = {
    "OMPI_COMM_WORLD_RANK": "3",
    "OMPI_COMM_WORLD_SIZE": "4",
    "OMPI_COMM_WORLD_LOCAL_RANK": "1",
    "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
    "OMPI_COMM_WORLD_NODE_RANK": "1",
    "PMIX_RANK": "3",
    "PMIX_NAMESPACE": "prterun-node0-2973@1",
}
# mpiexec.hydra -n 2 (MPICH, Intel MPI)
HYDRA = {"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2", "PMI_FD": "6"}


def test_torchrun_with_a_rendezvous_id() -> None:
    me = rank_identity(TORCHRUN)
    assert me == RankIdentity(
        rank=1,
        local_rank=1,
        world_size=2,
        node_rank=0,
        local_world_size=2,
        restart_count=0,
        launcher="torchrun",
        job_key="torchrun:b2345faf-7d00-4e1e-a02b-4209a7728827",
    )
    # the same job on every rank, and across the agent's restarts
    assert rank_identity({**TORCHRUN, "RANK": "0", "LOCAL_RANK": "0"}).job_key == me.job_key  # type: ignore[union-attr]
    restarted = rank_identity({**TORCHRUN, "TORCHELASTIC_RESTART_COUNT": "3", "MASTER_PORT": "5000"})
    assert restarted is not None and restarted.job_key == me.job_key and restarted.restart_count == 3


def test_static_rendezvous_on_several_nodes_keys_on_the_address() -> None:
    me = rank_identity(TORCHRUN_STATIC_NODE1, launcher_process="999@1")
    assert me is not None
    assert (me.rank, me.world_size, me.node_rank, me.restart_count) == (3, 4, 1, 2)
    # several nodes: no launching process is shared, so it is not part of the key
    assert me.job_key == "torchrun|10.0.0.1:29511"
    other_node = rank_identity({**TORCHRUN_STATIC_NODE1, "GROUP_RANK": "0", "RANK": "0"}, launcher_process="5@7")
    assert other_node is not None and other_node.job_key == me.job_key
    # under Slurm, its job and step tell two such jobs apart
    slurm = rank_identity({**TORCHRUN_STATIC_NODE1, "SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0"})
    assert slurm is not None and slurm.job_key == "torchrun|10.0.0.1:29511|:77.0"


def test_static_rendezvous_on_one_node_keys_on_the_launching_process() -> None:
    single = {**TORCHRUN_STATIC_NODE1, "GROUP_WORLD_SIZE": "1", "GROUP_RANK": "0", "RANK": "1", "WORLD_SIZE": "2"}
    first = rank_identity(single, launcher_process="4242@1000")
    again = rank_identity(single, launcher_process="4242@1000")
    later = rank_identity(single, launcher_process="5151@2000")  # the same script run again
    assert first is not None and again is not None and later is not None
    assert first.job_key == again.job_key == "torchrun|10.0.0.1:29511|4242@1000"
    assert later.job_key != first.job_key


def test_the_parent_process_is_read_from_the_system() -> None:
    single = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}
    me = rank_identity(single)
    assert me is not None and me.job_key is not None
    import os

    assert f"|{os.getppid()}@" in me.job_key


def test_deepspeed_launcher() -> None:
    me = rank_identity(DEEPSPEED, launcher_process="10@20")
    assert me is not None
    assert (me.launcher, me.rank, me.world_size, me.node_rank, me.local_world_size) == ("deepspeed", 0, 2, 0, 2)
    assert me.job_key == "deepspeed|127.0.0.1:29500|10@20"


def test_accelerate_is_named_and_keys_as_torchrun() -> None:
    me = rank_identity(ACCELERATE)
    assert me is not None and me.launcher == "accelerate"
    assert me.job_key == rank_identity(TORCHRUN).job_key  # type: ignore[union-attr]


def test_srun_task() -> None:
    me = rank_identity(SRUN)
    assert me == RankIdentity(
        rank=2,
        local_rank=0,
        world_size=4,
        node_rank=1,
        local_world_size=None,  # "2(x2)" is not one number
        restart_count=0,
        launcher="slurm",
        job_key="slurm:gpu:81234.0",
    )
    requeued = rank_identity({**SRUN, "SLURM_RESTART_COUNT": "1"})
    assert requeued is not None and requeued.restart_count == 1 and requeued.job_key == me.job_key


def test_a_batch_script_is_not_a_rank() -> None:
    batch = {k: v for k, v in SRUN.items() if k not in ("SLURM_STEP_ID", "SLURM_STEP_NUM_TASKS")}
    batch["SLURM_PROCID"] = "0"
    assert rank_identity(batch) is None


def test_open_mpi_and_hydra() -> None:
    ompi = rank_identity(OPENMPI)
    assert ompi is not None
    assert (ompi.launcher, ompi.rank, ompi.world_size, ompi.local_rank, ompi.node_rank) == ("mpi", 3, 4, 1, 1)
    assert ompi.job_key == "mpi:prterun-node0-2973@1"
    hydra = rank_identity(HYDRA, launcher_process="77@88")
    assert hydra is not None and (hydra.rank, hydra.world_size, hydra.local_rank) == (1, 2, 1)
    assert hydra.job_key == "mpi|77@88"  # one node: the launching proxy
    spread = rank_identity({**HYDRA, "MPI_LOCALNRANKS": "1"})
    assert spread is not None and spread.job_key is None  # nothing shared to key on: each rank its own run


def test_rank_set_by_hand_from_slurm_in_a_batch_script() -> None:
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "n1", "MASTER_PORT": "29500"}
    me = rank_identity({**env, "SLURM_PROCID": "1", "SLURM_JOB_ID": "5"})
    assert me is not None and me.launcher == "slurm" and me.job_key == "slurm|n1:29500|:5"


def test_no_launcher_and_bad_values() -> None:
    assert rank_identity({}) is None
    assert rank_identity({"PATH": "/bin"}) is None
    assert rank_identity({"RANK": "¹"}) is None  # not an ASCII number: absent, never a crash
    assert rank_identity({"RANK": "-1"}) is None
    me = rank_identity({"RANK": "0", "WORLD_SIZE": "two", "TORCHELASTIC_RESTART_COUNT": "x"}, launcher_process="1@2")
    assert me is not None and me.world_size is None and me.restart_count == 0
    single = rank_identity({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1"}, launcher_process="1@2")
    assert single is not None and not single.distributed


def test_lightnings_own_launcher() -> None:
    # Lightning's DDP on one node: rank 1 started by the script's process, which is rank 0
    child = {"LOCAL_RANK": "1", "NODE_RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "51659"}
    me = rank_identity(child, launcher_process="4617@99")
    assert me == RankIdentity(
        rank=1,
        local_rank=1,
        world_size=2,
        node_rank=0,
        local_world_size=2,
        restart_count=0,
        launcher="lightning",
        job_key="lightning|127.0.0.1:51659|4617@99",
    )
    import os

    rank0 = rank_identity({**child, "LOCAL_RANK": "0"})
    assert (
        rank0 is not None
        and rank0.job_key is not None
        and rank0.job_key.endswith(f"|{os.getpid()}@" + rank0.job_key.rsplit("@", 1)[1])
    )
    assert (
        rank_identity({**child, "NODE_RANK": "1"}) is None
    )  # several nodes: Lightning runs under a launcher with RANK
    assert rank_identity({"LOCAL_RANK": "0"}) is None  # torch.distributed.launch's LOCAL_RANK alone is no job
