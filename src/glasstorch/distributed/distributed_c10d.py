"""torch.distributed's process groups and collectives (PyTorch's c10d API) over the
transports in _transport.py: Open MPI for a world of several processes, a loopback for one.

Programs written for PyTorch's CPU backend say backend="gloo"; that name (and "mpi") is
served by the MPI engine. "nccl" sends CUDA tensors through NCCL (_nccl.py), and a backend
per device type ("cpu:gloo,cuda:nccl") picks the engine by the tensor's device. For MPI,
tensors are staged as contiguous NumPy arrays: a contiguous CPU tensor of a type MPI knows is
communicated in place; others (strided, float16, bfloat16, bool, CUDA) through a contiguous
host copy written back when the work completes."""
from __future__ import annotations

import datetime
import enum
import os
import time

import numpy as np

import glasstorch

from . import _nccl, _transport

__all__ = ["Backend", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError",
           "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather",
           "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
           "all_to_all_single", "barrier", "broadcast", "broadcast_object_list",
           "destroy_process_group", "gather", "gather_object", "get_backend",
           "get_backend_config", "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank",
           "get_world_size", "group", "init_process_group", "irecv", "is_available",
           "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "is_torchelastic_launched", "isend", "monitored_barrier", "new_group", "recv",
           "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
           "scatter_object_list", "send"]

default_pg_timeout = datetime.timedelta(minutes=30)


class DistError(RuntimeError):
    """torch.distributed.DistError: an error of the distributed package."""


class DistBackendError(DistError):
    """An error in the communication backend (a rank failed, a collective timed out)."""


class DistNetworkError(DistError):
    """An error reaching another process."""


class DistStoreError(DistError):
    """An error of the key-value store used at initialisation."""


class ReduceOp(enum.Enum):
    """How all_reduce, reduce and reduce_scatter combine the ranks' values."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"

    def __str__(self):
        return f"RedOpType.{self.name}"


class Backend(str):
    """A backend name, lower-cased and checked ('gloo', 'mpi', 'nccl'; 'cpu:gloo,cuda:nccl')."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    _KNOWN = ("gloo", "nccl", "mpi")

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: "
                             f"{type(name)}")
        value = name.lower()
        names = [p.split(":")[-1] for p in value.split(",")]
        if value != "undefined" and any(n not in cls._KNOWN for n in names):
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, value)


class GroupMember:
    """GroupMember.WORLD is the default group; NON_GROUP_MEMBER what new_group gives a rank
    it does not include."""
    WORLD = None
    NON_GROUP_MEMBER = -100


def _device_backends(backend: str) -> dict:
    """Which engine serves each device type: "nccl" serves CUDA only, "gloo" and "mpi" both
    (CUDA tensors through host copies), "cpu:gloo,cuda:nccl" as written, and "undefined" (no
    backend named) the machine's accelerator's backend, as PyTorch's BackendConfig: NCCL for
    CUDA where there is a GPU, otherwise gloo for the CPU."""
    if backend == Backend.UNDEFINED:
        from glasstorch import accelerator
        return {"cuda": "nccl"} if accelerator.is_available() else {"cpu": "gloo"}
    if ":" in backend:
        return dict(part.split(":") for part in backend.split(","))
    return {"cuda": "nccl"} if backend == "nccl" else {"cpu": backend, "cuda": backend}


class ProcessGroup:
    """A set of ranks and the communicator that joins them (MPI's, or the loopback), and,
    made on first use, the NCCL engine its CUDA collectives go through."""

    def __init__(self, comm, ranks: list, backend: str):
        self._comm = comm
        self._ranks = list(ranks)              # global ranks, in group-rank order
        self._backend = Backend(backend)
        self._device_backends = _device_backends(self._backend)
        self._nccl = None
        self._in_place = _transport.IN_PLACE if isinstance(
            comm, _transport.LoopbackComm) else _transport.mpi().IN_PLACE

    def _engine_for(self, t):
        """The NCCL engine when `t` travels through NCCL; None when through MPI."""
        _check_tensor(t)
        kind = self._device_backends.get(t.device.type)
        if kind is None:
            raise RuntimeError(f"No backend type associated with device type {t.device.type}")
        return self._nccl_engine() if kind == "nccl" else None

    def _nccl_engine(self):
        if self._nccl is None:
            self._nccl = _nccl.Engine(self)
        return self._nccl

    def _free(self):
        if self._nccl is not None:
            self._nccl.destroy()
        self._comm.Free()

    def rank(self) -> int:
        return self._comm.Get_rank()

    def size(self) -> int:
        return self._comm.Get_size()

    def name(self) -> str:
        return self._backend

    def __repr__(self):
        return f"<ProcessGroup {self._backend} ranks={self._ranks}>"


