"""The NCCL engine (backend="nccl") in a world of one process, on simulated CuPy with NCCL
played by fake_nccl.py: which stream the calls go on and what waits for them, ProcessGroupNCCL's
errors, and the choice of engine by device. Two ranks: test_distributed.py runs
two_ranks_nccl.py; real NCCL on a GPU: scripts/gpu-check."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "cuda")]

import fake_nccl  # noqa: E402
import simulated_cupy  # noqa: E402
import glasstorch as torch  # noqa: E402
import glasstorch.distributed as dist  # noqa: E402
from glasstorch.backends.cuda import runtime  # noqa: E402

Op = dist.ReduceOp


@pytest.fixture
def cuda(monkeypatch, tmp_path):
    """Simulated CuPy with the fake NCCL for the test."""
    simulated_cupy.reset()
    monkeypatch.setattr(simulated_cupy.cuda, "nccl", fake_nccl, raising=False)
    monkeypatch.setenv("FAKE_NCCL_DIR", str(tmp_path))
    fake_nccl.calls.clear()
    fake_nccl.ops.clear()
    runtime.use_cupy(simulated_cupy)
    yield
    if dist.is_initialized():
        dist.destroy_process_group()
    runtime.use_cupy(None)


@pytest.fixture
def nccl(cuda):
    dist.init_process_group("nccl")
    yield


def test_collectives_run_on_the_communicators_stream_after_the_current_one(nccl, monkeypatch):
    waits, recorded = [], []
    monkeypatch.setattr(torch.cuda.Stream, "wait_stream",
                        lambda self, other: waits.append((self.cuda_stream, other.cuda_stream)))
    monkeypatch.setattr(torch.cuda.Event, "wait",
                        lambda self, stream=None: waits.append(("event", stream.cuda_stream)))
    monkeypatch.setattr(torch.Tensor, "record_stream",
                        lambda self, s: recorded.append((self.data_ptr(), s.cuda_stream)))
    current = torch.cuda.current_stream().cuda_stream
    t = torch.arange(4.0, device="cuda")
    dist.all_reduce(t)
    (call, nccl_stream), = fake_nccl.calls
    assert call == "allReduce" and nccl_stream != current
    # the NCCL stream waited for the current one, the tensor was marked as used on it, and
    # (async_op=False) the current stream waits for the collective's event
    assert waits == [(nccl_stream, current), ("event", current)]
    assert recorded == [(t.data_ptr(), nccl_stream)]
    waits.clear()
    work = dist.broadcast(t, src=0, async_op=True)
    assert waits == [(nccl_stream, current)]           # nothing waits until work.wait()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        assert work.wait()
    assert waits[-1] == ("event", side.cuda_stream)    # the stream current at wait()
    assert [s for _, s in fake_nccl.calls] == [nccl_stream] * 2   # one stream per communicator


def test_is_completed_queries_the_event(nccl, monkeypatch):
    work = dist.all_reduce(torch.ones(2, device="cuda"), async_op=True)
    assert work.is_completed()
    monkeypatch.setattr(torch.cuda.Event, "query", lambda self: False)
    assert not work.is_completed()
    assert work.result()[0].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("call, error, message", [
    (lambda: dist.all_reduce(torch.zeros(3)), RuntimeError,
     "No backend type associated with device type cpu"),
    (lambda: dist.all_reduce(torch.zeros(3, 4, device="cuda").t()), ValueError,
     "Tensors must be contiguous"),
    (lambda: dist.all_reduce(torch.zeros(2, device="cuda", dtype=torch.int16)), TypeError,
     "Input tensor data type is not supported for NCCL process group: Short"),
    (lambda: dist.all_reduce(torch.zeros(2, device="cuda"), op=Op.BXOR), ValueError,
     "Cannot use ReduceOp.BXOR with NCCL"),
    (lambda: dist.reduce(torch.zeros(2, device="cuda"), dst=0, op=Op.BAND), ValueError,
     "Cannot use ReduceOp.BAND with NCCL"),
    (lambda: dist.all_reduce(torch.zeros(2, device="cuda", dtype=torch.bool), op=Op.AVG),
     TypeError, "Cannot use ReduceOp.AVG with boolean inputs"),
    (lambda: dist.all_reduce(torch.zeros(2, device="cuda", dtype=torch.int32),
                             op=dist._make_nccl_premul_sum(2.0)), TypeError,
     "PreMulSum Data type must be half, float, or double"),
    (lambda: dist.all_reduce(torch.zeros(2, device="cuda"), op=Op.PREMUL_SUM), ValueError,
     "_make_nccl_premul_sum"),
    (lambda: dist.all_reduce(torch.zeros(2, device="cuda", dtype=torch.complex64),
                             op=Op.MAX), ValueError, "all_reduce does not support"),
    (lambda: dist.recv(torch.zeros(2, device="cuda")), RuntimeError,
     "ProcessGroupNCCL does not support recvAnysource"),
])
def test_pytorchs_errors_before_any_nccl_call(nccl, call, error, message):
    with pytest.raises(error, match=message):
        call()
    assert fake_nccl.calls == []


def test_world_of_one_values_and_objects(nccl):
    t = torch.arange(4.0, device="cuda")
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(3.0))
    assert t.tolist() == [0.0, 3.0, 6.0, 9.0]
    flags = torch.tensor([True, False], device="cuda")
    dist.all_reduce(flags)                              # SUM of bools goes as MAX of uint8
    assert flags.tolist() == [True, False] and fake_nccl.ops[-1] == fake_nccl.NCCL_MAX
    half = torch.ones(2, device="cuda", dtype=torch.float16)
    dist.all_reduce(half, op=Op.AVG)                    # NCCL's own average
    assert fake_nccl.ops[-1] == fake_nccl.NCCL_AVG and half.tolist() == [1.0, 1.0]
    objects = [None]
    dist.all_gather_object(objects, {"a": [1, 2]})
    assert objects == [{"a": [1, 2]}]
    items = ["x", 3]
    dist.broadcast_object_list(items)
    assert items == ["x", 3]
    dist.barrier()
    assert {name for name, _ in fake_nccl.calls} == {"allReduce", "allGather", "broadcast"}


def test_gloo_keeps_cuda_tensors_on_host_copies(cuda):
    dist.init_process_group("gloo")
    t = torch.arange(3.0, device="cuda")
    dist.all_reduce(t)
    assert t.device.type == "cuda" and t.tolist() == [0.0, 1.0, 2.0]
    assert fake_nccl.calls == []
    with pytest.raises(ValueError, match="only supported by NCCL"):
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))


def test_mixed_backend_picks_the_engine_by_device(cuda):
    dist.init_process_group("cpu:gloo,cuda:nccl")
    dist.all_reduce(torch.ones(2))
    assert fake_nccl.calls == []
    dist.all_reduce(torch.ones(2, device="cuda"))
    assert [name for name, _ in fake_nccl.calls] == ["allReduce"]
    dist.barrier()                                      # MPI's barrier: the CPU is served
    assert len(fake_nccl.calls) == 1


def test_nccl_needs_cupys_nccl(monkeypatch):
    simulated_cupy.reset()
    runtime.use_cupy(simulated_cupy)                    # simulated CuPy has no cuda.nccl
    try:
        assert not dist.is_nccl_available()
        with pytest.raises(RuntimeError, match="Distributed package doesn't have NCCL"):
            dist.init_process_group("nccl")
        assert not dist.is_initialized()
    finally:
        runtime.use_cupy(None)
