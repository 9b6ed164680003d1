"""The ONNX graph under construction: nodes, initializers, constants and fresh names.

A value is named by a string (an ONNX value name). `ints()` turns a list of int arguments
into an int64 tensor value: a constant, or, where entries follow the exported program's
dynamic dimensions (export/_sizes.py), a small computation from the inputs' `Shape`, so a
model exported at batch 2 reshapes correctly at batch 7.
"""
from __future__ import annotations

import numpy as np

from ..core import dtype as dt

_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int16": 5, "int32": 6, "int64": 7,
               "bool": 9, "float16": 10, "float64": 11, "complex64": 14, "complex128": 15,
               "bfloat16": 16}


def onnx_type(dtype: dt.dtype) -> int:
    """The TensorProto element type of a glasstorch dtype."""
    return _ONNX_TYPES[str(dtype).removeprefix("torch.")]


class GraphBuilder:
    def __init__(self, onnx, opset: int, dynamic_inputs: dict, fold: bool = True):
        self.onnx = onnx
        self.helper = onnx.helper
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.arrays: dict = {}          # initializer name -> its values, for folding
        self.fold = fold
        self.output_names: set = set()
        self.renamed: dict = {}         # value name -> the graph output name it took
        self._names: set = set()
        self._constants: dict = {}
        self._shapes: dict = {}
        self.dynamic_inputs = dynamic_inputs    # (user input index, dim) -> ONNX input name

    def fresh(self, base: str) -> str:
        name, i = base, 0
        while name in self._names:
            i += 1
            name = f"{base}_{i}"
        self._names.add(name)
        return name

    def reserve(self, name: str) -> str:
        self._names.add(name)
        return name

    def op(self, op_type: str, inputs: list, outputs: int = 1, name: str | None = None,
           **attributes):
        """Append a node; returns its output name (or names when `outputs` > 1)."""
        out = [self.fresh(f"{name or op_type.lower()}" + (f"_out{i}" if outputs > 1 else ""))
               for i in range(outputs)]
        self.nodes.append(self.helper.make_node(
            op_type, ["" if i is None else i for i in inputs], out,
            name=self.fresh(f"node_{op_type}"),
            **{k: v for k, v in attributes.items() if v is not None}))
        return out[0] if outputs == 1 else out

    def initializer(self, name: str, array: np.ndarray) -> str:
        array = np.array(array, order="C")
        self.initializers.append(self.onnx.numpy_helper.from_array(array, name))
        self.arrays[name] = array
        return self.reserve(name)

    def transpose(self, x: str, perm: list) -> str:
        """`x` transposed: folded into a new initializer when `x` is one (a weight)."""
        if self.fold and x in self.arrays:
            return self.initializer(self.fresh(f"{x}_transposed"),
                                    self.arrays[x].transpose(perm))
        return self.op("Transpose", [x], perm=perm)

    def used_initializers(self) -> list:
        """The initializers some node reads (folding leaves the originals unread)."""
        read = {name for node in self.nodes for name in node.input}
        return [t for t in self.initializers if t.name in read]

    def chunks(self, x: str, count: int, axis: int, size: int) -> list:
        """`x` split into `count` equal parts along `axis` (of length `size`)."""
        if self.opset >= 18:
            return self.op("Split", [x], outputs=count, axis=axis, num_outputs=count)
        return self.op("Split", [x, self.const([size // count] * count)], outputs=count,
                       axis=axis)

    def const(self, value, dtype=np.int64) -> str:
        """A constant tensor (initializer), shared between identical uses."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        name = self._constants.get(key)
        if name is None:
            name = self.initializer(self.fresh("const"), array)
            self._constants[key] = name
        return name

    def scalar_like(self, value, dtype: dt.dtype) -> str:
        """A 0-d constant of `dtype` (the other operand's), for an op with a Python scalar."""
        np_dtype = np.float32 if dtype is dt.bfloat16 else dtype.np
        return self.const(value, np_dtype)

    # ---- int lists that follow dynamic dimensions --------------------------------------
    def ints(self, values, dynamic: dict | None = None) -> str:
        """`values` as a 1-D int64 tensor; `dynamic` maps an entry's position to (example
        value, {key: coefficient}) for entries that follow dynamic dims, a key being the
        (input, dim) pairs whose moves from the example multiply (export/_sizes.py)."""
        values = [int(v) for v in values]
        if not dynamic:
            return self.const(values)
        parts = []
        for i, v in enumerate(values):
            if i not in dynamic:
                parts.append(self.const([v]))
                continue
            base, coefficients = dynamic[i]
            total = self.const([base])
            for key, c in coefficients.items():
                term = self.const([c])
                for dim in key:          # the move of each size from the example's
                    move = self.op("Sub", [self.dim(dim), self.const([self._example(dim)])])
                    term = self.op("Mul", [term, move])
                total = self.op("Add", [total, term])
            parts.append(total)
        return self.op("Concat", parts, axis=0)

    def dim(self, key) -> str:
        """A 1-element int64 tensor holding a dynamic input dimension's size."""
        shape = self._shapes.get(key[0])
        if shape is None:
            shape = self._shapes[key[0]] = self.op("Shape", [self.dynamic_inputs[key][0]])
        return self.op("Gather", [shape, self.const([key[1]])], axis=0)

    def _example(self, key) -> int:
        return self.dynamic_inputs[key][1]
