"""DLPack capsules: what the array libraries' own producers and consumers cannot do for us.

glasstorch's CPU memory is a NumPy array and its GPU memory a CuPy array, so a tensor is
exported by asking that array for its capsule (`ndarray.__dlpack__`), and a capsule is
imported by handing it to `np.from_dlpack` / `cupy.from_dlpack`: both share memory and keep
the owner alive. Two things are left for this module, done by reading and writing the
capsule's `DLTensor` in place with ctypes:

* bfloat16, which PyTorch exchanges (DLPack's kDLBfloat) but NumPy and CuPy do not: the
  array is exported as uint16 bit patterns and the capsule relabelled kDLBfloat; an
  incoming kDLBfloat capsule is relabelled uint16 before NumPy reads it.
* the device of a bare capsule (`torch.utils.dlpack.to_dlpack`'s result), which the
  consumers ask the producer object for.

Layout (dlpack.h): a legacy "dltensor" capsule points at a DLManagedTensor, whose first
field is the DLTensor; a "dltensor_versioned" one at a DLManagedTensorVersioned, whose
DLTensor follows a version (2 x uint32), a manager context and a deleter (pointers) and a
uint64 of flags. In a DLTensor: data (pointer), device (int32 type, int32 index), ndim
(int32), then dtype (uint8 code, uint8 bits, uint16 lanes).
"""
from __future__ import annotations

import ctypes
import datetime
import enum



class DLDeviceType(enum.IntEnum):
    """DLPack's device codes (dlpack.h), as `torch.utils.dlpack.DLDeviceType`."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


LEGACY, VERSIONED = "dltensor", "dltensor_versioned"
KDL_UINT, KDL_BFLOAT = 1, 4

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_CAPSULE = type(datetime.datetime_CAPI)     # the PyCapsule type (types.CapsuleType in 3.13)

_POINTER = ctypes.sizeof(ctypes.c_void_p)
_DEVICE_OFFSET = _POINTER
_DTYPE_OFFSET = _POINTER + 8 + 4


def capsule_name(obj) -> str | None:
    """The capsule's name ("dltensor", "used_dltensor", ...), or None for a non-capsule."""
    if type(obj) is not _CAPSULE:
        return None
    name = _get_name(obj)
    return name.decode() if name is not None else ""


def _dl_tensor(capsule) -> int:
    """The address of the capsule's DLTensor."""
    name = capsule_name(capsule)
    managed = _get_pointer(capsule, name.encode())
    if name == VERSIONED:
        return managed + 8 + 2 * _POINTER + 8
    return managed


def device_of(capsule) -> tuple:
    """(DLDeviceType value, device index) of an unconsumed capsule."""
    address = _dl_tensor(capsule) + _DEVICE_OFFSET
    kind, index = (ctypes.c_int32 * 2).from_address(address)
    return int(kind), int(index)


def dtype_of(capsule) -> tuple:
    """(type code, bits, lanes) of an unconsumed capsule's elements."""
    address = _dl_tensor(capsule) + _DTYPE_OFFSET
    code, bits = (ctypes.c_uint8 * 2).from_address(address)
    return int(code), int(bits), int(ctypes.c_uint16.from_address(address + 2).value)


def relabel(capsule, code: int) -> None:
    """Change the element type code of an unconsumed 16-bit capsule in place (bfloat16 <->
    uint16 bit patterns; the bits and the memory are the same)."""
    ctypes.c_uint8.from_address(_dl_tensor(capsule) + _DTYPE_OFFSET).value = code
