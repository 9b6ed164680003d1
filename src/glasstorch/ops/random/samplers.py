"""Random sampling: in-place samplers, sampling functions on tensors, random factories.

Every sampler draws from a `glasstorch.Generator` (the default one unless `generator=` is
given). Samples are made in a fresh buffer and written through the tensor's strided view
(uniform and normal samples straight into a contiguous tensor), so a view is filled in place
and nothing outside it changes.

- In-place samplers (`uniform_`, `normal_`, `bernoulli_`, `random_`, `exponential_`,
  `geometric_`, `log_normal_`, `cauchy_`) are dispatcher ops that mutate argument 0, so the
  ADInplaceOrView key bumps the version counter. Their checks run on every backend (Meta too),
  before anything is drawn or written.
- `bernoulli`, `multinomial`, `poisson` and the tensor overloads of `normal` make new tensors.
- Factories (`rand`, `randn`, `randint`, `randperm`, `normal(mean, std, size)`, `*_like`)
  allocate and fill through the in-place samplers' backend kernels, as PyTorch does
  (`rand` is `empty(...).uniform_()`), so they share the samplers' checks and errors. Each is
  a factory operator with PyTorch's overloads (`aten::rand`, `aten::rand.generator` when a
  generator is given, `aten::randint.low`, ...), so a dispatch mode sees it.

Floating samples keep as many random bits as the dtype has mantissa digits, so `rand` is in
[0, 1) for every dtype; float16/bfloat16 are computed in float32 and rounded.

The draws are backends/cpu/random.py's transforms of the generator's words (C for uniform
and normal samples of float32/float64, NumPy for the rest); the samplers' kernels, which
pick the generator, stay here. CUDA tensors draw the same way, on the host, from their GPU's generator
(its NumPy stream), and the samples are copied to the GPU: the numbers do not depend on
whether a sampler runs here or on the host path. multinomial and poisson take the host path.
"""
from __future__ import annotations

import operator

import numpy as np

from ...core import dtype as dt
from ...core.device import META, as_device
from ...core.shape import broadcast_shapes2, expand_strides
from ...core.tensor import Tensor, preserve_format
from ...dispatch.keys import BACKEND_MASK
from ...random import Generator, default_generator
from ..creation.factories import (OPTIONS, _finish, _size_arg, backend_call,
                                  empty_like_kernel, factory_op, like_keyset)
from ..registry import export, kernel_op, resize_output
from ...backends.cpu.ranges import LIMITS, converted, write
from ..creation.ranges import check_out_dtype, fmt, store_values, warn_user
from ...backends.cpu.random import (_DIGITS, _adjust_from, _adjust_to, _check_writable,
    _operand, bernoulli_into, fill_bernoulli, fill_bernoulli_tensor, fill_cauchy,
    fill_exponential, fill_geometric, fill_log_normal, fill_normal, fill_random,
    fill_random_default, fill_uniform, multinomial_into, normal_values, permutation)

# PyTorch's C++ names for dtypes, used verbatim in its sampler errors.
CTYPE = {dt.float32: "float", dt.float64: "double", dt.float16: "c10::Half",
         dt.bfloat16: "c10::BFloat16", dt.uint8: "unsigned char", dt.int8: "signed char",
         dt.int16: "short int", dt.int32: "int", dt.int64: "long int", dt.bool: "bool",
         dt.complex64: "c10::complex<float>", dt.complex128: "c10::complex<double>",
         dt.uint16: "short unsigned int", dt.uint32: "unsigned int",
         dt.uint64: "long unsigned int"}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _stream(generator, t: Tensor) -> Generator:
    """The generator to draw from, checked against the tensor's device (a CUDA tensor's
    default is its GPU's generator)."""
    if generator is None:
        if t._storage.device.type == "cuda":
            from ...cuda.random import default_generators
            return default_generators[t.device.index]
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a glasstorch.Generator as 'generator', but got "
                        f"{type(generator).__name__}")
    if generator.device.type != t.device.type:
        raise RuntimeError(f"Expected a '{t.device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator


def _not_implemented(name: str, d: dt.dtype):
    return NotImplementedError(f'"{name}" not implemented for \'{d.cname}\'')


def _floating_or_complex(name: str, t: Tensor) -> dt.dtype:
    """The real dtype of a floating or complex tensor; integer and bool tensors can't hold it."""
    if t.dtype.category < dt.FLOAT:
        raise _not_implemented(name, t.dtype)
    return t.dtype.to_real()


# ---- in-place samplers ---------------------------------------------------------------

def _inplace_sampler(schema: str, check, fill, doc: str, *, method=True):
    """Declare an in-place sampler: `check(self, *params)` validates and returns the params
    (on every backend); `fill(generator, self, *params)` writes the values (CPU)."""
    decl = kernel_op(schema, function=False, method=method, mutates=(0,), doc=doc)
    decl.on_cuda = "shared"

    @decl.impl("CPU")
    def cpu(self, *args):
        params = check(self, *args[:-1])
        _check_writable(self)
        generator = _stream(args[-1], self)
        if self.numel():
            fill(generator, self, *params)
        return self

    @decl.impl("Meta")
    def meta(self, *args):
        check(self, *args[:-1])
        _check_writable(self)
        return self

    cpu.__qualname__ = f"{decl.functional.name} (CPU sampler)"
    meta.__qualname__ = f"{decl.functional.name} (Meta checks)"
    return decl


def _check_uniform(self, from_, to):
    real = _floating_or_complex("uniform_", self)
    from_, to = float(from_), float(to)
    lowest, highest = LIMITS[real]
    for value, name in ((from_, "from"), (to, "to")):
        if not lowest <= value <= highest:
            raise RuntimeError(f"{name} is out of bounds for {CTYPE[real]}")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={fmt(from_)} > to={fmt(to)}")
    if to - from_ > highest:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{real.cname}>::max()"
                           f", but found to={fmt(to)} and from={fmt(from_)} which result in "
                           "to-from to exceed the limit")
    return from_, to


