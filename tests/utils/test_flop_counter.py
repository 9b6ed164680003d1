"""glasstorch.utils.flop_counter side by side with torch.utils.flop_counter: the same model's
forward and training step counted by both (totals, per-module and per-op counts), the
matmul family, transposed convolutions, attention, the table, custom formulas, counting
on FakeTensors."""
import pytest

import glasstorch as gt
from tests.oracle import oracle_torch


def flop_module(T):
    if T is gt:
        from glasstorch.utils import flop_counter
    else:
        from torch.utils import flop_counter
    return flop_counter


def counted(T, program, **options):
    """(total, {module: {op name: flops}}) of program(T) under T's FlopCounterMode."""
    with flop_module(T).FlopCounterMode(display=False, **options) as counter:
        program(T)
    counts = {mod: {str(op): n for op, n in ops.items()}
              for mod, ops in counter.get_flop_counts().items()}
    return counter.get_total_flops(), counts


def cnn(T):
    T.manual_seed(0)
    return T.nn.Sequential(T.nn.Conv2d(3, 8, 3, padding=1), T.nn.ReLU(),
                           T.nn.Conv2d(8, 4, 3, stride=2, groups=2), T.nn.Flatten(),
                           T.nn.Sequential(T.nn.Linear(4 * 3 * 3, 16), T.nn.Tanh(),
                                           T.nn.Linear(16, 10)))


def forward(T):
    cnn(T)(T.randn(2, 3, 8, 8))


def training_step(T):
    model = cnn(T)
    opt = T.optim.SGD(model.parameters(), lr=0.1)
    loss = T.nn.functional.cross_entropy(model(T.randn(2, 3, 8, 8)), T.tensor([1, 7]))
    loss.backward()
    opt.step()


def training_step_with_input_grad(T):
    model = cnn(T)
    model(T.randn(2, 3, 8, 8, requires_grad=True)).sum().backward()


def two_training_steps(T):
    model = cnn(T)
    opt = T.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        model(T.randn(2, 3, 8, 8)).sum().backward()
        opt.step()


@pytest.mark.parametrize("program", [forward, training_step, training_step_with_input_grad,
                                     two_training_steps])
def test_model_counts_match_torch(program):
    ours = counted(gt, program)
    theirs = counted(oracle_torch(), program)
    assert ours == theirs
    assert ours[0] > 0 and set(ours[1]) >= {"Global", "Sequential", "Sequential.0",
                                            "Sequential.4.2"}


def matmul_family(T):
    T.bmm(T.randn(2, 3, 4), T.randn(2, 4, 5))
    T.baddbmm(T.randn(2, 3, 5), T.randn(2, 3, 4), T.randn(2, 4, 5))
    T.addmm(T.randn(5), T.randn(3, 4), T.randn(4, 5))
    T.mm(T.randn(3, 4), T.randn(4, 5))