class _World:
    default_pg: ProcessGroup | None = None
    groups: list = []


_world = _World()


class _GroupNamespace(type):
    @property
    def WORLD(cls):
        return _world.default_pg


class group(metaclass=_GroupNamespace):
    """torch.distributed.group: group.WORLD is the default process group."""


class Work:
    """The handle of a collective started with async_op=True."""

    def __init__(self, request, finish=None, result=None):
        self._request, self._finish, self._done = request, finish, False
        self._result = result

    def wait(self, timeout=None) -> bool:
        if not self._done:
            self._request.Wait()
            if self._finish is not None:
                self._finish()
            self._done = True
        return True

    def is_completed(self) -> bool:
        if not self._done and self._request.Test():
            self.wait()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed()

    def result(self):
        self.wait()
        return self._result if self._result is not None else []

    def get_future(self):
        """A torch.futures.Future completed by waiting on this work (its value: result())."""
        from glasstorch.futures import Future
        return Future(_complete=lambda: self.result())


# ---- availability and the default group --------------------------------------------------

def is_available() -> bool:
    return True


def is_mpi_available() -> bool:
    try:
        _transport.mpi()
    except ImportError:
        return False
    return True


is_gloo_available = is_mpi_available       # "gloo" is served by the MPI engine


def is_nccl_available() -> bool:
    return _nccl.available()


def is_torchelastic_launched() -> bool:
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    return _world.default_pg is not None


def _default() -> ProcessGroup:
    if _world.default_pg is None:
        raise ValueError("Default process group has not been initialized, please make sure "
                         "to call init_process_group.")
    return _world.default_pg