uniform_op = _inplace_sampler(
    "uniform_(Tensor(a!) self, float from_=0, float to=1, *, Generator? generator=None) "
    "-> Tensor(a!)", _check_uniform, fill_uniform, method=False,
    doc="Fill self with values uniform in [from, to).")


def uniform_(self, *args, generator=None, **kwargs):
    """uniform_(from=0, to=1, *, generator=None): values uniform in [from, to)."""
    from_, to = _from_to_args("uniform_", args, kwargs, 0.0, 1.0)
    return uniform_op.functional(self, from_, to, generator)


def _from_to_args(name, args, kwargs, from_default, to_default):
    """(from, to) from positional args and the keywords 'from'/'to' ('from' is a keyword in
    Python, so it can only come through **kwargs, as in PyTorch)."""
    if len(args) > 2:
        raise TypeError(f"{name}() takes at most 2 positional arguments ({len(args)} given)")
    values = dict(zip(("from", "to"), args))
    for key, value in kwargs.items():
        if key not in ("from", "to") or key in values:
            raise TypeError(f"{name}() got an unexpected or repeated keyword argument '{key}'")
        values[key] = value
    return values.get("from", from_default), values.get("to", to_default)


def _check_normal(self, mean, std):
    mean, std = float(mean), float(std)
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {fmt(std)}")
    _floating_or_complex("normal_", self)
    return mean, std


normal_op = _inplace_sampler(
    "normal_(Tensor(a!) self, float mean=0, float std=1, *, Generator? generator=None) "
    "-> Tensor(a!)", _check_normal, fill_normal,
    doc="Fill self with normal samples of the given mean and standard deviation.")


def _check_bernoulli_float(self, p):
    p = float(p)
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={fmt(p)}")
    if self.dtype.category == dt.COMPLEX:
        raise _not_implemented("bernoulli_", self.dtype)
    return (p,)


bernoulli_float_op = _inplace_sampler(
    "bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) "
    "-> Tensor(a!)", _check_bernoulli_float, fill_bernoulli, method=False,
    doc="Fill self with 1 with probability p and 0 otherwise.")


def _probabilities(name: str, p: Tensor) -> None:
    """p must be floating with every element in [0, 1] (data checked only where it exists)."""
    if p.dtype.category != dt.FLOAT:
        raise _not_implemented(name, p.dtype)
    if p.device.type != "meta" and p.numel():
        a = p._array()
        if not ((a >= 0) & (a <= 1)).all():
            bad = a[~((a >= 0) & (a <= 1))].ravel()[0]
            raise RuntimeError(f"{name} expects all probabilities in p to be in [0, 1], but "
                               f"found p={fmt(float(bad))}")


def _check_bernoulli_tensor(self, p):
    if self.dtype.category == dt.COMPLEX:
        raise _not_implemented("bernoulli_", self.dtype)
    _probabilities("bernoulli_", p)
    expand_strides(p._shape, p._stride, self._shape, p.dtype,    # p must broadcast to self
                   p._storage.device.type)
    return (p,)


bernoulli_tensor_op = _inplace_sampler(
    "bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, Generator? generator=None) "
    "-> Tensor(a!)", _check_bernoulli_tensor, fill_bernoulli_tensor, method=False,
    doc="Fill self with 1 with probability p (broadcast to self) and 0 otherwise.")


