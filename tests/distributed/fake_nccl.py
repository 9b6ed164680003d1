"""A stand-in for `cupy.cuda.nccl` on the CPU, so that glasstorch's NCCL engine runs here.

It has CuPy's NCCL API (get_unique_id, NcclCommunicator with allReduce, broadcast, reduce,
allGather, reduceScatter, send, recv; groupStart/groupEnd; the NCCL_* constants) and works
on the device pointers of tests/cuda/simulated_cupy.py, which are host memory: a pointer
that is not inside a live device allocation fails as a GPU would (CUDA error 700). The ranks
of a communicator, threads or processes, meet through files in $FAKE_NCCL_DIR (else the
temporary directory), one per rank and call, named after the unique id. Calls run at once
(simulated streams are synchronous); inside a group, sends run before everything else, so a
group of sends and receives never waits on itself. `calls` lists (method, stream pointer),
`ops` the reductions asked for."""
import ctypes
import os
import pickle
import tempfile
import threading
import time

import ml_dtypes
import numpy as np

import simulated_cupy

NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = range(5)
NCCL_INT8 = NCCL_CHAR = 0
NCCL_UINT8 = 1
NCCL_INT32 = NCCL_INT = 2
NCCL_UINT32 = 3
NCCL_INT64 = 4
NCCL_UINT64 = 5
NCCL_FLOAT16 = NCCL_HALF = 6
NCCL_FLOAT32 = NCCL_FLOAT = 7
NCCL_FLOAT64 = NCCL_DOUBLE = 8
NCCL_BFLOAT16 = 9

_DTYPES = {NCCL_INT8: np.int8, NCCL_UINT8: np.uint8, NCCL_INT32: np.int32,
           NCCL_UINT32: np.uint32, NCCL_INT64: np.int64, NCCL_UINT64: np.uint64,
           NCCL_FLOAT16: np.float16, NCCL_FLOAT32: np.float32, NCCL_FLOAT64: np.float64,
           NCCL_BFLOAT16: ml_dtypes.bfloat16}
WAIT_SECONDS = 60

calls = []
ops = []
_local = threading.local()      # this thread's open group: depth and queued calls


def get_unique_id():
    return os.urandom(128)          # bytes, as CuPy 14's (earlier CuPy gave a tuple of ints)


def get_version():
    return 22105


def groupStart():
    _local.depth = getattr(_local, "depth", 0) + 1
    if _local.depth == 1:
        _local.queued = []


def groupEnd():
    _local.depth -= 1
    if _local.depth == 0:
        queued, _local.queued = _local.queued, []
        for name, run in sorted(queued, key=lambda q: q[0] != "send"):
            run()


def _memory(ptr, count, datatype):
    """The `count` elements at device pointer `ptr`, as a writable NumPy array."""
    dtype = np.dtype(_DTYPES[datatype])
    nbytes = count * dtype.itemsize
    if nbytes == 0:
        return np.empty(0, dtype)
    simulated_cupy._resolve(ptr, nbytes)
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr)).view(dtype)


def _reduce(arrays, op):
    dtype = arrays[0].dtype
    wide = np.stack([a.astype(np.float64) if dtype.kind == "f" or dtype == ml_dtypes.bfloat16
                     else a for a in arrays])
    if op == NCCL_AVG:
        out = wide.sum(0) / len(arrays) if wide.dtype.kind == "f" else wide.sum(0) // len(arrays)
    else:
        out = {NCCL_SUM: np.sum, NCCL_PROD: np.prod, NCCL_MAX: np.max,
               NCCL_MIN: np.min}[op](wide, axis=0)
    return out.astype(dtype)