def _env_int(name: str, given: int) -> int:
    if given is not None and given >= 0:
        return given
    value = os.environ.get(name)
    return int(value) if value is not None else -1


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join this process to the default group. A world of one process needs nothing else;
    several processes must be started by `python -m glasstorch.distributed.run` (torchrun's
    contract) or `mpirun`, whose MPI world is the process group."""
    if _world.default_pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    backend = Backend(backend or Backend.UNDEFINED)
    # Only a backend that is NCCL for every device needs it: "cpu:gloo,cuda:nccl" (PyTorch's
    # default with GPUs) still serves CPU tensors on a machine without CuPy's NCCL.
    if set(_device_backends(backend).values()) == {"nccl"} and not is_nccl_available():
        raise RuntimeError("Distributed package doesn't have NCCL built in")
    world_size = _env_int("WORLD_SIZE", world_size)
    rank = _env_int("RANK", rank)
    if init_method is not None and not init_method.startswith(("env://", "file://", "tcp://")):
        raise ValueError(f"unsupported init_method {init_method!r}: env://, file:// and "
                         "tcp:// are understood")
    mpi_size = _mpi_world_size()
    if world_size in (-1, 1) and mpi_size in (None, 1):
        if rank not in (-1, 0):
            raise ValueError(f"rank {rank} in a world of one process")
        _world.default_pg = ProcessGroup(_transport.LoopbackComm(), [0], backend)
        return
    if mpi_size is None or mpi_size == 1:
        raise DistNetworkError(
            f"init_process_group: world_size={world_size} but this process was not started "
            "with its peers: start the job with `python -m glasstorch.distributed.run "
            f"--nproc-per-node {world_size} script.py` (or mpirun -n {world_size})")
    MPI = _transport.mpi()
    comm = MPI.COMM_WORLD.Dup()
    if world_size not in (-1, comm.Get_size()):
        raise ValueError(f"world_size={world_size} but the job has {comm.Get_size()} processes")
    if rank not in (-1, comm.Get_rank()):
        raise ValueError(f"rank={rank} but MPI gave this process rank {comm.Get_rank()}")
    _world.default_pg = ProcessGroup(comm, range(comm.Get_size()), backend)


def _mpi_world_size():
    """The size of the MPI job this process belongs to, without starting MPI if it was not
    launched by mpirun (OMPI_/PMI_ variables), or None."""
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"):
        if name in os.environ:
            return int(os.environ[name])
    return None


def destroy_process_group(group=None) -> None:
    """Free a group's communicator; with no group, the default group and every other."""
    if group is None or group is _world.default_pg:
        for pg in _world.groups + ([_world.default_pg] if _world.default_pg else []):
            pg._free()
        _world.groups, _world.default_pg = [], None
        return
    group._free()
    _world.groups = [g for g in _world.groups if g is not group]


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization: bool = False, group_desc=None, device_id=None,
              sort_ranks: bool = True):
    """A group of some ranks (every rank must call it). Ranks outside it get
    GroupMember.NON_GROUP_MEMBER."""
    world = _default()
    size = world.size()
    ranks = list(range(size)) if ranks is None else list(ranks)
    if sort_ranks:
        ranks = sorted(ranks)
    for r in ranks:
        if r < 0 or r >= size:
            raise ValueError("The new group's rank should be within the world_size set by "
                             "init_process_group")
    if isinstance(world._comm, _transport.LoopbackComm):
        pg = ProcessGroup(_transport.LoopbackComm(), ranks, backend or world._backend)
        _world.groups.append(pg)
        return pg
    comm = world._comm.Create_group(world._comm.Get_group().Incl(ranks))
    if world.rank() not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, ranks, backend or world._backend)
    _world.groups.append(pg)
    return pg


def _group(group) -> ProcessGroup | None:
    """The group to use, or None for a rank outside it (the call is then a no-op)."""
    if group is None or group is GroupMember.WORLD:
        return _default()
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    return group


def get_rank(group=None) -> int:
    pg = _group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    pg = _group(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None) -> str:
    pg = _group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg._backend


def get_backend_config(group=None) -> str:
    """Which backend serves each device type in `group`, as "device:backend" pairs joined by
    commas (what a group made without naming its backend resolved to)."""
    pg = _group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return ",".join(f"{device}:{name}" for device, name in pg._device_backends.items())


def get_process_group_ranks(group) -> list:
    return list(_group(group)._ranks)