def bernoulli_(self, p=0.5, *, generator=None):
    """bernoulli_(p=0.5, *, generator=None): 1 with probability p (a float or a tensor)."""
    if isinstance(p, Tensor):
        return bernoulli_tensor_op.functional(self, p, generator)
    return bernoulli_float_op.functional(self, p, generator)


def _check_random_dtype(self):
    if self.dtype.category == dt.COMPLEX:
        raise _not_implemented("random_", self.dtype)


def _int_arg(name: str, value) -> int:
    if isinstance(value, (float, complex)) or value is None:
        raise TypeError(f"random_(): argument '{name}' must be int, not "
                        f"{type(value).__name__}")
    value = operator.index(value)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"random_(): argument '{name}' must fit in int64, but got {value}")
    return value


def _check_in_range(from_: int, to_inc: int, d: dt.dtype) -> None:
    """Both ends must fit the dtype; floats warn beyond the exactly representable integers."""
    lo, hi = LIMITS[d]
    for value, name in ((from_, "from"), (to_inc, "to - 1")):
        if not lo <= value <= hi:
            raise RuntimeError(f"{name} is out of bounds for {CTYPE[d]}")
    if d.category == dt.FLOAT:
        digits = _DIGITS[d]
        for value, name in ((from_, "from"), (to_inc, "to - 1")):
            if not -(1 << digits) <= value <= 1 << digits:
                warn_user(f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                          f"precision limitations {CTYPE[d]} can support discrete uniform "
                          "distribution only within this range. This warning will become an "
                          "error in version 1.7 release, please fix the code in advance")


def _check_random_from(self, from_, to):
    """Validate [from, to) (to=None: up to the dtype's largest exact integer); returns the
    first value and how many values there are."""
    _check_random_dtype(self)
    d = self.dtype
    from_ = _int_arg("from", from_)
    floating = d.category == dt.FLOAT
    if to is not None:
        to = _int_arg("to", to)
        if from_ >= to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={from_} >= to={to}")
        if floating:
            from_, to = _adjust_from(from_, d), _adjust_to(to, d)
            if from_ >= to:
                raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than 'to'"
                                   f" casted to dtype, but got from={from_} >= to={to}")
        _check_in_range(from_, to - 1, d)
        return from_, to - from_
    if from_ == _INT64_MIN:
        return from_, 1 << 64
    if floating:
        to_inc = min(1 << _DIGITS[d], _INT64_MAX)
        from_ = _adjust_from(from_, d)
        if not from_ < to_inc:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than or equal"
                               f" to 'to_inc' casted to dtype, but got from={from_} > "
                               f"to_inc={to_inc}")
    else:
        to_inc = LIMITS[d][1]
    _check_in_range(from_, to_inc, d)
    return from_, to_inc - from_ + 1


def _check_random_default(self) -> tuple:
    """random_() validates as random_(0, None) but draws with its own transform."""
    _check_random_from(self, 0, None)
    return ()


random_from_op = _inplace_sampler(
    "random_.from(Tensor(a!) self, int from_, int? to, *, Generator? generator=None) "
    "-> Tensor(a!)", _check_random_from, fill_random, method=False,
    doc="Fill self with integers uniform in [from, to).")
random_to_op = _inplace_sampler(
    "random_.to(Tensor(a!) self, int to, *, Generator? generator=None) -> Tensor(a!)",
    lambda self, to: _check_random_from(self, 0, _int_arg("to", to)), fill_random,
    method=False,
    doc="Fill self with integers uniform in [0, to).")
random_default_op = _inplace_sampler(
    "random_(Tensor(a!) self, *, Generator? generator=None) -> Tensor(a!)",
    _check_random_default, fill_random_default, method=False,
    doc="Fill self with integers uniform over what the dtype holds exactly "
        "([0, 2**mantissa] for floats, [0, max] for integers).")


def random_(self, *args, generator=None, **kwargs):
    """random_(from=0, to=None, *, generator=None): integers uniform in [from, to).

    random_(to) samples [0, to); random_() samples [0, 2**mantissa] for floating dtypes and
    [0, max] for integer dtypes; random_(from, None) goes up to that same bound.
    """
    if not args and not kwargs:
        return random_default_op.functional(self, generator)
    if len(args) == 1 and not kwargs or (not args and list(kwargs) == ["to"]):
        return random_to_op.functional(self, (args or (kwargs["to"],))[0], generator)
    from_, to = _from_to_args("random_", args, kwargs, 0, None)
    return random_from_op.functional(self, from_, to, generator)


