"""`torch.export.ExportedProgram`: an exported graph with its signature and weights."""
from __future__ import annotations

import copy

from ..core.shape import contiguous_strides
from ..core.tensor import Tensor
from ..fx.experimental.proxy_tensor import ProxyTorchDispatchMode, PythonKeyTracer
from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..nn.parameter import Parameter
from ..ops.creation.factories import empty_strided
from ..utils._pytree import tree_flatten, tree_unflatten
from .._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from ._sizes import fit_sizes, specialize
from .dynamic_shapes import check_call
from .graph_signature import ExportGraphSignature, InputKind, OutputKind, OutputSpec, \
    TensorArgument


def fresh_fake(value: Tensor, mode: FakeTensorMode) -> FakeTensor:
    """A fake of `mode` with `value`'s metadata (`value` may be another mode's fake)."""
    return fake_like(tuple(value.shape), value.stride(), value.dtype, value.device,
                     value.requires_grad, mode)


def fake_like(shape, stride, dtype, device, requires_grad: bool, mode) -> FakeTensor:
    """A fake tensor of `mode` with this metadata and no data."""
    meta = empty_strided(tuple(shape), tuple(stride), dtype=dtype, device="meta")
    fake = FakeTensor._wrap(meta, device, mode)
    return fake.requires_grad_(True) if requires_grad else fake


