"""NCCL for CUDA tensors: what backend="nccl" (or the cuda half of "cpu:gloo,cuda:nccl") does,
through CuPy's bindings (`cupy.cuda.nccl`), with PyTorch's ProcessGroupNCCL semantics.

A group gets one NCCL communicator per GPU, made on the group's first collective on that GPU:
rank 0 draws NCCL's unique id and the group's MPI communicator (the job's launcher started the
ranks with mpirun, so MPI plays the part of PyTorch's store) hands it to the others. Each
communicator has its own stream. A collective makes that stream wait for the caller's
current stream (its inputs are ready), enqueues the NCCL call, marks the tensors as used on
it (the caching allocator must not reuse them early) and records an event: the CPU never
waits. `Work.wait()` makes the then-current stream wait for the event, `is_completed()`
queries it; a collective with async_op=False waits at once, so the caller's later kernels see
its result."""
from __future__ import annotations

import importlib
import pickle

import glasstorch

from ..backends.cuda import runtime


def module():
    """cupy.cuda.nccl of the CuPy in use (the backend's CuPy may be a stand-in in tests)."""
    cuda = runtime.cupy().cuda
    nccl = getattr(cuda, "nccl", None)
    if nccl is None:
        nccl = importlib.import_module(runtime.cupy().__name__ + ".cuda.nccl")
    return nccl


def available() -> bool:
    try:
        module()
    except Exception:       # no CuPy, or CuPy without NCCL's library
        return False
    return True


def check_contiguous(t) -> None:
    if not t.is_contiguous():
        raise ValueError("Tensors must be contiguous")


class Work:
    """The handle of an NCCL collective: an event recorded on the communicator's stream."""

    def __init__(self, event, device_index, result=None):
        self._event, self._device_index, self._result = event, device_index, result

    def wait(self, timeout=None) -> bool:
        """Make the current stream wait for the collective (the CPU goes on)."""
        self._event.wait(glasstorch.cuda.current_stream(self._device_index))
        return True

    def is_completed(self) -> bool:
        return self._event.query()

    def is_success(self) -> bool:
        return self.is_completed()

    def synchronize(self) -> None:
        self._event.synchronize()

    def result(self):
        self.wait()
        return self._result if self._result is not None else []

    def get_future(self):
        from glasstorch.futures import Future
        return Future(_complete=lambda: self.result())


class _PremulSum:
    """ReduceOp.PREMUL_SUM with its factor: every rank's tensor times factor, then summed
    (what torch.distributed._make_nccl_premul_sum makes)."""

    def __init__(self, factor):
        self.factor = factor


def _types(nccl):
    t = glasstorch
    return {t.float32: nccl.NCCL_FLOAT32, t.float64: nccl.NCCL_FLOAT64,
            t.float16: nccl.NCCL_FLOAT16, t.bfloat16: nccl.NCCL_BFLOAT16,
            t.int8: nccl.NCCL_INT8, t.uint8: nccl.NCCL_UINT8, t.int32: nccl.NCCL_INT32,
            t.int64: nccl.NCCL_INT64, t.bool: nccl.NCCL_UINT8,
            t.complex64: nccl.NCCL_FLOAT32, t.complex128: nccl.NCCL_FLOAT64}


_TYPE_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "int16": "Short", "uint16": "UInt16",
               "uint32": "UInt32", "uint64": "UInt64", "complex32": "ComplexHalf"}


