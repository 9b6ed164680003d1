"""torch.distributed.device_mesh: ranks arranged as an n-dimensional array, with one process
group per dimension (the ranks that differ only along it).

A 2-D mesh (dp=2, tp=4) of 8 ranks gives each rank two groups: the 4 ranks of its row
(tensor parallelism, usually within a node) and the 2 ranks of its column (data parallelism,
across nodes). `mesh["dp"]` is the 1-D mesh of this rank's column, sharing its group."""
from __future__ import annotations

import threading

import numpy as np

from . import distributed_c10d as c10d

__all__ = ["DeviceMesh", "init_device_mesh"]


class _MeshStack(threading.local):
    def __init__(self):
        self.meshes: list = []


_mesh_stack = _MeshStack()


class DeviceMesh:
    """A mesh of global ranks; `mesh` is their int32 array, `get_group(dim)` the process
    group along a dimension, `get_coordinate()` this rank's index in the mesh."""

    def __init__(self, device_type: str, mesh, *, mesh_dim_names=None, backend_override=None,
                 _init_backend: bool = True):
        import glasstorch
        if device_type and not device_type.isalpha():
            raise RuntimeError(f"Device type with index is not supported but got {device_type}. "
                               "If you maintained a 'torch.device' object, it's recommended "
                               "to pass in 'device.type'.")
        ranks = np.asarray(mesh.tolist() if isinstance(mesh, glasstorch.Tensor) else mesh,
                           dtype=np.int32)
        if mesh_dim_names is not None and len(mesh_dim_names) != ranks.ndim:
            raise RuntimeError("mesh_shape and mesh_dim_names should have same length! Found "
                               f"len(mesh_dim_names): {len(mesh_dim_names)} and "
                               f"len(mesh_shape):{ranks.ndim}.")
        self._device_type = device_type
        self._ranks = ranks
        self._mesh_dim_names = tuple(mesh_dim_names) if mesh_dim_names else None
        self._strides = _strides_of(ranks)
        self._dim_groups: list = []
        self._coordinate = None
        if _init_backend:
            self._init_groups()

    def _init_groups(self) -> None:
        if not c10d.is_initialized():
            c10d.init_process_group()
        world = c10d.get_world_size()
        if self._ranks.size > world:
            raise RuntimeError(f"Mesh should not be bigger than default world size {world}, "
                               f"but found {self._ranks.size} ranks!")
        me = c10d.get_rank()
        found = np.argwhere(self._ranks == me)
        self._coordinate = tuple(int(i) for i in found[0]) if len(found) else None
        for dim in range(self._ranks.ndim):
            rows = np.moveaxis(self._ranks, dim, -1).reshape(-1, self._ranks.shape[dim])
            mine = None
            for row in rows.tolist():        # every rank creates every group, in one order
                if row == list(range(world)):
                    group = c10d.group.WORLD
                else:
                    group = c10d.new_group(row, sort_ranks=False)
                if me in row:
                    mine = group
            self._dim_groups.append(mine)

    # ---- what it is --------------------------------------------------------------------

    @property
    def device_type(self) -> str:
        return self._device_type

    @property
    def mesh(self):
        import glasstorch
        return glasstorch.tensor(self._ranks, dtype=glasstorch.int32)

    @property
    def mesh_dim_names(self):
        return self._mesh_dim_names

    @property
    def ndim(self) -> int:
        return self._ranks.ndim

    @property
    def shape(self) -> tuple:
        return tuple(self._ranks.shape)

    def size(self, mesh_dim: int | None = None) -> int:
        return int(self._ranks.size if mesh_dim is None else self._ranks.shape[mesh_dim])

    def get_rank(self) -> int:
        return c10d.get_rank()

    def get_coordinate(self):
        return self._coordinate

    def __repr__(self):
        sizes = self._ranks.shape
        shown = (f"({', '.join(f'{n}={s}' for n, s in zip(self._mesh_dim_names, sizes))})"
                 if self._mesh_dim_names else f"{tuple(sizes)}")
        strides = tuple(() if s == 1 else st for s, st in zip(sizes, self._strides))
        return f"DeviceMesh({shown}, '{self._device_type}', stride={strides})"

    def __eq__(self, other) -> bool:
        return (isinstance(other, DeviceMesh) and self._device_type == other._device_type
                and self._mesh_dim_names == other._mesh_dim_names
                and np.array_equal(self._ranks, other._ranks))

    def __hash__(self):
        return hash((self._device_type, self._mesh_dim_names, self._ranks.tobytes(),
                     self._ranks.shape))

    def __enter__(self):
        _mesh_stack.meshes.append(self)
        return self

    def __exit__(self, *exc):
        _mesh_stack.meshes.pop()

    # ---- groups ------------------------------------------------------------------------

    def _dim_index(self, mesh_dim) -> int:
        if isinstance(mesh_dim, str):
            if not self._mesh_dim_names or mesh_dim not in self._mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh "
                               f"dimensions are: mesh_dim_names={self._mesh_dim_names}")
            return self._mesh_dim_names.index(mesh_dim)
        return mesh_dim

    def get_group(self, mesh_dim=None):
        """The process group along `mesh_dim` (a name or an index; optional in 1-D)."""
        if mesh_dim is None:
            if self.ndim > 1:
                raise RuntimeError(
                    f"Found the DeviceMesh have {self.ndim} dimensions. Optional kwarg "
                    "`mesh_dim` needs to be specified when device_mesh.ndim > 1. If you want "
                    "to get the list of all the ProcessGroups in the DeviceMesh, please use "
                    "`get_all_groups()` instead.")
            mesh_dim = 0
        return self._dim_groups[self._dim_index(mesh_dim)]

    def get_all_groups(self) -> list:
        return list(self._dim_groups)

    def get_local_rank(self, mesh_dim=None) -> int:
        """This rank's index along `mesh_dim`."""
        if mesh_dim is None and self.ndim > 1:
            raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions. Optional "
                               "kwarg `mesh_dim` needs to be specified when device_mesh.ndim "
                               "> 1.")
        return c10d.get_rank(self.get_group(mesh_dim))

    def __getitem__(self, mesh_dim_names):
        """The sub-mesh of the named dimensions that holds this rank, in the order named."""
        if not self._mesh_dim_names:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if names == self._mesh_dim_names:
            return self
        if any(n not in self._mesh_dim_names for n in names) or len(set(names)) != len(names):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Valid mesh_dim_names "
                           f"are {list(self._mesh_dim_names)}.")
        dims = [self._mesh_dim_names.index(n) for n in names]
        index = tuple(slice(None) if d in dims else (self._coordinate or (0,) * self.ndim)[d]
                      for d in range(self.ndim))
        kept = sorted(dims)
        ranks = np.transpose(self._ranks[index], [kept.index(d) for d in dims])
        sub = DeviceMesh(self._device_type, ranks, mesh_dim_names=names, _init_backend=False)
        sub._strides = tuple(self._strides[d] for d in dims)
        sub._dim_groups = [self._dim_groups[d] for d in dims]
        sub._coordinate = None if self._coordinate is None else \
            tuple(self._coordinate[d] for d in dims)
        return sub

    @staticmethod
    def from_group(group, device_type: str, mesh=None, *, mesh_dim_names=None):
        """A 1-D mesh over an existing process group."""
        if isinstance(group, (list, tuple)):
            raise NotImplementedError("DeviceMesh.from_group with several groups is not "
                                      "supported by glasstorch yet")
        ranks = c10d.get_process_group_ranks(group) if mesh is None else mesh
        result = DeviceMesh(device_type, ranks, mesh_dim_names=mesh_dim_names,
                            _init_backend=False)
        result._dim_groups = [group]
        me = c10d.get_rank()
        result._coordinate = (list(result._ranks).index(me),) if me in result._ranks else None
        return result