def _continuous_only(self, name: str, distribution: str, type_name: str) -> None:
    if self.dtype.category != dt.FLOAT:
        raise RuntimeError(f"{distribution} distribution is a continuous probability "
                           f"distribution. dtype must be a floating point but you specified "
                           f"{type_name}")


def _check_exponential(self, lambd):
    lambd = float(lambd)
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={fmt(lambd)}")
    _continuous_only(self, "exponential_", "Exponential", self.dtype.cname)
    return (lambd,)


exponential_op = _inplace_sampler(
    "exponential_(Tensor(a!) self, float lambd=1, *, Generator? generator=None) "
    "-> Tensor(a!)", _check_exponential, fill_exponential,
    doc="Fill self with exponential samples of rate lambd.")


def _check_geometric(self, p):
    p = float(p)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={fmt(p)}")
    if self.dtype is dt.bool or self.dtype.category == dt.COMPLEX:
        raise _not_implemented("geometric_", self.dtype)
    return (p,)


geometric_op = _inplace_sampler(
    "geometric_(Tensor(a!) self, float p, *, Generator? generator=None) -> Tensor(a!)",
    _check_geometric, fill_geometric,
    doc="Fill self with the number of Bernoulli(p) trials up to the first success (>= 1).")


def _check_log_normal(self, mean, std):
    mean, std = float(mean), float(std)
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={fmt(std)}")
    if self.dtype.category != dt.FLOAT:
        raise _not_implemented("log_normal_", self.dtype)
    return mean, std


log_normal_op = _inplace_sampler(
    "log_normal_(Tensor(a!) self, float mean=1, float std=2, *, Generator? generator=None) "
    "-> Tensor(a!)", _check_log_normal, fill_log_normal,
    doc="Fill self with exp(N(mean, std)) samples.")


def _check_cauchy(self, median, sigma):
    median, sigma = float(median), float(sigma)
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={fmt(sigma)}")
    _continuous_only(self, "cauchy_", "Cauchy", CTYPE[self.dtype])
    return median, sigma


cauchy_op = _inplace_sampler(
    "cauchy_(Tensor(a!) self, float median=0, float sigma=1, *, Generator? generator=None) "
    "-> Tensor(a!)", _check_cauchy, fill_cauchy,
    doc="Fill self with Cauchy samples of the given median and scale.")

for _m in (uniform_, bernoulli_, random_):
    export(_m.__name__, _m, method=True, function=False)


def _fill(t: Tensor, fresh: bool, decl, *args) -> Tensor:
    """Fill through an in-place sampler: a tensor made here goes straight to its backend
    kernel (no version bump, as for any factory); a user's `out=` tensor dispatches fully."""
    if fresh:
        return decl.functional.redispatch(t._keyset & BACKEND_MASK, t, *args)
    return decl.functional(t, *args)


# ---- sampling functions on tensors ---------------------------------------------------

def _contiguous_like(t: Tensor, d: dt.dtype | None = None) -> Tensor:
    return Tensor._empty(t._shape, t.dtype if d is None else d, t.device)


bernoulli_op = kernel_op("bernoulli(Tensor self, *, Generator? generator=None) -> Tensor",
                         function=False, method=False,
                         doc="1 with probability input (elementwise), else 0.")
bernoulli_op.on_cuda = "shared"


@bernoulli_op.impl("CPU")
def _bernoulli_cpu(self, generator=None):
    _probabilities("bernoulli", self)
    generator = _stream(generator, self)
    out = _contiguous_like(self)
    if out.numel():
        bernoulli_into(out, self, generator)
    return out


@bernoulli_op.impl("Meta")
def _bernoulli_meta(self, generator=None):
    _probabilities("bernoulli", self)
    return _contiguous_like(self)


