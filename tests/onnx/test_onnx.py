"""torch.onnx.export: each layer's model passes onnx.checker, and onnxruntime's outputs
match eager (atol 1e-5) at the example batch size and, through dynamic_axes, another."""
import io

import numpy as np
import pytest

import glasstorch as torch
import glasstorch.nn as nn
import glasstorch.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


class Lambda(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x)[0]


class Recurrent(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell

    def forward(self, x):
        return self.rnn(x)[0]


def _shape_ops(x):
    a = x.view(x.shape[0], -1).reshape(x.shape[0], 3, 4).transpose(1, 2).permute(0, 2, 1)
    b, c = torch.split(a.flatten(1), 6, dim=1)
    d = torch.cat([b, c * 2], 1)[:, 1:9:2]
    e = torch.stack([d, -d], 1).select(1, 0).unsqueeze(1).squeeze(1)
    return e + torch.gather(x, 2, torch.zeros(x.shape[0], 3, 2, dtype=torch.int64)).sum()


def _reductions(x):
    return (x.sum(1) + x.mean(1, keepdim=True).squeeze(1) + x.amax(1) - x.amin(1)
            + x.var(1) + x.prod(1) + x.max(1).values + x.norm(dim=1)
            + x.argmax(1).to(torch.float32))


# name -> (model factory, example input shape without the batch, input dtype)
LAYERS = {
    "linear": (lambda: nn.Linear(6, 4), (6,)),
    "linear_3d": (lambda: nn.Linear(6, 4, bias=False), (5, 6)),
    "conv1d": (lambda: nn.Conv1d(2, 3, 3, stride=2, padding=1), (2, 9)),
    "conv2d": (lambda: nn.Conv2d(2, 4, 3, dilation=2, groups=2, padding=2), (2, 9, 9)),
    "conv3d": (lambda: nn.Conv3d(2, 3, 2), (2, 4, 4, 4)),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(2, 3, 3, stride=2), (2, 5)),
    "conv_transpose2d": (lambda: nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1,
                                                    output_padding=1), (2, 5, 5)),
    "conv_transpose3d": (lambda: nn.ConvTranspose3d(2, 2, 2), (2, 3, 3, 3)),
    "batch_norm": (lambda: nn.Sequential(nn.BatchNorm2d(3), nn.BatchNorm2d(3, affine=False)),
                   (3, 4, 4)),
    "layer_norm": (lambda: nn.LayerNorm([3, 4]), (3, 4)),
    "group_norm": (lambda: nn.GroupNorm(2, 4), (4, 3, 3)),
    "activations": (lambda: nn.Sequential(
        nn.ReLU(), nn.GELU(), nn.Tanh(), nn.SiLU(), nn.LeakyReLU(0.1), nn.ELU(0.5),
        nn.Softplus(beta=2.0), nn.Hardswish(), nn.Hardsigmoid(), nn.ReLU6(), nn.Mish(),
        nn.GELU(approximate="tanh"), nn.PReLU(), nn.Sigmoid()), (7,)),
    "prelu_channels": (lambda: nn.PReLU(3), (3, 4)),
    "pooling_2d": (lambda: nn.Sequential(nn.MaxPool2d(2), nn.AvgPool2d(3, 1, padding=1),
                                         nn.AdaptiveAvgPool2d(2), nn.AdaptiveMaxPool2d(1)),
                   (3, 8, 8)),
    "pooling_1d": (lambda: nn.Sequential(nn.MaxPool1d(2), nn.AvgPool1d(2),
                                         nn.AdaptiveAvgPool1d(1)), (3, 8)),
    "pooling_3d": (lambda: nn.Sequential(nn.MaxPool3d(2), nn.AvgPool3d(1)), (2, 4, 4, 4)),
    "embedding": (lambda: nn.Embedding(10, 4), (5,)),
    "dropout": (lambda: nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)), (4,)),
    "softmax": (lambda: nn.Sequential(nn.Softmax(-1), nn.LogSoftmax(1)), (3,)),
    "flatten": (lambda: nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(18, 3)),
                (1, 5, 5)),
    "shape_ops": (lambda: Lambda(_shape_ops), (3, 4)),
    "reductions": (lambda: Lambda(_reductions), (3, 4)),
    "attention": (lambda: Attention(), (5, 8)),
    "sdpa": (lambda: Lambda(lambda x: F.scaled_dot_product_attention(x, x, x)), (2, 5, 4)),
    "lstm": (lambda: Recurrent(nn.LSTM(3, 4, batch_first=True)), (5, 3)),
    "gru": (lambda: Recurrent(nn.GRU(3, 4, num_layers=2, batch_first=True)), (5, 3)),
    "lstm_bidirectional": (lambda: Recurrent(nn.LSTM(3, 4, num_layers=2, bidirectional=True,
                                                     batch_first=True)), (5, 3)),
    "rnn_relu": (lambda: Recurrent(nn.RNN(3, 4, nonlinearity="relu", batch_first=True)),
                 (5, 3)),
    "rnn_tanh_no_bias": (lambda: Recurrent(nn.RNN(3, 4, bias=False, batch_first=True)), (5, 3)),
    "lstm_cell": (lambda: Recurrent(nn.LSTMCell(3, 4)), (3,)),
    "gru_cell": (lambda: nn.GRUCell(3, 4), (3,)),
    "rnn_cell": (lambda: nn.RNNCell(3, 4), (3,)),
    "rnn_relu_cell_no_bias": (lambda: nn.RNNCell(3, 4, bias=False, nonlinearity="relu"), (3,)),
}


def _input(name, batch, shape):
    if name == "embedding":
        return torch.randint(0, 10, (batch,) + shape)
    return torch.randn((batch,) + shape)