def _strides_of(ranks: np.ndarray) -> tuple:
    """How far apart consecutive ranks are along each dimension (the mesh's layout)."""
    out = []
    for d in range(ranks.ndim):
        if ranks.shape[d] > 1:
            step = np.take(ranks, 1, axis=d).flat[0] - np.take(ranks, 0, axis=d).flat[0]
            out.append(int(step))
        else:
            out.append(1)
    return tuple(out)


def init_device_mesh(device_type: str, mesh_shape, *, mesh_dim_names=None,
                     backend_override=None) -> DeviceMesh:
    """A mesh of shape `mesh_shape` over ranks 0..n-1 in order, with its groups created
    (every rank must call it alike)."""
    if mesh_dim_names is not None:
        if len(set(mesh_dim_names)) != len(mesh_dim_names):
            raise RuntimeError("Each mesh_dim_name must be unique. Found repeated mesh_dim_name "
                               f"in mesh_dim_names {tuple(mesh_dim_names)}")
        if len(mesh_shape) != len(mesh_dim_names):
            raise RuntimeError("mesh_shape and mesh_dim_names should have same length! Found "
                               f"len(mesh_dim_names): {len(mesh_dim_names)} and "
                               f"len(mesh_shape):{len(mesh_shape)}.")
    if device_type and not device_type.isalpha():
        raise RuntimeError(f"Device type with index is not supported but got {device_type}. "
                           "If you maintained a 'torch.device' object, it's recommended to "
                           "pass in 'device.type'.")
    ranks = np.arange(int(np.prod(mesh_shape)), dtype=np.int32).reshape(tuple(mesh_shape))
    return DeviceMesh(device_type, ranks, mesh_dim_names=mesh_dim_names,
                      backend_override=backend_override)