def bernoulli(input, p=None, *, generator=None, out=None):
    """Draw 0/1 samples: with probabilities `input`, or with probability `p` everywhere."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if isinstance(p, Tensor):
        raise TypeError("bernoulli(): argument 'p' must be float, not Tensor; use "
                        "input.bernoulli_(p) to draw with tensor probabilities")
    if out is None:
        if p is None:
            return bernoulli_op.functional(input, generator)
        return _fill(_contiguous_like(input), True, bernoulli_float_op, p, generator)
    if out._shape != input._shape:
        out.resize_(input._shape)
    if p is None:
        return bernoulli_tensor_op.functional(out, input, generator)
    return bernoulli_float_op.functional(out, p, generator)


multinomial_op = kernel_op(
    "multinomial(Tensor self, int num_samples, bool replacement=False, *, "
    "Generator? generator=None) -> Tensor", function=False,
    doc="Indices sampled from the rows of input, taken as unnormalised probabilities.")


def _multinomial_shape(self, num_samples, replacement):
    if isinstance(num_samples, (float, complex)):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not "
                        f"{type(num_samples).__name__}")
    num_samples = operator.index(num_samples)
    if self.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if self.dtype.category != dt.FLOAT:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{self.dtype.cname}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    categories = self._shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if categories > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    return self._shape[:-1] + (num_samples,)


@multinomial_op.impl("CPU")
def _multinomial_cpu(self, num_samples, replacement=False, generator=None):
    shape = _multinomial_shape(self, num_samples, replacement)
    generator = _stream(generator, self)
    out = Tensor._empty(shape, dt.int64)
    if out.numel():
        multinomial_into(out, self, generator, replacement)
    return out


@multinomial_op.impl("Meta")
def _multinomial_meta(self, num_samples, replacement=False, generator=None):
    return Tensor._empty(_multinomial_shape(self, num_samples, replacement), dt.int64, META)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Sample `num_samples` category indices per row of `input` (unnormalised weights)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if out is None:
        return multinomial_op.functional(input, num_samples, replacement, generator)
    if out.dtype is not dt.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: {out.dtype.cname}")
    result = multinomial_op.functional(input, num_samples, replacement, generator)
    if out._shape != result._shape:
        out.resize_(result._shape)
    return out.copy_(result)


poisson_op = kernel_op("poisson(Tensor self, Generator? generator=None) -> Tensor",
                       method=False, doc="Poisson samples with the rates in input.")


@poisson_op.impl("CPU")
def _poisson_cpu(self, generator=None):
    if self.dtype.category != dt.FLOAT:
        raise _not_implemented("poisson", self.dtype)
    # PyTorch's Poisson sampler is its own; these draws are NumPy's, seeded from the stream
    rng = np.random.Generator(np.random.PCG64(int(_stream(generator, self)._random64(1)[0])))
    out = _contiguous_like(self)
    if out.numel():
        rates = self._array().astype(np.float64)
        if not (rates >= 0).all():
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        try:
            write(out, rng.poisson(rates))
        except ValueError:
            raise RuntimeError(f"invalid Poisson rate, expected rates up to about 9.2e18 (the "
                               f"int64 range), but found {fmt(float(rates.max()))}") from None
    return out


@poisson_op.impl("Meta")
def _poisson_meta(self, generator=None):
    if self.dtype.category != dt.FLOAT:
        raise _not_implemented("poisson", self.dtype)
    return _contiguous_like(self)


# normal: three tensor overloads (dispatcher ops) and the (mean, std, size) factory.

def _check_std_tensor(std: Tensor) -> None:
    if std.dtype.category == dt.COMPLEX:
        raise RuntimeError("normal expects standard deviation to be non-complex")
    if std.device.type != "meta" and std.numel() and not (std._array() >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")


def _check_std_float(std) -> float:
    std = float(std)
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {fmt(std)}")
    return std


def _normal_result(shape, d, device) -> Tensor:
    if d.category < dt.FLOAT:
        raise _not_implemented("normal", d)
    return Tensor._empty(shape, d, device)


def _normal_overload(schema, result_spec):
    """Declare one tensor overload of normal; `result_spec(mean, std)` -> (shape, dtype, t)."""
    decl = kernel_op(schema, function=False, method=False,
                     doc="Normal samples with elementwise means and standard deviations.")
    decl.on_cuda = "shared"

    @decl.impl("CPU")
    def cpu(mean, std, generator=None):
        shape, d, like = result_spec(mean, std)
        out = _normal_result(shape, d, like.device)
        return normal_values(_stream(generator, like), out, _operand(mean, d),
                             _operand(std, d))

    @decl.impl("Meta")
    def meta(mean, std, generator=None):
        shape, d, like = result_spec(mean, std)
        return _normal_result(shape, d, META)

    return decl


def _spec_tensor_float(mean, std):
    _check_std_float(std)
    return mean._shape, mean.dtype, mean


def _spec_float_tensor(mean, std):
    _check_std_tensor(std)
    return std._shape, std.dtype, std


def _spec_tensor_tensor(mean, std):
    _check_std_tensor(std)
    return broadcast_shapes2(mean._shape, std._shape), mean.dtype, mean


normal_tensor_float = _normal_overload(
    "normal.Tensor_float(Tensor mean, float std=1, *, Generator? generator=None) -> Tensor",
    _spec_tensor_float)
normal_float_tensor = _normal_overload(
    "normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor",
    _spec_float_tensor)
normal_tensor_tensor = _normal_overload(
    "normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor",
    _spec_tensor_tensor)

_NO_STD = object()


def normal(mean, std=_NO_STD, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, requires_grad=False, pin_memory=False):
    """Normal samples: normal(mean, std) with tensor and/or float mean and std (broadcast),
    or normal(mean, std, size) with floats, which makes a new tensor of that size."""
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not (mean_t or std_t):
        if size is None or std is _NO_STD:
            raise TypeError("normal() received an invalid combination of arguments: with a "
                            "float mean and std, a size is required, as in normal(0.0, 1.0, "
                            "(2, 3)); otherwise mean or std must be a Tensor")
        shape = _size_arg("normal", (size,))
        if out is None:
            t = backend_call(normal_float_float_op, device,
                             (mean, std, shape, generator, dtype, layout), (pin_memory,))
            return _finish(t, requires_grad)
        std = _check_std_float(std)
        t, fresh = _factory_tensor(shape, dtype, device, out)
        return _finish(_fill(t, fresh, normal_op, mean, std, generator), requires_grad)
    if size is not None or dtype is not None or device is not None or requires_grad:
        raise TypeError("normal(): size, dtype, device and requires_grad are only accepted "
                        "with a float mean and a float std")
    if std is _NO_STD:
        std = 1.0
    if mean_t and std_t:
        op, shape = normal_tensor_tensor, None
    elif mean_t:
        op, shape = normal_tensor_float, None if out is None else broadcast_shapes2(
            mean._shape, out._shape)
        if shape is not None and shape != mean._shape:
            mean = mean.expand(shape)
    else:
        op, shape = normal_float_tensor, None
    if out is None:
        return op.functional(mean, std, generator)
    if out.dtype.category < dt.FLOAT:
        raise _not_implemented("normal", out.dtype)
    result = op.functional(mean, std, generator)
    if out._shape != result._shape:
        resize_output(out, result._shape)
    return out.copy_(result)


# ---- random factories ----------------------------------------------------------------

def _factory_tensor(shape, dtype, device, out, default=None):
    """(tensor to fill, made here?) for a factory: `out` resized, or a new tensor."""
    if out is not None:
        check_out_dtype(dtype, out)
        if out._shape != shape:
            out.resize_(shape)
        return out, False
    d = dtype or default or dt.get_default_dtype()
    return Tensor._empty(shape, d, as_device(device)), True


def _random_factory(schema_head: str, schema_args: str, n_positional: int, like: bool, make):
    """Declare a random factory's overloads without and with a generator (PyTorch shows a
    call given `generator=` as the `.generator` one); `make(generator, positional, dtype,
    device, memory_format)` builds the result. Returns (op, generator op)."""
    options = f"{OPTIONS}, MemoryFormat? memory_format=None" if like else OPTIONS
    name, _, overload = schema_head.partition(".")
    generator_head = f"{name}.{overload}_generator" if overload else f"{name}.generator"
    if overload == "low_dtype":              # randint_like's spelling of its overloads
        generator_head = f"{name}.low_generator_dtype"

    def plain(*args):
        return make(None, args[:n_positional], *_options(args[n_positional:]))

    def with_generator(*args):
        return make(args[n_positional], args[:n_positional],
                    *_options(args[n_positional + 1:]))

    plain.__qualname__ = with_generator.__qualname__ = f"{name} (random factory)"
    op = factory_op(f"{schema_head}({schema_args}, *, {options}) -> Tensor", plain)
    generator_op = factory_op(f"{generator_head}({schema_args}, *, Generator? generator, "
                              f"{options}) -> Tensor", with_generator)
    return op, generator_op


def _options(options) -> tuple:
    """(dtype, device, memory_format) from the schema's trailing options."""
    dtype, _, device = options[:3]
    return dtype, device, options[4] if len(options) > 4 else None


