"""RNN, LSTM, GRU and their cells: parameters, argument checks and packing.

The layers call glasstorch.lstm / gru / rnn_tanh / rnn_relu (ops/nn/recurrent.py), which run
each layer and direction over the whole sequence as one operator with one autograd node, as
PyTorch's modules call its `_VF` functions; the cells call lstm_cell, gru_cell, rnn_*_cell.
"""
from __future__ import annotations

import math
import numbers
import warnings

from ...core.tensor import Tensor
from ...ops.creation.factories import empty, zeros
from ...ops.nn import recurrent as R
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _apply_permutation(tensor: Tensor, permutation: Tensor, dim: int = 1) -> Tensor:
    return tensor.index_select(dim, permutation)


def apply_permutation(tensor: Tensor, permutation: Tensor, dim: int = 1) -> Tensor:
    """Deprecated PyTorch helper: tensor.index_select(dim, permutation)."""
    warnings.warn("`apply_permutation` is deprecated, please use `tensor.index_select(dim, "
                  "permutation)` instead", FutureWarning, stacklevel=2)
    return _apply_permutation(tensor, permutation, dim)

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_LAYERS = {"RNN_TANH": R.rnn_tanh, "RNN_RELU": R.rnn_relu, "LSTM": R.lstm, "GRU": R.gru}


# ----------------------------------------------------------------------------- layers
class RNNBase(Module):
    """The shared machinery of RNN, LSTM and GRU: parameters, checks, packing, layers."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, "
                          "so non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                  ("input_size", input_size, int),
                                  ("hidden_size", hidden_size, int)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} should be of type {kind.__name__}, got: "
                                f"{type(value).__name__}")
            if kind is int and value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        num_directions = 2 if bidirectional else 1
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * num_directions
            for direction in range(num_directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for name, shape in shapes:
                    names.append(f"{name}_l{layer}{suffix}")
                    setattr(self, names[-1], Parameter(empty(shape, **kw)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op: there is no fused-weight backend to lay the parameters out for."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def check_input(self, input: Tensor, batch_sizes) -> None:
        w_dtype = self._flat_weights[0].dtype
        if input.dtype != w_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w_dtype}). Convert input: input.to({w_dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError("input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def _mini_batch(self, input, batch_sizes) -> int:
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.size(0) if self.batch_first else input.size(1)

    def get_expected_hidden_size(self, input: Tensor, batch_sizes) -> tuple:
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, self._mini_batch(input, batch_sizes),
                self.proj_size if self.proj_size > 0 else self.hidden_size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple,
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation):
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # --- the shared forward --------------------------------------------------------
    def _zeros_state(self, batch: int, size: int, like: Tensor) -> Tensor:
        num_directions = 2 if self.bidirectional else 1
        return zeros(self.num_layers * num_directions, batch, size, dtype=like.dtype,
                     device=like.device)

    def _prepare(self, input, hx):
        """Unpack or unsqueeze the input: (input, sizes, batch_sizes, hx, output info)."""
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            sizes = [int(s) for s in batch_sizes.tolist()]
            if hx is not None:
                hx = self.permute_hidden(hx, sorted_indices)
            return data, sizes, batch_sizes, hx, (input, unsorted_indices, True)
        if input.dim() not in (2, 3):
            # torch's wording differs by a word between RNN and LSTM/GRU
            name, what = ("RNN", "D tensor") if self.mode.startswith("RNN") else (self.mode, "D")
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}{what} "
                             "instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        if hx is not None:
            hx = self._check_hx_dims(hx, is_batched)
        return input, None, None, hx, (None, None, is_batched)

    def forward(self, input, hx=None):
        """(output, h_n) ((output, (h_n, c_n)) for LSTM); output packed if input is."""
        input, sizes, batch_sizes, hx, (packed, unsorted, is_batched) = self._prepare(
            input, hx)
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        lstm = self.mode == "LSTM"
        if hx is None:
            batch = sizes[0] if sizes is not None else self._mini_batch(input, None)
            hx = self._zeros_state(batch, real_hidden, input)
            if lstm:
                hx = (hx, self._zeros_state(batch, self.hidden_size, input))
        self.check_forward_args(input, hx, batch_sizes)
        if sizes is None and input.size(0 if not self.batch_first else 1) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        args = (list(hx) if lstm else hx, self._flat_weights, self.bias, self.num_layers,
                self.dropout, self.training, self.bidirectional)
        layers = _LAYERS[self.mode]
        if sizes is None:
            result = layers(input, *args, self.batch_first)
        else:
            result = layers(input, batch_sizes, *args)
        out, hidden = result[0], (tuple(result[1:]) if lstm else result[1])
        if packed is not None:
            return (PackedSequence(out, batch_sizes, packed.sorted_indices, unsorted),
                    self.permute_hidden(hidden, unsorted))
        if not is_batched:
            out = out.squeeze(0 if self.batch_first else 1)
            hidden = tuple(h.squeeze(1) for h in hidden) if lstm else hidden.squeeze(1)
        return out, hidden

    def _check_hx_dims(self, hx, is_batched):
        if is_batched:
            if hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                   f"{hx.dim()}-D tensor")
            return hx
        if hx.dim() != 2:
            raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                               f"{hx.dim()}-D tensor")
        return hx.unsqueeze(1)


class RNN(RNNBase):
    """Elman RNN: h_t = nonlinearity(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh).

    RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None)
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from "
                             "'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o), with an optional projection of h (proj_size).

    LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, device=None, dtype=None)
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes) -> tuple:
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, self._mini_batch(input, batch_sizes),
                self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def _check_hx_dims(self, hx, is_batched):
        want = 3 if is_batched else 2
        if hx[0].dim() != want or hx[1].dim() != want:
            kind = "batched 3-D" if is_batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                               f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        return tuple(hx) if is_batched else (hx[0].unsqueeze(1), hx[1].unsqueeze(1))


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn))).

    GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, device=None, dtype=None)
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ----------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """Parameters weight_ih, weight_hh, bias_ih, bias_hh of num_chunks gates."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, name, input, hx, n_states):
        """Check dims, unsqueeze unbatched input, zero-fill missing state (the cell op
        checks the sizes, against the weights', as PyTorch's)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        states = None if hx is None else ((hx,) if n_states == 1 else tuple(hx))
        if states is not None:
            for idx, value in enumerate(states):
                if value.dim() not in (1, 2):
                    what = "hidden" if n_states == 1 else f"hx[{idx}]"
                    raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got "
                                     f"{value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if states is None:
            state = zeros(input.size(0), self.hidden_size, dtype=input.dtype,
                          device=input.device)
            states = (state,) * n_states
        elif not is_batched:
            states = tuple(s.unsqueeze(0) for s in states)
        return input, states, is_batched


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = nonlinearity(x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        input, (h,), is_batched = self._batched("RNNCell", input, hx, 1)
        cell = R.rnn_tanh_cell if self.nonlinearity == "tanh" else R.rnn_relu_cell
        ret = cell(input, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: (h', c') from x and (h, c), gates i, f, g, o."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx=None):
        input, (h, c), is_batched = self._batched("LSTMCell", input, hx, 2)
        h, c = R.lstm_cell(input, (h, c), self.weight_ih, self.weight_hh, self.bias_ih,
                           self.bias_hh)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: h' = (1 - z) * n + z * h, gates r, z, n."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (h,), is_batched = self._batched("GRUCell", input, hx, 1)
        ret = R.gru_cell(input, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)