class ExportedProgram:
    """What `torch.export.export` returns: `graph_module` (ATen ops; parameters and
    buffers are placeholders), `graph_signature`, `state_dict`, `range_constraints`;
    `module()` is a callable module equal to the original."""

    def __init__(self, graph_module: GraphModule, graph_signature: ExportGraphSignature,
                 state_dict: dict, *, in_spec, out_spec, input_names: list, fixed_inputs: dict,
                 example_shapes: list, ranges: dict, sizes: dict | None = None,
                 training: bool = False, constants: dict | None = None):
        self.graph_module = graph_module
        self.graph_signature = graph_signature
        self.state_dict = state_dict              # parameters and persistent buffers
        self.constants = constants or {}          # non-persistent buffers
        self._in_spec, self._out_spec = in_spec, out_spec
        self._input_names = input_names           # one per leaf of (args, kwargs)
        self._fixed_inputs = fixed_inputs         # non-tensor inputs: fixed at export
        self._example_shapes = example_shapes     # per user tensor input
        self._ranges = ranges                     # (tensor input, dim) -> (name, min, max)
        self._sizes = sizes or {}                 # int arguments that follow them (_sizes.py)
        self._training = training

    @property
    def graph(self):
        return self.graph_module.graph

    @property
    def range_constraints(self) -> dict:
        """{dim name: (min, max)} of the dynamic dimensions."""
        return {name: (lo, hi) for name, lo, hi in self._ranges.values()}

    @property
    def call_spec(self) -> tuple:
        return self._in_spec, self._out_spec

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use "
                           "`exported_program.module()` instead.")

    def __str__(self) -> str:
        code = self.graph_module.print_readable(print_output=False).rstrip()
        body = "\n".join("    " + line for line in code.splitlines())
        signature = "\n".join("    " + line for line in
                              str(self.graph_signature).splitlines())
        return (f"ExportedProgram:\n{body}\n\nGraph signature: \n{signature}\n"
                f"Range constraints: {self.range_constraints}\n")

    # ---- running it ------------------------------------------------------------------
    def module(self) -> GraphModule:
        """A GraphModule taking the original call's arguments: parameters and buffers are
        its attributes again (at their original paths), calls are checked against the
        exported shapes and ranges."""
        graph = Graph()
        env = {}
        roles = {s.arg.name: s for s in self.graph_signature.input_specs}
        root = {}
        for node in self.graph.nodes:
            spec = roles.get(node.name) if node.op == "placeholder" else None
            if spec is not None and spec.kind is not InputKind.USER_INPUT:
                env[node] = graph.get_attr(spec.target)
                env[node].meta.update(node.meta)
                value = self.state_dict.get(spec.target, self.constants.get(spec.target))
                root[spec.target] = (value if spec.kind is not InputKind.PARAMETER
                                     or isinstance(value, Parameter) else Parameter(value))
            elif node.op == "placeholder":
                env[node] = graph.placeholder(node.name)
                env[node].meta.update(node.meta)
            else:
                env[node] = graph.node_copy(node, lambda n: env[n])
                if node.op == "get_attr":
                    root[node.target] = getattr(self.graph_module, node.target)
        module = _UnliftedModule(root, graph, "GraphModule")
        for target in self.constants:              # non-persistent, as in the original
            owner, _, field = target.rpartition(".")
            (module.get_submodule(owner) if owner else module) \
                ._non_persistent_buffers_set.add(field)
        module.train(self._training)
        module._program = self
        module._moves = {}
        return module

    def moves(self, tensors: list) -> dict:
        """How far each dynamic dimension of a call's tensors is from the example's."""
        return {(p, d): tensors[p].shape[d] - self._example_shapes[p][d]
                for (p, d) in self._ranges}

    def _flat_inputs(self, args, kwargs) -> list:
        leaves, spec = tree_flatten((args, dict(kwargs)))
        if spec != self._in_spec:
            raise TypeError(f"the call's inputs are structured as {spec}, the exported "
                            f"program's as {self._in_spec}")
        tensors = []
        for name, value in zip(self._input_names, leaves):
            if name in self._fixed_inputs:
                if value != self._fixed_inputs[name]:
                    raise AssertionError(f"Guard failed: {name} == {self._fixed_inputs[name]!r}")
            else:
                tensors.append(value)
        check_call(self._ranges, [n for n in self._input_names if n not in self._fixed_inputs],
                   self._example_shapes, tensors)
        return tensors

    # ---- transforming it -------------------------------------------------------------
    def run_decompositions(self, decomp_table: dict | None = None) -> "ExportedProgram":
        """A new ExportedProgram whose graph is retraced with `decomp_table` (default:
        the core ATen decompositions), so that composite ops become core ATen ops."""
        if decomp_table is None:
            from .._decomp import core_aten_decompositions
            decomp_table = core_aten_decompositions()
        gm, output_nodes = self._retrace(decomp_table, None)
        sizes = fit_sizes(gm, self._ranges, self._example_shapes,
                          lambda shapes: self._retrace(decomp_table, shapes)[0])
        signature = ExportGraphSignature(
            list(self.graph_signature.input_specs),
            [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(n.name), None)
             for n in output_nodes])
        return ExportedProgram(gm, signature, self.state_dict, in_spec=self._in_spec,
                               out_spec=self._out_spec, input_names=self._input_names,
                               fixed_inputs=self._fixed_inputs,
                               example_shapes=self._example_shapes, ranges=self._ranges,
                               sizes=sizes, training=self._training,
                               constants=self.constants)

    def _retrace(self, decomp_table: dict, shapes) -> tuple:
        """(graph module, output nodes) of this graph traced again on fakes with
        `decomp_table`; with `shapes`, at those user input shapes."""
        source = self.graph_module
        if shapes is not None:
            source = copy.deepcopy(source)
            moves = {(p, d): shapes[p][d] - self._example_shapes[p][d] for p, d in self._ranges}
            specialize(source.graph, self._sizes, moves)
            source.recompile()
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        tracer = PythonKeyTracer()
        tracer.root = source
        fakes = []
        user = iter(range(len(self._example_shapes)))
        kinds = {s.arg.name: s.kind for s in self.graph_signature.input_specs}
        for node in self.graph.nodes:
            if node.op != "placeholder":
                continue
            val = node.meta["val"]
            if shapes is not None and kinds.get(node.name) is InputKind.USER_INPUT:
                shape = tuple(shapes[next(user)])
                fake = fake_like(shape, contiguous_strides(shape), val.dtype, val.device,
                                 val.requires_grad, fake_mode)
            else:
                fake = fresh_fake(val, fake_mode)
            tracer.track(fake, tracer.graph.placeholder(node.name))
            fakes.append(fake)
        with fake_mode, ProxyTorchDispatchMode(tracer, decomp_table):
            outputs = source(*fakes)
        output_nodes = [tracer.create_arg(v) for v in outputs]
        tracer.graph.output(tuple(output_nodes))
        return GraphModule(source, tracer.graph, "GraphModule"), output_nodes


class _UnliftedModule(GraphModule):
    """`ExportedProgram.module()`'s class: a GraphModule called with the original
    arguments (flattened, checked), returning the original output structure."""

    def __call__(self, *args, **kwargs):
        program = self.__dict__["_program"]
        tensors = program._flat_inputs(args, kwargs)
        moves = program.moves(tensors)
        if moves != self.__dict__["_moves"] and program._sizes:
            specialize(self.graph, program._sizes, moves)
            self.recompile()
            self.__dict__["_moves"] = moves
        result = super().__call__(*tensors)
        return tree_unflatten(list(result), program._out_spec)