def _sample_new(sampler, *params, default=None):
    """`make` for rand/randn/randint: a new tensor of `size` filled by `sampler`."""
    def make(generator, positional, dtype, device, memory_format):
        *values, size = positional
        t = Tensor._empty(tuple(size), dtype or default or dt.get_default_dtype(),
                          as_device(device))
        return _fill(t, True, sampler, *params, *values, generator)
    return make


def _sample_like(sampler, *params):
    """`make` for rand_like/randn_like/randint_like: a tensor like `input`, filled."""
    def make(generator, positional, dtype, device, memory_format):
        input, *values = positional
        t = empty_like_kernel(input, dtype, None, device, None, memory_format)
        return _fill(t, True, sampler, *params, *values, generator)
    return make


def _randint_new(generator, positional, dtype, device, memory_format):
    *bounds, size = positional
    low, high = (0, *bounds) if len(bounds) == 1 else bounds
    t = Tensor._empty(tuple(size), dtype or dt.int64, as_device(device))
    return _fill(t, True, random_from_op, low, high, generator)


def _randint_like(generator, positional, dtype, device, memory_format):
    input, *bounds = positional
    low, high = (0, *bounds) if len(bounds) == 1 else bounds
    t = empty_like_kernel(input, dtype, None, device, None, memory_format)
    return _fill(t, True, random_from_op, low, high, generator)