def get_global_rank(group, group_rank: int) -> int:
    pg = _group(group)
    if group_rank < 0 or group_rank >= len(pg._ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
    return pg._ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    pg = _group(group)
    if global_rank not in pg._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return pg._ranks.index(global_rank)


def _peer(pg, rank, group_rank, what: str) -> int:
    """A peer's rank inside `pg`, given as a global rank or as group_<what>."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"Can not specify both {what} and group_{what}")
        return group_rank
    if rank is None:
        return 0
    return pg._ranks.index(rank) if rank in pg._ranks else _bad_peer(pg, rank)


def _bad_peer(pg, rank):
    raise ValueError(f"Global rank {rank} is not part of group {pg}")


# ---- staging tensors as NumPy buffers ----------------------------------------------------

_NATIVE = {glasstorch.float32, glasstorch.float64, glasstorch.int8, glasstorch.int16,
           glasstorch.int32, glasstorch.int64, glasstorch.uint8, glasstorch.complex64,
           glasstorch.complex128}
# What the types MPI has no reduction for travel as (reduced there, rounded back after).
_TRAVELS_AS = {glasstorch.float16: glasstorch.float32, glasstorch.bfloat16: glasstorch.float32,
               glasstorch.bool: glasstorch.uint8}


def _check_tensor(t, name: str = "tensor"):
    if not isinstance(t, glasstorch.Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor\n             but got {type(t)} instead.")


def _staged(t):
    """(a contiguous NumPy buffer holding t's values, a function writing it back into t).
    A contiguous CPU tensor of an MPI type is its own buffer: nothing to write back."""
    _check_tensor(t)
    t = t.detach()
    if t.device.type == "cpu" and t.dtype in _NATIVE and t.is_contiguous():
        return t.numpy(), None
    host = t.to("cpu", _TRAVELS_AS.get(t.dtype, t.dtype))
    buf = np.ascontiguousarray(host.numpy())

    def write_back():
        t.copy_(glasstorch.from_numpy(buf).to(t.dtype))
    return buf, write_back


def _then(*steps):
    steps = [s for s in steps if s is not None]
    return (lambda: [s() for s in steps]) if steps else None


def _mpi_op(op, dtype):
    if isinstance(op, _nccl._PremulSum):
        raise ValueError("ReduceOp.PREMUL_SUM is only supported by NCCL")
    if isinstance(op, ReduceOp) is False:
        raise ValueError(f"Unsupported reduce op {op!r}")
    if op is ReduceOp.PREMUL_SUM:
        raise ValueError("ReduceOp.PREMUL_SUM is only supported by NCCL")
    MPI = _transport.mpi()
    if dtype is glasstorch.bool:          # logical: a sum of bools is "any", a product "all"
        return {ReduceOp.SUM: MPI.LOR, ReduceOp.PRODUCT: MPI.LAND, ReduceOp.MIN: MPI.LAND,
                ReduceOp.MAX: MPI.LOR, ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR,
                ReduceOp.BXOR: MPI.BXOR, ReduceOp.AVG: MPI.LOR}[op]
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
            ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[op]


def _make_nccl_premul_sum(factor):
    """ReduceOp.PREMUL_SUM with its factor (NCCL only): each rank's tensor times factor, then
    summed."""
    return _nccl._PremulSum(factor)


def _reduce_args(pg, op, t):
    if isinstance(pg._comm, _transport.LoopbackComm):
        if op is ReduceOp.PREMUL_SUM or isinstance(op, _nccl._PremulSum):
            raise ValueError("ReduceOp.PREMUL_SUM is only supported by NCCL")
        return None
    return _mpi_op(op, t.dtype)


def _average(pg, op, t, buf):
    """AVG is a SUM divided by the group size (floating types only)."""
    if op is not ReduceOp.AVG:
        return None
    if not (t.dtype.is_floating_point or t.dtype.is_complex):
        raise ValueError(f"ReduceOp.AVG needs a floating-point tensor, got {t.dtype}")
    size = pg.size()

    def divide():
        np.divide(buf, size, out=buf)
    return divide


def _finish(pg, request, finish, async_op, result=None):
    work = Work(request, finish, result)
    if async_op:
        return work
    work.wait()
    return None


# ---- collectives -------------------------------------------------------------------------

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Every rank's tensor becomes the reduction of all of them."""
    pg = _group(group)
    if pg is None:
        return None
    if (nccl := pg._engine_for(tensor)) is not None:
        return nccl.all_reduce(tensor, op, async_op)
    buf, back = _staged(tensor)
    mpi_op = _reduce_args(pg, op, tensor)
    request = pg._comm.Iallreduce(pg._in_place, buf, op=mpi_op)
    return _finish(pg, request, _then(_average(pg, op, tensor, buf), back), async_op,
                   [tensor])


def broadcast(tensor, src=None, group=None, async_op: bool = False, group_src=None):
    """Every rank's tensor becomes rank src's."""
    pg = _group(group)
    if pg is None:
        return None
    root = _peer(pg, src, group_src, "src")
    if (nccl := pg._engine_for(tensor)) is not None:
        return nccl.broadcast(tensor, root, async_op)
    buf, back = _staged(tensor)
    return _finish(pg, pg._comm.Ibcast(buf, root=root), back, async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst=None):
    """Rank dst's tensor becomes the reduction of all ranks' (the others keep theirs)."""
    pg = _group(group)
    if pg is None:
        return None
    root = _peer(pg, dst, group_dst, "dst")
    if (nccl := pg._engine_for(tensor)) is not None:
        return nccl.reduce(tensor, root, op, async_op)
    buf, back = _staged(tensor)
    mpi_op = _reduce_args(pg, op, tensor)
    if pg.rank() == root:
        request = pg._comm.Ireduce(pg._in_place, buf, op=mpi_op, root=root)
        finish = _then(_average(pg, op, tensor, buf), back)
    else:
        request = pg._comm.Ireduce(buf, None, op=mpi_op, root=root)
        finish = None
    return _finish(pg, request, finish, async_op)


def _counts(tensors):
    counts = [t.numel() for t in tensors]
    displs = list(np.cumsum([0] + counts[:-1]))
    return counts, displs


def _flat_like(tensors, dtype):
    """One host buffer for a list of tensors, in the dtype they travel as."""
    return np.empty(sum(t.numel() for t in tensors), dtype=_TRAVELS_AS.get(dtype, dtype).np)


def _scatter_back(flat, tensors, counts, displs):
    def write():
        for t, n, d in zip(tensors, counts, displs):
            t.detach().copy_(glasstorch.from_numpy(flat[d:d + n].reshape(tuple(t.shape)))
                             .to(t.dtype))
    return write


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """tensor_list[i] becomes rank i's tensor (sizes may differ between ranks)."""
    pg = _group(group)
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors for a group "
                         f"of {pg.size()}")
    if (nccl := pg._engine_for(tensor)) is not None:
        return nccl.all_gather(tensor_list, tensor, async_op)
    send, _ = _staged(tensor)
    counts, displs = _counts(tensor_list)
    flat = _flat_like(tensor_list, tensor.dtype)
    request = pg._comm.Iallgatherv(send, [flat, (counts, displs)])
    return _finish(pg, request, _scatter_back(flat, tensor_list, counts, displs), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """output_tensor (world_size times input's numel, concatenated or stacked) gets every
    rank's input in rank order."""
    pg = _group(group)
    if pg is None:
        return None
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor "
                         "size")
    if (nccl := pg._engine_for(input_tensor)) is not None:
        return nccl.all_gather_into_tensor(output_tensor, input_tensor, async_op)
    send, _ = _staged(input_tensor)
    recv, back = _staged(output_tensor)
    n = input_tensor.numel()
    counts, displs = [n] * pg.size(), [n * i for i in range(pg.size())]
    request = pg._comm.Iallgatherv(send, [recv.reshape(-1), (counts, displs)])
    return _finish(pg, request, back, async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op: bool = False,
           group_dst=None):
    """Rank dst's gather_list[i] becomes rank i's tensor."""
    pg = _group(group)
    if pg is None:
        return None
    root = _peer(pg, dst, group_dst, "dst")
    _check_root_list(pg.rank() == root, gather_list, pg.size(), "gather_list", "destination")
    if (nccl := pg._engine_for(tensor)) is not None:
        recvs = list(enumerate(gather_list)) if pg.rank() == root else []
        return nccl.exchange([(root, tensor)], recvs, tensor.device.index, async_op)
    send, _ = _staged(tensor)
    if pg.rank() == root:
        counts, displs = _counts(gather_list)
        flat = _flat_like(gather_list, tensor.dtype)
        request = pg._comm.Igatherv(send, [flat, (counts, displs)], root=root)
        finish = _scatter_back(flat, gather_list, counts, displs)
    else:
        request = pg._comm.Igatherv(send, None, root=root)
        finish = None
    return _finish(pg, request, finish, async_op)


def _check_root_list(is_root: bool, tensors, size: int, name: str, role: str) -> None:
    """gather's and scatter's list: given with one tensor per rank on the root, nowhere else."""
    if is_root and (tensors is None or len(tensors) != size):
        raise ValueError(f"Argument ``{name}`` must be specified on {role} rank.")
    if not is_root and tensors:
        raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{role} ranks.")


def scatter(tensor, scatter_list=None, src=None, group=None, async_op: bool = False,
            group_src=None):
    """Rank i's tensor becomes rank src's scatter_list[i]."""
    pg = _group(group)
    if pg is None:
        return None
    root = _peer(pg, src, group_src, "src")
    _check_root_list(pg.rank() == root, scatter_list, pg.size(), "scatter_list", "source")
    if (nccl := pg._engine_for(tensor)) is not None:
        sends = list(enumerate(scatter_list)) if pg.rank() == root else []
        return nccl.exchange(sends, [(root, tensor)], tensor.device.index, async_op)
    recv, back = _staged(tensor)
    if pg.rank() == root:
        counts, displs = _counts(scatter_list)
        flat = np.concatenate([_staged(t.contiguous())[0].reshape(-1) for t in scatter_list])
        request = pg._comm.Iscatterv([flat, (counts, displs)], recv, root=root)
    else:
        request = pg._comm.Iscatterv(None, recv, root=root)
    return _finish(pg, request, back, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Rank i's output becomes the reduction, over ranks, of chunk i of their inputs."""
    pg = _group(group)
    if pg is None:
        return None
    if input.numel() != output.numel() * pg.size():
        raise ValueError("input tensor must be the same size as output size times world size")
    if (nccl := pg._engine_for(input)) is not None:
        return nccl.reduce_scatter_tensor(output, input, op, async_op)
    send, _ = _staged(input)
    recv, back = _staged(output)
    mpi_op = _reduce_args(pg, op, output)
    request = pg._comm.Ireduce_scatter(send, recv, recvcounts=[output.numel()] * pg.size(),
                                       op=mpi_op)
    return _finish(pg, request, _then(_average(pg, op, output, recv), back), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Rank i's output becomes the reduction, over ranks, of their input_list[i]."""
    pg = _group(group)
    if pg is None:
        return None
    if (nccl := pg._engine_for(output)) is not None:
        return nccl.reduce_scatter(output, input_list, op, async_op)
    flat = glasstorch.cat([t.reshape(-1) for t in input_list])
    send, _ = _staged(flat)
    recv, back = _staged(output)
    mpi_op = _reduce_args(pg, op, output)
    request = pg._comm.Ireduce_scatter(send, recv, recvcounts=[t.numel() for t in input_list],
                                       op=mpi_op)
    return _finish(pg, request, _then(_average(pg, op, output, recv), back), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op: bool = False):
    """Rank i sends chunk j of its input (along dim 0) to rank j, and receives into chunk j
    of its output what rank j sent it."""
    pg = _group(group)
    if pg is None:
        return None
    size = pg.size()
    row_in = input[0].numel() if input.dim() and input.shape[0] else 0
    row_out = output[0].numel() if output.dim() and output.shape[0] else 0
    in_rows = input_split_sizes or [input.shape[0] // size] * size
    out_rows = output_split_sizes or [output.shape[0] // size] * size
    if (nccl := pg._engine_for(input)) is not None:
        return nccl.exchange(list(enumerate(input.split(in_rows))),
                             list(enumerate(output.split(out_rows))), input.device.index,
                             async_op)
    scounts = [r * row_in for r in in_rows]
    rcounts = [r * row_out for r in out_rows]
    send, _ = _staged(input.contiguous())
    recv, back = _staged(output)
    request = pg._comm.Ialltoallv(
        [send.reshape(-1), (scounts, list(np.cumsum([0] + scounts[:-1])))],
        [recv.reshape(-1), (rcounts, list(np.cumsum([0] + rcounts[:-1])))])
    return _finish(pg, request, back, async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """Rank i sends input_tensor_list[j] to rank j, which receives it as
    output_tensor_list[i]."""
    pg = _group(group)
    if pg is None:
        return None
    if (nccl := pg._engine_for(input_tensor_list[0])) is not None:
        return nccl.exchange(list(enumerate(input_tensor_list)),
                             list(enumerate(output_tensor_list)),
                             input_tensor_list[0].device.index, async_op)
    send = np.concatenate([_staged(t.contiguous())[0].reshape(-1) for t in input_tensor_list])
    scounts, sdispls = _counts(input_tensor_list)
    rcounts, rdispls = _counts(output_tensor_list)
    flat = _flat_like(output_tensor_list, output_tensor_list[0].dtype)
    request = pg._comm.Ialltoallv([send, (scounts, sdispls)], [flat, (rcounts, rdispls)])
    return _finish(pg, request, _scatter_back(flat, output_tensor_list, rcounts, rdispls),
                   async_op)


def barrier(group=None, async_op: bool = False, device_ids=None, timeout=None):
    """Wait until every rank of the group reaches it."""
    pg = _group(group)
    if pg is None:
        return None
    if "cpu" not in pg._device_backends:       # NCCL only: a collective on this rank's GPU
        return pg._nccl_engine().barrier(device_ids, async_op)
    return _finish(pg, pg._comm.Ibarrier(), None, async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False) -> None:
    """A barrier that fails on rank 0 with the ranks that did not arrive within `timeout`."""
    pg = _group(group)
    if pg is None or pg.size() == 1:
        return None
    seconds = (timeout or default_pg_timeout).total_seconds()
    me = pg.rank()
    token = np.zeros(1, dtype=np.uint8)
    if me != 0:
        pg._comm.Isend(token, dest=0, tag=0x4D42).Wait()
        pg._comm.Irecv(token, source=0, tag=0x4D42 + 1).Wait()
        return None
    pending = {r: pg._comm.Irecv(np.zeros(1, dtype=np.uint8), source=r, tag=0x4D42)
               for r in range(1, pg.size())}
    deadline = time.monotonic() + seconds
    while pending and time.monotonic() < deadline:
        pending = {r: q for r, q in pending.items() if not q.Test()}
        if pending:
            time.sleep(0.001)
    if pending:
        missing = sorted(pg._ranks[r] for r in pending)
        if wait_all_ranks:
            raise DistBackendError(f"[Rank 0]: Ranks {', '.join(map(str, missing))} failed to "
                                   f"pass monitoredBarrier in {int(seconds * 1000)} ms")
        raise DistBackendError(f"[Rank 0]: Rank {missing[0]} failed to pass monitoredBarrier "
                               f"in {int(seconds * 1000)} ms")
    for r in range(1, pg.size()):
        pg._comm.Isend(token, dest=r, tag=0x4D42 + 1).Wait()
    return None


# ---- point to point ----------------------------------------------------------------------

def isend(tensor, dst=None, group=None, tag: int = 0, group_dst=None):
    pg = _group(group)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst")
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: should not be the same as the rank of the "
                         "current process.")
    if (nccl := pg._engine_for(tensor)) is not None:
        return nccl.exchange([(peer, tensor.contiguous())], [], tensor.device.index, True)
    buf, _ = _staged(tensor.contiguous())
    return Work(pg._comm.Isend(buf, dest=peer, tag=tag), None)


def irecv(tensor, src=None, group=None, tag: int = 0, group_src=None):
    """Receive into tensor when the work completes; from any rank when src is None."""
    pg = _group(group)
    if pg is None:
        return None
    if (nccl := pg._engine_for(tensor)) is not None:
        if src is None and group_src is None:
            raise RuntimeError("ProcessGroupNCCL does not support recvAnysource")
        return nccl.recv(_peer(pg, src, group_src, "src"), tensor)
    buf, back = _staged(tensor)
    if src is None and group_src is None:
        peer = _transport.mpi().ANY_SOURCE
    else:
        peer = _peer(pg, src, group_src, "src")
    return Work(pg._comm.Irecv(buf, source=peer, tag=tag), back)


def send(tensor, dst=None, group=None, tag: int = 0, group_dst=None) -> None:
    """Blocking send of tensor to rank dst."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag: int = 0, group_src=None) -> int:
    """Blocking receive into tensor; returns the sender's rank (any rank when src is None)."""
    pg = _group(group)
    if pg is None:
        return -1
    if src is not None or group_src is not None or pg._engine_for(tensor) is not None:
        irecv(tensor, src, group, tag, group_src).wait()
        return pg._ranks[_peer(pg, src, group_src, "src")]
    buf, back = _staged(tensor)
    MPI = _transport.mpi()
    status = MPI.Status()
    pg._comm.Recv(buf, source=MPI.ANY_SOURCE, tag=tag, status=status)
    if back is not None:
        back()
    return pg._ranks[status.Get_source()]


# ---- Python objects ----------------------------------------------------------------------
# Pickled. An MPI group moves the pickles itself; an NCCL-only group moves them as uint8
# tensors on the current GPU, as PyTorch's does.

def _object_device(pg):
    if "cpu" in pg._device_backends:
        return None
    from glasstorch.backends.cuda import runtime
    return glasstorch.device("cuda", runtime.current_device())


def all_gather_object(object_list, obj, group=None) -> None:
    """object_list[i] becomes rank i's obj (pickled)."""
    pg = _group(group)
    if pg is None:
        return None
    device = _object_device(pg)
    if device is None:
        object_list[:] = pg._comm.allgather(obj)
        return None
    data = _nccl.object_to_tensor(obj, device)
    sizes = glasstorch.zeros(pg.size(), dtype=glasstorch.int64, device=device)
    all_gather_into_tensor(sizes, glasstorch.tensor([data.numel()], device=device), group=pg)
    sizes = sizes.tolist()
    longest = max(sizes)
    padded = glasstorch.zeros(longest, dtype=glasstorch.uint8, device=device)
    padded[:data.numel()] = data
    gathered = glasstorch.empty(longest * pg.size(), dtype=glasstorch.uint8, device=device)
    all_gather_into_tensor(gathered, padded, group=pg)
    object_list[:] = [_nccl.tensor_to_object(gathered[r * longest:], n)
                      for r, n in enumerate(sizes)]


def broadcast_object_list(object_list, src=None, group=None, device=None,
                          group_src=None) -> None:
    """object_list's items become rank src's."""
    pg = _group(group)
    if pg is None:
        return None
    root = _peer(pg, src, group_src, "src")
    device = _object_device(pg)
    if device is None:
        object_list[:] = pg._comm.bcast(list(object_list) if pg.rank() == root else None,
                                        root=root)
        return None
    if not object_list:
        return None
    if pg.rank() == root:
        pickles = [_nccl.object_to_tensor(obj, device) for obj in object_list]
        sizes = glasstorch.tensor([p.numel() for p in pickles], device=device)
        payload = glasstorch.cat(pickles)
    else:
        sizes = glasstorch.empty(len(object_list), dtype=glasstorch.int64, device=device)
    broadcast(sizes, group=pg, group_src=root)
    sizes = sizes.tolist()
    if pg.rank() != root:
        payload = glasstorch.empty(sum(sizes), dtype=glasstorch.uint8, device=device)
    broadcast(payload, group=pg, group_src=root)
    starts = np.cumsum([0] + sizes[:-1]).tolist()
    object_list[:] = [_nccl.tensor_to_object(payload[a:], n) for a, n in zip(starts, sizes)]


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    pg = _group(group)
    if pg is None:
        return None
    root = _peer(pg, dst, group_dst, "dst")
    if pg.rank() == root and object_gather_list is None:
        raise ValueError("Argument ``object_gather_list`` must be specified on destination "
                         "rank.")
    if _object_device(pg) is None:
        gathered = pg._comm.gather(obj, root=root)
    else:
        gathered = [None] * pg.size()
        all_gather_object(gathered, obj, group=pg)
    if pg.rank() == root:
        object_gather_list[:] = gathered


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None) -> None:
    pg = _group(group)
    if pg is None:
        return None
    root = _peer(pg, src, group_src, "src")
    items = list(scatter_object_input_list) if pg.rank() == root else None
    if _object_device(pg) is None:
        scatter_object_output_list[0] = pg._comm.scatter(items, root=root)
        return None
    box = [items]
    broadcast_object_list(box, group=pg, group_src=root)
    scatter_object_output_list[0] = box[0][pg.rank()]
