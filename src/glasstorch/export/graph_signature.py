"""`torch.export.graph_signature`: which placeholders of an exported graph are parameters,
buffers or user inputs, and which outputs are the user's."""
from __future__ import annotations

import enum
from dataclasses import dataclass


class InputKind(enum.Enum):
    USER_INPUT = 1
    PARAMETER = 2
    BUFFER = 3
    CONSTANT_TENSOR = 4
    CUSTOM_OBJ = 5
    TOKEN = 6


class OutputKind(enum.Enum):
    USER_OUTPUT = 1
    LOSS_OUTPUT = 2
    BUFFER_MUTATION = 3
    GRADIENT_TO_PARAMETER = 4
    GRADIENT_TO_USER_INPUT = 5
    USER_INPUT_MUTATION = 6
    TOKEN = 7


@dataclass
class TensorArgument:
    name: str


@dataclass
class InputSpec:
    kind: InputKind
    arg: TensorArgument
    target: str | None
    persistent: bool | None = None


@dataclass
class OutputSpec:
    kind: OutputKind
    arg: TensorArgument
    target: str | None


@dataclass
class ExportGraphSignature:
    """The placeholders' and outputs' roles, in graph order (PyTorch's class)."""

    input_specs: list
    output_specs: list

    def _inputs(self, kind) -> tuple:
        return tuple(s.target for s in self.input_specs if s.kind is kind)

    @property
    def parameters(self) -> tuple:
        return self._inputs(InputKind.PARAMETER)

    @property
    def buffers(self) -> tuple:
        return self._inputs(InputKind.BUFFER)

    @property
    def lifted_tensor_constants(self) -> tuple:
        return self._inputs(InputKind.CONSTANT_TENSOR)

    @property
    def user_inputs(self) -> tuple:
        return tuple(s.arg.name for s in self.input_specs if s.kind is InputKind.USER_INPUT)

    @property
    def user_outputs(self) -> tuple:
        return tuple(s.arg.name for s in self.output_specs if s.kind is OutputKind.USER_OUTPUT)

    @property
    def inputs_to_parameters(self) -> dict:
        return {s.arg.name: s.target for s in self.input_specs if s.kind is InputKind.PARAMETER}

    @property
    def inputs_to_buffers(self) -> dict:
        return {s.arg.name: s.target for s in self.input_specs if s.kind is InputKind.BUFFER}

    @property
    def inputs_to_lifted_tensor_constants(self) -> dict:
        return {s.arg.name: s.target for s in self.input_specs
                if s.kind is InputKind.CONSTANT_TENSOR}

    def __str__(self) -> str:
        lines = ["# inputs"]
        for s in self.input_specs:
            line = f"{s.arg.name}: {s.kind.name}"
            if s.target is not None:
                line += f" target={s.target!r}"
            if s.persistent is not None:
                line += f" persistent={s.persistent}"
            lines.append(line)
        lines += ["", "# outputs"]
        lines += [f"{s.arg.name}: {s.kind.name}" for s in self.output_specs]
        return "\n".join(lines) + "\n"