rand_ops = _random_factory("rand", "SymInt[] size", 1, False,
                           _sample_new(uniform_op, 0.0, 1.0))
randn_ops = _random_factory("randn", "SymInt[] size", 1, False,
                            _sample_new(normal_op, 0.0, 1.0))
rand_like_ops = _random_factory("rand_like", "Tensor self", 1, True,
                                _sample_like(uniform_op, 0.0, 1.0))
randn_like_ops = _random_factory("randn_like", "Tensor self", 1, True,
                                 _sample_like(normal_op, 0.0, 1.0))
randint_ops = _random_factory("randint", "SymInt high, SymInt[] size", 2, False,
                              _randint_new)
randint_low_ops = _random_factory("randint.low", "SymInt low, SymInt high, SymInt[] size", 3,
                                  False, _randint_new)
randint_like_ops = _random_factory("randint_like", "Tensor self, SymInt high", 2, True,
                                   _randint_like)
randint_like_low_ops = _random_factory("randint_like.low_dtype",
                                       "Tensor self, SymInt low, SymInt high", 3, True,
                                       _randint_like)


def _normal_float_float(mean, std, size, generator=None, dtype=None, layout=None, device=None,
                        pin_memory=None):
    std = _check_std_float(std)
    t = Tensor._empty(tuple(size), dtype or dt.get_default_dtype(), as_device(device))
    return _fill(t, True, normal_op, mean, std, generator)


normal_float_float_op = factory_op(
    f"normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, "
    f"{OPTIONS}) -> Tensor", _normal_float_float)


def _dispatch_new(ops, generator, positional, dtype, layout, device, pin_memory):
    """Call a random factory's overload (the `.generator` one when a generator is given)."""
    if generator is None:
        return backend_call(ops[0], device, (*positional, dtype, layout), (pin_memory,))
    return backend_call(ops[1], device, (*positional, generator, dtype, layout), (pin_memory,))


def _dispatch_like(ops, name, generator, positional, dtype, layout, device, memory_format):
    ks = like_keyset(name, positional[0])
    fmt = None if memory_format is preserve_format else memory_format
    if generator is None:
        return ops[0].dispatch(ks, *positional, dtype, layout, device, False, fmt)
    return ops[1].dispatch(ks, *positional, generator, dtype, layout, device, False, fmt)


