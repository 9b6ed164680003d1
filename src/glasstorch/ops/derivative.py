"""An operator's derivative, declared on the operator itself (PyTorch's derivatives.yaml).

    @derivative(elementwise.mul, "MulBackward0")
    def _mul(grad, self, other, grad_input_mask): ...

The target is the declaration object (or, for an overload, `decl.overload("Scalar")`, or an
`Operator` made with `define`), never a name looked up elsewhere, so a formula module can only
be imported once its ops exist and the result does not depend on the order packages load
in. The autograd layer reads what is declared here when it records a call
(autograd/recording.py); this module knows nothing of nodes or engines.
"""
from __future__ import annotations

import inspect
import re

from .registry import operator_of


class Derivative:
    """A derivative formula: `formula(grad, **saved)` returns one gradient per Tensor input
    of the schema (None where there is none). The names it takes after `grad` are the
    schema arguments it needs, `result` (the output; `result0`, `result1`, ... name the
    outputs of a multi-output op), `<arg>_shape` (only the shape; a tuple of shapes for a
    list of tensors) or `<arg>_geometry` (shape, stride, storage offset); only those are
    saved. A formula that takes
    `grad_input_mask` gets one bool per Tensor input saying whether its gradient is wanted,
    and may return None for the others (PyTorch's output_mask). `node_name` is the grad_fn's
    name, or a function of the call's arguments where PyTorch's name depends on the overload
    used (SumBackward0/1). `node_class` is the autograd layer's, filled on first use.
    `needs` maps a saved argument to the Tensor inputs (by position among them) whose
    gradients use it: it is saved only when one of those requires grad, as PyTorch saves per
    input, so an in-place write to an argument no wanted gradient reads is no error.
    `recorder` is the autograd layer's straight-line code making a node, and `history` its
    code recording a call of the operator, both made on first use. `tensor_inputs` counts
    the schema's Tensor arguments (the gradients a formula returns), None where one is a
    list of tensors."""

    __slots__ = ("node_name", "node_class", "formula", "plan", "inplace_node_name", "outputs",
                 "saves_result", "needs", "recorder", "history", "tensor_inputs")

    def __init__(self, node_name, formula, schema, inplace_node_name=None, outputs=None,
                 needs=None):
        self.node_name = node_name
        self.node_class = None
        self.recorder = None
        self.history = None
        self.inplace_node_name = inplace_node_name
        self.outputs = outputs
        self.needs = needs
        self.formula = formula
        self.tensor_inputs = None if any(a.is_tensor_list for a in schema.arguments) else \
            len(schema.tensor_positions)
        names = [a.name for a in schema.arguments]
        plan = []   # (saved name, what to keep, argument index), resolved once
        for name in tuple(inspect.signature(formula).parameters)[1:]:
            if name == "grad_input_mask":
                plan.append((name, "mask", None))
            elif name == "result" or re.fullmatch(r"result\d+", name):
                plan.append((name, "result", int(name[6:] or 0)))
            elif name.endswith("_shape") and name[:-6] in names:
                plan.append((name, "shape", names.index(name[:-6])))
            elif name.endswith("_geometry") and name[:-9] in names:
                plan.append((name, "geometry", names.index(name[:-9])))
            elif name in names:
                plan.append((name, "value", names.index(name)))
            else:
                raise ValueError(f"derivative of {schema.qualified_name}: '{name}' is not an "
                                 f"argument of {schema} (nor 'result', '<arg>_shape' or '<arg>_geometry')")
        self.plan = tuple(plan)
        self.saves_result = any(kind == "result" for _, kind, _ in plan)


def derivative(op, node_name, *, inplace_node_name: str | None = None,
               outputs: tuple | None = None, needs: dict | None = None):
    """Decorator: declare the derivative of `op` (a declaration or an Operator).
    `inplace_node_name` names the node of its in-place form where PyTorch names it apart
    (leaky_relu_ records LeakyReluBackward1); `outputs` lists the differentiable outputs
    of a multi-output op when some floating ones are not (lstsq's singular values);
    `needs` says which inputs' gradients read each saved argument (see Derivative)."""
    operator = operator_of(op)

    def register(formula):
        operator.info["derivative"] = Derivative(node_name, formula, operator.schema,
                                                 inplace_node_name, outputs, needs)
        return formula
    return register


def not_differentiable(*ops) -> None:
    """Declare operators whose outputs never require grad (PyTorch's non_differentiable):
    comparisons, bit tests, counts, and the functions PyTorch gives no gradient at all
    (histc, the Bessel functions). No graph is recorded for them."""
    for op in ops:
        operator_of(op).info["autograd"] = "not differentiable"


def derivative_not_implemented(*ops) -> None:
    """Declare operators whose outputs require grad but whose backward raises, as
    PyTorch's do (floor_divide, heaviside): the graph gets a NotImplemented node."""
    for op in ops:
        operator_of(op).info["autograd"] = "not implemented"


def recorded_through(op, functional, node_name: str | None = None) -> None:
    """Declare how autograd records an in-place op that is not a structured declaration's
    in-place form (copy_, fill_.Tensor, index_put_): as `functional(self, *args)` computed
    out of place, whose result is stored into self; `node_name` renames the node recorded
    where PyTorch names it apart (fill_.Tensor's FillBackward3)."""
    operator_of(op).info["recorded_through"] = (functional, node_name)


def overwrites(op, node_name: str) -> None:
    """Declare an in-place op whose result does not depend on self's old values (the random
    fills, fill_.Scalar): autograd records a `node_name` node passing self a zero gradient."""
    operator_of(op).info["overwrites"] = node_name


# ---- forward mode (jvp) ---------------------------------------------------------------------
# Forward-mode AD (autograd/forward_ad.py) needs, per op, the tangent of its result from the
# tangents of its inputs. Most come from the backward formula (PyTorch's auto_element_wise:
# an element-wise op's Jacobian is diagonal, so J t is the vjp with t as the gradient; or the
# vjp differentiated once more); these facets say where an op needs more or less than that.

AUTO_LINEAR = "auto_linear"


def forward_derivative(op):
    """Decorator: the jvp formula of `op`, `formula(primals, tangents, result)`: primals are
    the call's arguments, tangents one per argument (None where an argument has none, a list
    for a Tensor[] argument); it returns the tangent of the result (a tuple for several)."""
    operator = operator_of(op)

    def register(formula):
        operator.info["jvp"] = formula
        return formula
    return register


def linear_in_inputs(*ops) -> None:
    """Declare ops linear in their floating Tensor arguments (views, add, sum, cat, ...):
    the tangent of the result is the op applied to the tangents (PyTorch's auto_linear)."""
    for op in ops:
        operator_of(op).info["jvp"] = AUTO_LINEAR