class Engine:
    """The NCCL side of one process group."""

    def __init__(self, pg):
        self._pg = pg
        self._comms = {}          # device index -> (NcclCommunicator, glasstorch.cuda.Stream)
        self._nccl = module()
        self._type = _types(self._nccl)

    # ---- communicators and launching -------------------------------------------------------

    def _communicator(self, index: int):
        if index not in self._comms:
            pg = self._pg
            uid = self._nccl.get_unique_id() if pg.rank() == 0 else None
            uid = pg._comm.bcast(uid, root=0)
            with runtime.DeviceGuard(index):
                comm = self._nccl.NcclCommunicator(pg.size(), uid, pg.rank())
            self._comms[index] = (comm, glasstorch.cuda.Stream(index))
        return self._comms[index]

    def _buffer(self, t):
        """(device pointer, element count, NCCL type) of a CUDA tensor (complex as pairs)."""
        if t.device.type != "cuda":
            raise ValueError("Tensors must be CUDA and dense")
        nccl_type = self._type.get(t.dtype)
        if nccl_type is None:
            name = str(t.dtype).removeprefix("torch.")
            raise TypeError("Input tensor data type is not supported for NCCL process group: "
                            + _TYPE_NAMES.get(name, name.capitalize()))
        return t.data_ptr(), t.numel() * (2 if t.dtype.is_complex else 1), nccl_type

    def _launch(self, index, tensors, calls, async_op, result=None, grouped=False):
        """Enqueue calls(comm, stream_ptr) on device `index`'s NCCL stream after the current
        stream's work; a Work for async_op, else the current stream waits and None."""
        comm, stream = self._communicator(index)
        current = glasstorch.cuda.current_stream(index)
        stream.wait_stream(current)
        with glasstorch.cuda.stream(stream):
            if grouped:
                self._nccl.groupStart()
            try:
                calls(comm, stream.cuda_stream)
            finally:
                if grouped:
                    self._nccl.groupEnd()
        for t in tensors:
            t.record_stream(stream)
        event = glasstorch.cuda.Event()
        event.record(stream)
        work = Work(event, index, result)
        if async_op:
            return work
        work.wait()
        return None

    def _op(self, op, t, what="all_reduce"):
        """NCCL's reduction for op on t's type, as ProcessGroupNCCL maps it."""
        from .distributed_c10d import ReduceOp
        nccl = self._nccl
        if isinstance(op, _PremulSum):
            if t.dtype not in (glasstorch.float16, glasstorch.float32, glasstorch.float64):
                raise TypeError("PreMulSum Data type must be half, float, or double")
            return nccl.NCCL_SUM
        if not isinstance(op, ReduceOp):
            raise ValueError(f"Unsupported reduce op {op!r}")
        if t.dtype.is_complex and op not in (ReduceOp.SUM, ReduceOp.AVG):
            raise ValueError(f"{what} does not support {op} on complex tensors")
        if t.dtype is glasstorch.bool:
            if op is ReduceOp.SUM:            # uint8 carries bools: "any" is a max
                return nccl.NCCL_MAX
            if op is ReduceOp.AVG:
                raise TypeError("Cannot use ReduceOp.AVG with boolean inputs")
        if op is ReduceOp.PREMUL_SUM:
            raise ValueError("ReduceOp.PREMUL_SUM needs its factor: pass "
                             "torch.distributed._make_nccl_premul_sum(factor)")
        mapped = {ReduceOp.SUM: nccl.NCCL_SUM, ReduceOp.PRODUCT: nccl.NCCL_PROD,
                  ReduceOp.MIN: nccl.NCCL_MIN, ReduceOp.MAX: nccl.NCCL_MAX,
                  ReduceOp.AVG: nccl.NCCL_AVG}.get(op)
        if mapped is None:
            raise ValueError(f"Cannot use ReduceOp.{op.name} with NCCL")
        return mapped

    @staticmethod
    def _premultiplied(op, t):
        """t as PREMUL_SUM reads it: a scaled copy, or t itself for other ops."""
        return t * op.factor if isinstance(op, _PremulSum) else t

    # ---- collectives -----------------------------------------------------------------------

    def all_reduce(self, t, op, async_op):
        check_contiguous(t)
        ptr, n, dtype = self._buffer(t)
        nop = self._op(op, t)

        def calls(comm, s):
            src = self._premultiplied(op, t)
            comm.allReduce(src.data_ptr(), ptr, n, dtype, nop, s)
        return self._launch(t.device.index, [t], calls, async_op, [t])

    def broadcast(self, t, root, async_op):
        check_contiguous(t)
        ptr, n, dtype = self._buffer(t)
        return self._launch(t.device.index, [t],
                            lambda comm, s: comm.broadcast(ptr, ptr, n, dtype, root, s),
                            async_op, [t])

    def reduce(self, t, root, op, async_op):
        check_contiguous(t)
        ptr, n, dtype = self._buffer(t)
        nop = self._op(op, t, "reduce")

        def calls(comm, s):
            src = self._premultiplied(op, t)
            comm.reduce(src.data_ptr(), ptr, n, dtype, nop, root, s)
        return self._launch(t.device.index, [t], calls, async_op, [t])

    def all_gather_into_tensor(self, out, t, async_op):
        for x in (out, t):
            check_contiguous(x)
        src, n, dtype = self._buffer(t)
        dst = self._buffer(out)[0]
        return self._launch(t.device.index, [out, t],
                            lambda comm, s: comm.allGather(src, dst, n, dtype, s),
                            async_op, [out])

    def all_gather(self, outs, t, async_op):
        """Every rank broadcasts its tensor into the others' outs (sizes may differ)."""
        for x in (t, *outs):
            check_contiguous(x)
        me = self._pg.rank()

        def calls(comm, s):
            for root, out in enumerate(outs):
                if root == me:
                    out.copy_(t)
                ptr, n, dtype = self._buffer(out)
                comm.broadcast(ptr, ptr, n, dtype, root, s)
        return self._launch(t.device.index, [t, *outs], calls, async_op, [outs], grouped=True)

    def reduce_scatter_tensor(self, out, t, op, async_op):
        for x in (out, t):
            check_contiguous(x)
        dst, n, dtype = self._buffer(out)
        nop = self._op(op, t, "reduce_scatter")

        def calls(comm, s):
            src = self._premultiplied(op, t)
            comm.reduceScatter(src.data_ptr(), dst, n, dtype, nop, s)
        return self._launch(t.device.index, [out, t], calls, async_op, [out])

    def reduce_scatter(self, out, ins, op, async_op):
        """Rank r's out is the reduction of everyone's ins[r]: one reduce per rank."""
        for x in (out, *ins):
            check_contiguous(x)
        me = self._pg.rank()
        nop = self._op(op, out, "reduce_scatter")

        def calls(comm, s):
            for root, x in enumerate(ins):
                src = self._premultiplied(op, x)
                ptr, n, dtype = self._buffer(src)
                dst = out.data_ptr() if root == me else ptr
                comm.reduce(ptr, dst, n, dtype, nop, root, s)
        return self._launch(out.device.index, [out, *ins], calls, async_op, [out],
                            grouped=True)

    def exchange(self, sends, recvs, device_index, async_op, result=None):
        """Point-to-point in one NCCL group: sends/recvs are lists of (peer, tensor)."""
        tensors = [t for _, t in sends + recvs]
        for t in tensors:
            check_contiguous(t)

        def calls(comm, s):
            for peer, t in sends:
                ptr, n, dtype = self._buffer(t)
                comm.send(ptr, n, dtype, peer, s)
            for peer, t in recvs:
                ptr, n, dtype = self._buffer(t)
                comm.recv(ptr, n, dtype, peer, s)
        return self._launch(device_index, tensors, calls, async_op, result,
                            grouped=len(tensors) > 1)

    def recv(self, peer, t):
        """Receive into t (a non-contiguous t through a contiguous buffer, copied back on the
        NCCL stream after the receive)."""
        buf = t if t.is_contiguous() else glasstorch.empty(tuple(t.shape), dtype=t.dtype,
                                                             device=t.device)

        def calls(comm, s):
            ptr, n, dtype = self._buffer(buf)
            comm.recv(ptr, n, dtype, peer, s)
            if buf is not t:
                t.copy_(buf)
        return self._launch(t.device.index, [t, buf], calls, True, [t])

    def barrier(self, device_ids, async_op):
        """An all-reduce of one element on this rank's GPU that the CPU waits for (or, with
        async_op, the work to wait for)."""
        from .distributed_c10d import ReduceOp
        index = device_ids[0] if device_ids else runtime.current_device()
        work = self.all_reduce(glasstorch.zeros(1, device=f"cuda:{index}"), ReduceOp.SUM, True)
        if async_op:
            return work
        work.synchronize()
        return None

    def destroy(self):
        for comm, _ in self._comms.values():
            comm.destroy()
        self._comms.clear()


# ---- Python objects as bytes on the current GPU (ProcessGroupNCCL's object collectives) -------

def object_to_tensor(obj, device):
    data = pickle.dumps(obj)
    return glasstorch.frombuffer(bytearray(data), dtype=glasstorch.uint8).to(device)


def tensor_to_object(t, size: int):
    return pickle.loads(t[:size].cpu().numpy().tobytes())