def rand(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    """Uniform samples in [0, 1).

    >>> import glasstorch as torch
    >>> x = torch.rand(2, 3, generator=torch.Generator().manual_seed(0))
    >>> x.shape, bool(((x >= 0) & (x < 1)).all())
    (torch.Size([2, 3]), True)
    """
    shape = _size_arg("rand", sizes, size)
    if out is None:
        t = _dispatch_new(rand_ops, generator, (shape,), dtype, layout, device, pin_memory)
        return _finish(t, requires_grad)
    t, fresh = _factory_tensor(shape, dtype, device, out)
    return _finish(_fill(t, fresh, uniform_op, 0.0, 1.0, generator), requires_grad)


def randn(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False):
    """Standard normal samples (complex dtypes: N(0, 1/2) real and imaginary parts)."""
    shape = _size_arg("randn", sizes, size)
    if out is None:
        t = _dispatch_new(randn_ops, generator, (shape,), dtype, layout, device, pin_memory)
        return _finish(t, requires_grad)
    t, fresh = _factory_tensor(shape, dtype, device, out)
    return _finish(_fill(t, fresh, normal_op, 0.0, 1.0, generator), requires_grad)


def rand_like(input, *, generator=None, dtype=None, layout=None, device=None,
              requires_grad=False, memory_format=preserve_format):
    """rand with input's shape, dtype, device and (by default) strides."""
    t = _dispatch_like(rand_like_ops, "rand_like", generator, (input,), dtype, layout, device,
                       memory_format)
    return _finish(t, requires_grad)


def randn_like(input, *, generator=None, dtype=None, layout=None, device=None,
               requires_grad=False, memory_format=preserve_format):
    """randn with input's shape, dtype, device and (by default) strides."""
    t = _dispatch_like(randn_like_ops, "randn_like", generator, (input,), dtype, layout,
                       device, memory_format)
    return _finish(t, requires_grad)


def _randint_bound(name: str, position: int, value) -> int:
    if isinstance(value, Tensor) and value.dim() == 0:
        value = value.item()
    if isinstance(value, (float, complex, Tensor)) or value is None:
        raise TypeError(f"randint(): argument '{name}' (position {position}) must be int, not "
                        f"{type(value).__name__}")
    return operator.index(value)


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None,
            device=None, requires_grad=False, pin_memory=False):
    """Integers uniform in [low, high) (int64 unless dtype says otherwise).

    randint(high, size) and randint(low, high, size), as in PyTorch.
    """
    if size is None:
        if high is None:
            raise TypeError("randint() missing 1 required positional argument: 'size'")
        if not isinstance(high, (tuple, list)):
            raise TypeError(f"randint(): argument 'size' (position 2) must be tuple of ints, "
                            f"not {type(high).__name__}")
        low, high, size = 0, low, high           # randint(high, size)
        positions = (1, 1)
    elif high is None:
        low, high, positions = 0, low, (1, 1)    # randint(high, size=...)
    else:
        positions = (1, 2)
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' (position {positions[1] + 1}) must be "
                        f"tuple of ints, not {type(size).__name__}")
    low, high = _randint_bound("low", positions[0], low), _randint_bound("high", positions[1],
                                                                         high)
    shape = _size_arg("randint", (size,))
    if out is None:
        if positions == (1, 1):
            t = _dispatch_new(randint_ops, generator, (high, shape), dtype, layout, device,
                              pin_memory)
        else:
            t = _dispatch_new(randint_low_ops, generator, (low, high, shape), dtype, layout,
                              device, pin_memory)
        return _finish(t, requires_grad)
    t, fresh = _factory_tensor(shape, dtype, device, out, dt.int64)
    return _finish(_fill(t, fresh, random_from_op, low, high, generator), requires_grad)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None,
                 device=None, requires_grad=False, memory_format=preserve_format):
    """randint with input's shape, dtype and device: randint_like(x, high) or (x, low, high)."""
    if high is None:
        ops, bounds = randint_like_ops, (_randint_bound("high", 3, low),)
    else:
        ops = randint_like_low_ops
        bounds = (_randint_bound("low", 2, low), _randint_bound("high", 3, high))
    t = _dispatch_like(ops, "randint_like", generator, (input, *bounds), dtype, layout, device,
                       memory_format)
    return _finish(t, requires_grad)


def _check_randperm(n: int, d: dt.dtype) -> None:
    if d is dt.bool or d.category == dt.COMPLEX:
        raise _not_implemented("randperm", d)
    if d.category == dt.FLOAT:
        digits = _DIGITS[d]
        if n > (1 << digits) + 1:
            raise RuntimeError(f"n cannot be greater than {(1 << digits) + 1} for {d.cname} "
                               "type.")
    else:
        converted(n - 1 if n > 0 else n, d)


def _randperm_into(t: Tensor, n: int, generator, bump: bool) -> Tensor:
    source = _stream(generator, t) if t.device.type != "meta" else None
    return store_values(t, lambda: permutation(source, n), bump=bump)


def _randperm_make(generator, positional, dtype, device, memory_format):
    (n,) = positional
    shape = _size_arg("randperm", (n,))
    _check_randperm(n, dtype or dt.int64)
    return _randperm_into(Tensor._empty(shape, dtype or dt.int64, as_device(device)), n,
                          generator, False)


randperm_ops = _random_factory("randperm", "SymInt n", 1, False, _randperm_make)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """A random permutation of 0, 1, ..., n - 1 (int64 unless dtype says otherwise)."""
    if isinstance(n, (float, complex)) or isinstance(n, Tensor) and n.dim():
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    n = operator.index(n)
    if out is None:
        t = _dispatch_new(randperm_ops, generator, (n,), dtype, layout, device, pin_memory)
        return _finish(t, requires_grad)
    shape = _size_arg("randperm", (n,))
    _check_randperm(n, dtype or out.dtype)
    t, fresh = _factory_tensor(shape, dtype, device, out, dt.int64)
    return _finish(_randperm_into(t, n, generator, not fresh), requires_grad)


for _f in (bernoulli, multinomial, normal, rand, randn, rand_like, randn_like, randint,
           randint_like, randperm):
    export(_f.__name__, _f)
export("bernoulli", bernoulli, method=True, function=False)