class NcclCommunicator:
    def __init__(self, ndev, commId, rank):
        if not isinstance(commId, bytes):
            raise TypeError(f"Argument 'commId' has incorrect type (expected bytes, got "
                            f"{type(commId).__name__})")
        if len(commId) != 128 or not 0 <= rank < ndev:
            raise ValueError("fake NCCL: bad unique id or rank")
        self._size, self._rank = ndev, rank
        name = "fake-nccl-" + bytes(c & 0xFF for c in commId[:16]).hex()
        self._dir = os.path.join(os.environ.get("FAKE_NCCL_DIR", tempfile.gettempdir()), name)
        os.makedirs(self._dir, exist_ok=True)
        self._calls = 0
        self._messages = {}         # (way, src, dst) -> messages so far
        self._live = True

    def rank_id(self):
        return self._rank

    def size(self):
        return self._size

    def destroy(self):
        self._live = False

    # ---- meeting the other ranks ------------------------------------------------------------

    def _post(self, name, value):
        path = os.path.join(self._dir, name)
        with open(path + ".tmp", "wb") as f:
            pickle.dump(value, f)
        os.replace(path + ".tmp", path)

    def _take(self, name):
        path = os.path.join(self._dir, name)
        deadline = time.monotonic() + WAIT_SECONDS
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                raise RuntimeError(f"fake NCCL: rank {self._rank} waited {WAIT_SECONDS} s for "
                                   f"{name} (a peer did not make the same call)")
            time.sleep(0.002)
        with open(path, "rb") as f:
            return pickle.load(f)

    def _everyone(self, what, payload):
        """Every rank's payload for this call; all ranks must be making the same call."""
        if not self._live:
            raise RuntimeError("fake NCCL: communicator used after destroy()")
        n = self._calls
        self._calls += 1
        self._post(f"c{n}.r{self._rank}", (what, payload))
        got = [self._take(f"c{n}.r{r}") for r in range(self._size)]
        if any(w != what for w, _ in got):
            raise RuntimeError(f"fake NCCL: mismatched calls {[w for w, _ in got]}")
        return [p for _, p in got]

    def _call(self, name, stream, run):
        calls.append((name, stream))
        if getattr(_local, "depth", 0):
            _local.queued.append((name, run))
        else:
            run()

    # ---- CuPy's methods ---------------------------------------------------------------------

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        ops.append(op)

        def run():
            got = self._everyone(("allReduce", count, datatype, op),
                                 _memory(sendbuf, count, datatype).copy())
            _memory(recvbuf, count, datatype)[:] = _reduce(got, op)
        self._call("allReduce", stream, run)

    def broadcast(self, sendbuf, recvbuf, count, datatype, root, stream):
        def run():
            mine = _memory(sendbuf, count, datatype).copy() if self._rank == root else None
            got = self._everyone(("broadcast", count, datatype, root), mine)
            _memory(recvbuf, count, datatype)[:] = got[root]
        self._call("broadcast", stream, run)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        ops.append(op)

        def run():
            got = self._everyone(("reduce", count, datatype, op, root),
                                 _memory(sendbuf, count, datatype).copy())
            if self._rank == root:
                _memory(recvbuf, count, datatype)[:] = _reduce(got, op)
        self._call("reduce", stream, run)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):
        def run():
            got = self._everyone(("allGather", count, datatype),
                                 _memory(sendbuf, count, datatype).copy())
            _memory(recvbuf, count * self._size, datatype)[:] = np.concatenate(got)
        self._call("allGather", stream, run)

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
        ops.append(op)

        def run():
            got = self._everyone(("reduceScatter", recvcount, datatype, op),
                                 _memory(sendbuf, recvcount * self._size, datatype).copy())
            mine = slice(self._rank * recvcount, (self._rank + 1) * recvcount)
            _memory(recvbuf, recvcount, datatype)[:] = _reduce(got, op)[mine]
        self._call("reduceScatter", stream, run)

    def _message(self, way, src, dst):
        """The file of the next message from src to dst (counted apart for sending and
        receiving: a rank may send to itself)."""
        n = self._messages.get((way, src, dst), 0)
        self._messages[(way, src, dst)] = n + 1
        return f"p{src}to{dst}.{n}"

    def send(self, sendbuf, count, datatype, peer, stream):
        def run():
            self._post(self._message("sent", self._rank, peer),
                       (count, datatype, _memory(sendbuf, count, datatype).copy()))
        self._call("send", stream, run)

    def recv(self, recvbuf, count, datatype, peer, stream):
        def run():
            sent = self._take(self._message("received", peer, self._rank))
            if sent[:2] != (count, datatype):
                raise RuntimeError(f"fake NCCL: recv of {(count, datatype)} matched a send of "
                                   f"{sent[:2]}")
            _memory(recvbuf, count, datatype)[:] = sent[2]
        self._call("recv", stream, run)