def _session(proto):
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_eager_at_two_batch_sizes(name):
    torch.manual_seed(0)
    factory, shape = LAYERS[name]
    model = factory().eval()
    buffer = io.BytesIO()
    program = torch.onnx.export(model, (_input(name, 2, shape),), buffer,
                                input_names=["x"], output_names=["y"],
                                dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    proto = onnx.load_from_string(buffer.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    assert proto.opset_import[0].version == 20
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    session = _session(proto)
    for batch in (2, 3):
        x = _input(name, batch, shape)
        (got,) = session.run(None, {"x": x.numpy()})
        expected = model(x).detach().numpy()
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-5)
    assert program.model_proto.graph == proto.graph


def test_transformer_with_dynamic_batch_and_sequence():
    from glasstorch.examples.chargpt import GPT
    torch.manual_seed(0)
    model = GPT(20, 16, d_model=16, n_head=2, n_layer=2).eval()
    program = torch.onnx.export(model, (torch.randint(0, 20, (2, 8)),), input_names=["idx"],
                                dynamic_axes={"idx": {0: "batch", 1: "time"}})
    onnx.checker.check_model(program.model_proto, full_check=True)
    session = _session(program.model_proto)
    for batch, time in ((3, 5), (1, 16)):
        idx = torch.randint(0, 20, (batch, time))
        np.testing.assert_allclose(session.run(None, {"idx": idx.numpy()})[0],
                                   model(idx).detach().numpy(), atol=1e-5)


def test_dynamic_axes_by_list_and_default_input_names():
    model = nn.Linear(3, 2)
    proto = torch.onnx.export(model, (torch.randn(4, 3),), dynamic_axes={"input": [0]}
                              ).model_proto
    assert proto.graph.input[0].name == "input"
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == \
        "input_dynamic_axes_1"
    x = torch.randn(7, 3)
    np.testing.assert_allclose(_session(proto).run(None, {"input": x.numpy()})[0],
                               model(x).detach().numpy(), atol=1e-6)


def test_initializers_are_named_by_state_dict_keys():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).eval()
    proto = torch.onnx.export(model, (torch.randn(2, 3),), do_constant_folding=False
                              ).model_proto
    assert {t.name for t in proto.graph.initializer} == {"0.weight", "0.bias", "1.weight",
                                                         "1.bias", "1.running_mean",
                                                         "1.running_var"}
    assert [i.name for i in proto.graph.input] == ["input"]
    assert "Transpose" in [n.op_type for n in proto.graph.node]


def test_constant_folding_transposes_weights_ahead():
    model = nn.Linear(3, 4)
    proto = torch.onnx.export(model, (torch.randn(2, 3),)).model_proto
    assert [n.op_type for n in proto.graph.node] == ["Gemm"]
    (weight,) = [t for t in proto.graph.initializer if list(t.dims) == [3, 4]]
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(weight),
                                  model.weight.detach().numpy().T)


def test_outputs_that_repeat_or_are_inputs():
    model = Lambda(lambda x: (x, (x * 2), (x * 2).relu()))
    x = torch.randn(3)
    proto = torch.onnx.export(model, (x,), output_names=["same", "double", "relu"]
                              ).model_proto
    onnx.checker.check_model(proto, full_check=True)
    outs = _session(proto).run(None, {"args_0": x.numpy()})
    expected = model(x)
    for got, want in zip(outs, expected):
        np.testing.assert_allclose(got, want.numpy(), atol=1e-6)
    twice = Lambda(lambda x: (x.exp(), x.exp()))
    y = twice(x)
    proto = torch.onnx.export(twice, (x,), output_names=["a", "b"]).model_proto
    a, b = _session(proto).run(None, {"args_0": x.numpy()})
    np.testing.assert_allclose(a, y[0].numpy(), atol=1e-6)
    np.testing.assert_allclose(b, y[1].numpy(), atol=1e-6)


def test_dynamo_false_writes_a_file_and_returns_none(tmp_path):
    path = tmp_path / "m.onnx"
    model = nn.Linear(3, 2)
    assert torch.onnx.export(model, (torch.randn(1, 3),), path, dynamo=False,
                             opset_version=17) is None
    proto = onnx.load(path)
    assert proto.opset_import[0].version == 17
    x = torch.randn(1, 3)
    np.testing.assert_allclose(_session(proto).run(None, {"input": x.numpy()})[0],
                               model(x).detach().numpy(), atol=1e-6)


def test_onnx_program_runs_with_onnxruntime():
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh())
    x = torch.randn(4, 3)
    program = torch.onnx.export(model, (x,))
    (out,) = program(x)
    assert torch.allclose(out, model(x), atol=1e-6)


def test_is_in_onnx_export_and_training_mode_restored():
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(torch.onnx.is_in_onnx_export())
            return x * 2

    model = Probe().train()
    torch.onnx.export(model, (torch.ones(2),))
    assert seen and all(seen) and not torch.onnx.is_in_onnx_export()
    assert model.training


def test_unsupported_op_raises_exporter_error():
    model = Lambda(lambda x: torch.fft.fft(x).real)
    with pytest.raises(torch.onnx.OnnxExporterError, match="fft"):
        torch.onnx.export(model, (torch.randn(4),))
    with pytest.raises(torch.onnx.OnnxExporterError, match="opset"):
        torch.onnx.export(nn.ReLU(), (torch.randn(4),), opset_version=11)


def test_exported_program_is_accepted():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    ep = torch.export.export(model, (torch.randn(2, 3),))
    x = torch.randn(2, 3)
    (out,) = torch.onnx.export(ep)(x)
    assert torch.allclose(out, model(x), atol=1e-6)
