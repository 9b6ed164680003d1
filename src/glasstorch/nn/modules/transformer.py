"""The Transformer layers, as torch.nn, over MultiheadAttention (in activation.py, PyTorch's
path) and `nn.functional.multi_head_attention_forward`.

glasstorch computes PyTorch's reference ("slow") path. In inference (eval mode, no gradient,
batch_first, an even head count...) PyTorch switches to fused kernels whose results differ
in a few observable ways (NaN rows where every key is masked, the is_causal hint ignored,
exact GELU, zeros at the padded positions of an encoder stack); glasstorch notices the same
conditions and reproduces those results.

    >>> import glasstorch as torch
    >>> mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = torch.randn(3, 5, 8)
    >>> out, weights = mha(x, x, x)
    >>> tuple(out.shape), tuple(weights.shape)
    ((3, 5, 8), (3, 5, 5))
"""
from __future__ import annotations

import copy
import warnings

from ...autograd.grad_mode import is_grad_enabled
from ...ops.creation.factories import full
from ..functional.activation import gelu, relu
from ..functional.multi_head_attention import _canonical_mask, _none_or_dtype
from ..init import xavier_uniform_
from .activation import GELU, MultiheadAttention, ReLU
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder",
           "TransformerEncoderLayer", "TransformerDecoderLayer"]


# ---- Transformer layers --------------------------------------------------------------------

def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    """(sz, sz) float mask: 0 on and below the diagonal, -inf above (no peeking ahead)."""
    return full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(1)


def _get_seq_len(src, batch_first: bool) -> int:
    if src.dim() == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None) -> bool:
    """`is_causal` when given; when None, whether `mask` is exactly the causal float mask."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.size(-2)
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        make_causal = mask.shape == causal.shape and bool((mask == causal).all())
    return make_causal


def _get_clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _get_activation_fn(activation: str):
    if activation == "relu":
        return relu
    if activation == "gelu":
        return gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    """Self-attention then a two-layer feed-forward block, each with a residual connection
    and LayerNorm (after the residual sum, or before the block with `norm_first`)."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None) -> None:
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        if activation is relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "activation"):
            self.activation = relu

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """src: (S, N, E), (N, S, E) with batch_first, or (S, E)."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _none_or_dtype(src_mask), "src_mask",
                                               src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype,
                                   check_other=False)
        fused = self._fused_inference(src)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal,
                                   fused)
            x = x + self._ff_block(self.norm2(x), fused)
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal,
                                              fused))
            x = self.norm2(x + self._ff_block(x, fused))
        return x

    def _fused_inference(self, src) -> bool:
        """Whether PyTorch would run its fused encoder-layer kernel (eval, no gradient,
        batch_first, ...), whose results differ from the reference path: NaN rows for
        queries with every key masked, the is_causal hint ignored, and any GELU module
        computed as exact GELU."""
        attn = self.self_attn
        if (src.dim() != 3 or self.training or not attn.batch_first
                or attn.in_proj_bias is None or not attn._qkv_same_embed_dim
                or not self.activation_relu_or_gelu or self.norm1.eps != self.norm2.eps
                or attn.num_heads % 2
                or any(m._forward_hooks or m._forward_pre_hooks for m in self.modules())):
            return False
        if not is_grad_enabled():
            return True
        args = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight,
                attn.out_proj.bias, self.norm1.weight, self.norm1.bias, self.norm2.weight,
                self.norm2.bias, self.linear1.weight, self.linear1.bias,
                self.linear2.weight, self.linear2.bias)
        return not any(t is not None and t.requires_grad for t in args)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False, fused=False):
        if fused:       # the fused kernel runs attention itself: no module call, no hooks
            x = self.self_attn._attend(x, x, x, key_padding_mask, False, attn_mask, True,
                                       is_causal, True)[0]
        else:
            x = self.self_attn(x, x, x, attn_mask=attn_mask,
                               key_padding_mask=key_padding_mask, need_weights=False,
                               is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x, fused=False):
        if fused:
            act = relu if self.activation_relu_or_gelu == 1 else gelu
            return self.linear2(act(self.linear1(x)))
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's memory, then a feed-forward block, each
    with a residual connection and LayerNorm (post- or pre-norm as `norm_first`)."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None) -> None:
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias,
                                                 **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = (_get_activation_fn(activation) if isinstance(activation, str)
                           else activation)

    def __setstate__(self, state):
        state.setdefault("activation", relu)
        super().__setstate__(state)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        """tgt: (T, N, E) and memory: (S, N, E) ((N, *, E) with batch_first; or unbatched)."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask,
                                              tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


