"""torch.distributed on Open MPI: a world of one process without MPI, two ranks started by
the launcher (every collective checked against the values it must give), and a rank that
dies stopping the job with an error naming it."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import glasstorch as torch
import glasstorch.distributed as dist

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def test_without_init_the_errors_are_pytorchs():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    assert not dist.is_initialized() and dist.is_available()


def test_no_backend_named_means_the_accelerators_backend():
    """PyTorch's default: the group's backend reads "undefined" and its config names the
    accelerator's backend (gloo for the CPU on a machine without a GPU)."""
    dist.init_process_group()
    try:
        assert dist.get_backend() == "undefined"
        expected = "cuda:nccl" if torch.accelerator.is_available() else "cpu:gloo"
        assert dist.get_backend_config() == expected
        if not torch.accelerator.is_available():
            t = torch.arange(3.0)
            dist.all_reduce(t)
            assert t.tolist() == [0.0, 1.0, 2.0]
    finally:
        dist.destroy_process_group()
    dist.init_process_group("cpu:gloo,cuda:nccl")
    try:
        assert dist.get_backend_config() == "cpu:gloo,cuda:nccl"
    finally:
        dist.destroy_process_group()


def test_a_world_of_one_process_needs_no_launcher():
    dist.init_process_group("gloo")
    try:
        assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")
        t = torch.arange(4.0)
        dist.all_reduce(t)
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
        out = [torch.zeros(4)]
        dist.all_gather(out, t)
        assert out[0].tolist() == t.tolist()
        objs = [None]
        dist.all_gather_object(objs, "x")
        assert objs == ["x"]
        with pytest.raises(ValueError, match="twice"):
            dist.init_process_group("gloo")
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()


def test_backend_names():
    assert dist.Backend("GLOO") == "gloo" and dist.Backend.NCCL == "nccl"
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.Backend("carrier-pigeon")