def matmul_shapes(T):
    """matmul on every rank pairing: glasstorch counts its one matmul call as PyTorch
    counts the mm/bmm it lowers to (matrix-vector products count nothing in either)."""
    for a, b in (((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
                 ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((2, 1, 3, 4), (5, 4, 2))):
        T.matmul(T.randn(*a), T.randn(*b))


def conv_transpose_backward(T):
    x = T.randn(1, 4, 5, 5, requires_grad=True)
    w = T.randn(4, 2, 3, 3, requires_grad=True)
    T.nn.functional.conv_transpose2d(x, w, stride=2, groups=2).sum().backward()


def conv1d_weight_only_backward(T):
    w = T.randn(3, 2, 3, requires_grad=True)
    T.nn.functional.conv1d(T.randn(2, 2, 9), w, padding=1, dilation=2).sum().backward()


@pytest.mark.parametrize("program", [matmul_family, conv_transpose_backward,
                                     conv1d_weight_only_backward])
def test_op_counts_match_torch(program):
    assert counted(gt, program) == counted(oracle_torch(), program)


def test_matmul_totals_match_torchs_lowering():
    assert counted(gt, matmul_shapes)[0] == counted(oracle_torch(), matmul_shapes)[0]


def attention(T):
    q = T.randn(2, 3, 5, 8, requires_grad=True)
    k = T.randn(2, 3, 7, 8, requires_grad=True)
    v = T.randn(2, 3, 7, 4, requires_grad=True)
    T.nn.functional.scaled_dot_product_attention(q, k, v).sum().backward()


def test_attention_counts_match_torchs_math_kernel():
    """PyTorch's fused CPU attention kernel has no formula; its math kernel (the one
    glasstorch's attention is written as) is counted, and the totals agree."""
    torch = oracle_torch()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        theirs = counted(torch, attention)[0]
    assert counted(gt, attention)[0] == theirs == 4 * 6 * 5 * 7 * (8 + 4) // 2 * 3


def test_table_is_torchs():
    """The text PyTorch prints (its table is laid out by the tabulate package, 0.9)."""
    def program(T):
        T.manual_seed(0)
        model = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.ReLU(), T.nn.Linear(8, 2))
        T.mm(T.randn(3, 4), T.randn(4, 5))
        model(T.randn(3, 4))
    with gt.utils.flop_counter.FlopCounterMode(display=False) as counter:
        program(gt)
    assert counter.get_table() == "\n".join([
        "Module             FLOP    % Total",
        "---------------  ------  ---------",
        "Global              408    100.00%",
        " - aten.mm          120     29.41%",
        " - aten.addmm       288     70.59%",
        " Sequential         288     70.59%",
        "  - aten.addmm      288     70.59%",
        "  Sequential.0      192     47.06%",
        "   - aten.addmm     192     47.06%",
        "  Sequential.2       96     23.53%",
        "   - aten.addmm      96     23.53%"])
    assert counter.get_table(depth=0) == "\n".join([
        "Module           FLOP    % Total",
        "-------------  ------  ---------",
        "Global            408    100.00%",
        " - aten.mm        120     29.41%",
        " - aten.addmm     288     70.59%"])
    assert counter.get_table(depth=1).splitlines()[-2:] == [
        " Sequential        288     70.59%",
        "  - aten.addmm     288     70.59%"]


def test_large_counts_use_suffixes_and_display_prints(capsys):
    with gt.utils.flop_counter.FlopCounterMode():
        gt.mm(gt.randn(30, 40), gt.randn(40, 50))
    assert capsys.readouterr().out.splitlines() == [
        "Module          FLOP    % Total",
        "----------  --------  ---------",
        "Global      120.000K    100.00%",
        " - aten.mm  120.000K    100.00%"]
    with gt.utils.flop_counter.FlopCounterMode() as counter:
        pass
    assert counter.get_total_flops() == 0
    assert capsys.readouterr().out.splitlines()[2] == "Global         0         0%"


def test_mods_argument_warns_as_in_torch():
    for T in (gt, oracle_torch()):
        with pytest.warns(UserWarning, match="mods argument is not needed"):
            flop_module(T).FlopCounterMode(T.nn.Linear(2, 2), display=False)


def test_custom_formulas():
    fc = gt.utils.flop_counter
    with gt.library._scoped_library("flopslib", "DEF") as lib:
        lib.define("scale(Tensor x) -> Tensor")
        lib.impl("scale", lambda x: x * 2, "CPU")
        packet = gt.ops.flopslib.scale

        @fc.register_flop_formula(packet)
        def scale_flop(x_shape, out_shape=None, **kwargs):
            return x_shape[0] * out_shape[1]
        try:
            with pytest.raises(RuntimeError, match="duplicate registrations"):
                fc.register_flop_formula(packet)(scale_flop)
            assert counted(gt, lambda T: packet(T.ones(3, 4)))[0] == 12
            custom = {gt.ops.aten.mm: lambda a, b, out_shape=None, **kw: 1}
            assert counted(gt, lambda T: T.mm(T.ones(2, 2), T.ones(2, 2)),
                           custom_mapping=custom)[0] == 1
        finally:
            del fc.flop_registry[packet]
    with pytest.raises(ValueError, match="OpOverloadPacket"):
        fc.register_flop_formula(gt.ops.aten.mm.default)(scale_flop)


def test_counting_fakes_on_cuda_matches_real_cpu():
    real = counted(gt, training_step_with_input_grad)
    with gt._subclasses.FakeTensorMode():
        def on_cuda(T):
            model = cnn(T).cuda()
            model(T.randn(2, 3, 8, 8, device="cuda", requires_grad=True)).sum().backward()
        fake = counted(gt, on_cuda)
    assert fake == real
