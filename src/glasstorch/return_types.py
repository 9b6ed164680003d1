"""Named tuples returned by multi-output ops (torch.return_types).

`glasstorch.max(x, 0)` returns `return_types.max(values=..., indices=...)`: a tuple whose
fields also have names, printed as PyTorch prints its structseq types, and picklable. The
`_out` variants are what the same ops return when given `out=`.
"""
from __future__ import annotations

__all__ = []


class _StructSeq(tuple):
    """A fixed-length tuple with named, read-only fields (PyTorch's structseq)."""

    __slots__ = ()
    n_fields = n_sequence_fields = 0
    n_unnamed_fields = 0
    _fields: tuple = ()

    def __new__(cls, sequence, dict=None):
        values = tuple(sequence)
        if len(values) != cls.n_fields:
            raise TypeError(f"torch.return_types.{cls.__name__}() takes a {cls.n_fields}-sequence"
                            f" ({len(values)}-sequence given)")
        return tuple.__new__(cls, values)

    def __repr__(self):
        fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
        return f"torch.return_types.{type(self).__name__}(\n{fields})"

    def __reduce__(self):
        return type(self), (tuple(self), {})


def _field(i):
    return property(lambda self: tuple.__getitem__(self, i))


def _define(name: str, fields: tuple) -> type:
    body = {"__slots__": (), "_fields": fields, "__match_args__": fields,
            "n_fields": len(fields), "n_sequence_fields": len(fields),
            "__module__": __name__, "__qualname__": name}
    body.update({f: _field(i) for i, f in enumerate(fields)})
    return type(name, (_StructSeq,), body)


_VALUES_INDICES = ("values", "indices")
_TYPES = {
    "max": _VALUES_INDICES, "min": _VALUES_INDICES, "sort": _VALUES_INDICES,
    "topk": _VALUES_INDICES, "kthvalue": _VALUES_INDICES, "mode": _VALUES_INDICES,
    "median": _VALUES_INDICES, "nanmedian": _VALUES_INDICES, "cummax": _VALUES_INDICES,
    "cummin": _VALUES_INDICES, "aminmax": ("min", "max"), "frexp": ("mantissa", "exponent"),
    "histogram": ("hist", "bin_edges"), "histogramdd": ("hist", "bin_edges"),
    "geqrf": ("a", "tau"), "qr": ("Q", "R"), "slogdet": ("sign", "logabsdet"),
    "svd": ("U", "S", "V"), "triangular_solve": ("solution", "cloned_coefficient"),
    "lu_unpack": ("P", "L", "U"), "linalg_cholesky_ex": ("L", "info"),
    "linalg_eig": ("eigenvalues", "eigenvectors"), "linalg_eigh": ("eigenvalues",
                                                                   "eigenvectors"),
    "linalg_inv_ex": ("inverse", "info"), "linalg_ldl_factor": ("LD", "pivots"),
    "linalg_ldl_factor_ex": ("LD", "pivots", "info"),
    "linalg_lstsq": ("solution", "residuals", "rank", "singular_values"),
    "linalg_lu": ("P", "L", "U"), "linalg_lu_factor": ("LU", "pivots"),
    "linalg_lu_factor_ex": ("LU", "pivots", "info"), "linalg_qr": ("Q", "R"),
    "linalg_slogdet": ("sign", "logabsdet"), "linalg_solve_ex": ("result", "info"),
    "linalg_svd": ("U", "S", "Vh"), "_lu_with_info": ("LU", "pivots", "info"),
}

for _name, _fields in _TYPES.items():
    for _n in (_name, _name + "_out") if _name != "histogramdd" else (_name,):
        globals()[_n] = _define(_n, _fields)
        __all__.append(_n)