def _launch(script: Path, n: int = 2, timeout: int = 240, **env):
    pytest.importorskip("mpi4py")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), **env)
    return subprocess.run([sys.executable, "-m", "glasstorch.distributed.run",
                           "--nproc-per-node", str(n), str(script)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def _both_ranks_pass(script: str, word: str = "", **env) -> None:
    """Run a two-rank script; each rank prints "rank R <word>ok" when its checks passed."""
    result = _launch(HERE / script, **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"rank 0 {word}ok" in result.stdout and f"rank 1 {word}ok" in result.stdout


def test_two_ranks_every_collective():
    _both_ranks_pass("two_ranks_collectives.py")


def test_two_ranks_nccl_on_simulated_cuda(tmp_path):
    """Backend "cpu:gloo,cuda:nccl": CUDA tensors through the NCCL engine (CuPy simulated,
    NCCL played by fake_nccl.py), CPU tensors through MPI."""
    _both_ranks_pass("two_ranks_nccl.py", "nccl ", FAKE_NCCL_DIR=str(tmp_path))


def test_a_failing_rank_stops_the_job_and_is_named():
    result = _launch(HERE / "rank_one_fails.py")
    assert result.returncode != 0
    assert "rank one gives up" in result.stderr
    assert "rank 1 failed" in result.stderr


def test_ddp_on_two_ranks_equals_one_process_on_the_whole_batch():
    _both_ranks_pass("two_ranks_ddp.py", "ddp ")


def test_ddp_in_a_world_of_one_and_data_parallel():
    from glasstorch.nn.parallel import DistributedDataParallel
    dist.init_process_group("gloo")
    try:
        model = torch.nn.Linear(3, 2)
        ddp = DistributedDataParallel(model)
        x = torch.randn(4, 3)
        ddp(x).sum().backward()
        ref = torch.nn.Linear(3, 2)
        ref.load_state_dict(model.state_dict())
        ref(x).sum().backward()
        assert torch.allclose(model.weight.grad, ref.weight.grad)
        assert ddp.module is model
    finally:
        dist.destroy_process_group()
    dp = torch.nn.DataParallel(model)
    assert torch.equal(dp(x), model(x))


def test_distributed_sampler_reads_the_process_group():
    from glasstorch.utils.data import DistributedSampler
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(6))
    dist.init_process_group("gloo")
    try:
        sampler = DistributedSampler(range(6), shuffle=False)
        assert (sampler.num_replicas, sampler.rank, list(sampler)) == (1, 0, list(range(6)))
    finally:
        dist.destroy_process_group()


def test_ddp_gradients_as_bucket_views_and_buckets_rebuilt_in_ready_order():
    from glasstorch.nn.parallel import DistributedDataParallel
    dist.init_process_group("gloo")
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
        ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
        ref.load_state_dict(model.state_dict())
        ddp = DistributedDataParallel(model, gradient_as_bucket_view=True, bucket_cap_mb=1e-5)
        x = torch.randn(5, 3)
        for _ in range(2):                     # the second time accumulates into the views
            ddp(x).pow(2).sum().backward()
            ref(x).pow(2).sum().backward()
        for p, q in zip(model.parameters(), ref.parameters()):
            assert torch.allclose(p.grad, q.grad)
            bucket = ddp._bucket_of[id(p)]
            assert p.grad.untyped_storage().data_ptr() == bucket.buffer.untyped_storage().data_ptr()
        # The first backward produced gradients last layer first; the rebuilt buckets follow it.
        order = [p for b in ddp._buckets for p in b.params]
        assert order[0] is model[2].bias or order[0] is model[2].weight
        assert ddp._ready_order is None
    finally:
        dist.destroy_process_group()


def test_fsdp_on_two_ranks_equals_one_process_and_frees_gathered_parameters():
    _both_ranks_pass("two_ranks_fsdp.py", "fsdp ")


def test_fsdp_in_a_world_of_one_keeps_names_and_gradients():
    from glasstorch.distributed.fsdp import FullyShardedDataParallel as FSDP
    dist.init_process_group("gloo")
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        reference = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(),
                                        torch.nn.Linear(4, 2))
        reference.load_state_dict(model.state_dict())
        fsdp = FSDP(model)
        assert [n for n, _ in fsdp.named_parameters()] == ["_flat_param"]
        assert list(fsdp.state_dict()) == list(reference.state_dict())
        x = torch.randn(5, 3)
        fsdp(x).sum().backward()
        reference(x).sum().backward()
        flat_grad = torch.cat([p.grad.reshape(-1) for p in reference.parameters()])
        assert torch.allclose(fsdp._flat_param.grad, flat_grad)
        with pytest.raises(NotImplementedError, match="HYBRID"):
            FSDP(torch.nn.Linear(2, 2), sharding_strategy=torch.distributed.fsdp.ShardingStrategy.HYBRID_SHARD)
    finally:
        dist.destroy_process_group()


def test_device_mesh_in_a_world_of_one_as_pytorch():
    from glasstorch.distributed.device_mesh import init_device_mesh
    dist.init_process_group("gloo")
    try:
        mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
        assert repr(mesh) == "DeviceMesh((dp=1, tp=1), 'cpu', stride=((), ()))"
        assert repr(mesh["tp"]) == "DeviceMesh((tp=1), 'cpu', stride=((),))"
        assert mesh.mesh.dtype == torch.int32 and mesh["dp"].mesh.tolist() == [0]
        assert mesh.get_coordinate() == (0, 0) and mesh.shape == (1, 1) and mesh.ndim == 2
        with pytest.raises(RuntimeError, match="`mesh_dim` needs to be specified"):
            mesh.get_group()
        with pytest.raises(KeyError, match=r"Invalid mesh_dim_names \('xx',\) specified"):
            mesh["xx"]
        with pytest.raises(RuntimeError, match="Mesh should not be bigger than default world "
                                               "size 1, but found 2 ranks!"):
            init_device_mesh("cpu", (2,))
        with pytest.raises(RuntimeError, match="mesh_shape and mesh_dim_names should have "
                                               "same length!"):
            init_device_mesh("cpu", (1,), mesh_dim_names=("a", "b"))
        assert init_device_mesh("cpu", (1,)) == init_device_mesh("cpu", (1,))
    finally:
        dist.destroy_process_group()