def _left_aligned(valid) -> bool:
    """Whether every row of the (N, S) `valid` mask is a run of True then only False."""
    return not bool(valid[:, 1:].logical_and(valid[:, :-1].logical_not()).any())


class TransformerEncoder(Module):
    """`num_layers` deep copies of `encoder_layer` applied in turn, then `norm` if given."""

    __constants__ = ["norm"]

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = self._why_not_nested(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why_not}", stacklevel=2)
            self.use_nested_tensor = False

    @staticmethod
    def _why_not_nested(layer) -> str:
        """Why PyTorch would not run this stack on nested (padding-free) tensors."""
        name = "encoder_layer"
        if not isinstance(layer, TransformerEncoderLayer):
            return f"{name} was not TransformerEncoderLayer"
        if layer.norm_first:
            return f"{name}.norm_first was True"
        if not layer.self_attn.batch_first:
            return (f"{name}.self_attn.batch_first was not True(use batch_first for better "
                    "inference performance)")
        if not layer.self_attn._qkv_same_embed_dim:
            return f"{name}.self_attn._qkv_same_embed_dim was not True"
        if layer.self_attn.in_proj_bias is None:
            return f"{name}.self_attn was passed bias=False"
        if not layer.activation_relu_or_gelu:
            return f"{name}.activation_relu_or_gelu was not True"
        if layer.norm1.eps != layer.norm2.eps:
            return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
        if layer.self_attn.num_heads % 2 == 1:
            return f"{name}.self_attn.num_heads is odd"
        return ""

    def _pads_to_zero(self, src, mask, key_padding_mask) -> bool:
        """Whether PyTorch would take its nested-tensor inference path, whose output is zero
        at padded positions (before `norm`)."""
        first = self.layers[0]
        if (not getattr(self, "use_nested_tensor", False) or first.training or src.dim() != 3
                or key_padding_mask is None or mask is not None):
            return False
        if getattr(self, "mask_check", True) and not _left_aligned(
                key_padding_mask.logical_not()):
            return False
        if not is_grad_enabled():
            return True
        attn, lin1, lin2 = first.self_attn, first.linear1, first.linear2
        args = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight,
                attn.out_proj.bias, first.norm1.weight, first.norm1.bias, first.norm2.weight,
                first.norm2.bias, lin1.weight, lin1.bias, lin2.weight, lin2.bias)
        return not any(t is not None and t.requires_grad for t in args)

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """src through every layer (then `norm`); `is_causal=None` detects a causal `mask`."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _none_or_dtype(mask), "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        first = self.layers[0]
        pads_to_zero = self._pads_to_zero(src, mask, src_key_padding_mask)
        seq_len = _get_seq_len(src, first.self_attn.batch_first)
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal,
                         src_key_padding_mask=src_key_padding_mask)
        if pads_to_zero:
            output = output.masked_fill((src_key_padding_mask != 0).unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """`num_layers` deep copies of `decoder_layer` applied in turn, then `norm` if given."""

    __constants__ = ["norm"]

    def __init__(self, decoder_layer, num_layers, norm=None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        """tgt through every layer, attending to `memory` (then `norm`)."""
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder model of "Attention Is All You Need": an encoder stack over the
    source and a decoder stack over the target attending to the encoded source."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False,
                 norm_first=False, bias=True, device=None, dtype=None) -> None:
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        """Encode `src`, then decode `tgt` against it."""
        is_batched = src.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if is_batched and src.size(batch_dim) != tgt.size(batch_dim):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The (sz, sz) causal float mask: -inf above the diagonal, 0 elsewhere."""
        return _generate_square_subsequent_mask(sz, dtype=dtype, device=device)

    def _reset_parameters(self) -> None:
        """Glorot-uniform every matrix parameter."""
        for p in self.parameters():
            if p.dim() > 1:
                xavier_uniform_(p)
