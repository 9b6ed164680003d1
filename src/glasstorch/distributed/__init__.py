"""torch.distributed: process groups, collectives and point-to-point messages between
processes, on Open MPI (through mpi4py), and on NCCL (through CuPy) for CUDA tensors with
`backend="nccl"` or `"cpu:gloo,cuda:nccl"`. `backend="gloo"` and `"mpi"` both name the MPI
engine; a world of one process needs no MPI at all. Start several processes
with `python -m glasstorch.distributed.run --nproc-per-node N script.py` (torchrun's
contract) or with `mpirun -n N python script.py`."""
from .distributed_c10d import *  # noqa: F401,F403
from .distributed_c10d import __all__ as _c10d_all
from .distributed_c10d import _make_nccl_premul_sum  # noqa: F401
from .device_mesh import DeviceMesh, init_device_mesh  # noqa: F401

__all__ = list(_c10d_all) + ["DeviceMesh", "init_device_mesh"]
