"""Every operator has the facets it needs (debug/coverage.py; `glasstorch ops`)."""
import pytest

import glasstorch as gt
from glasstorch.cli import main
from glasstorch.debug.coverage import MISSING, operator_coverage

# Gaps against PyTorch, each with what is missing; the test fails when one is filled (remove
# it here) or a new one opens.
KNOWN_GAPS = {
    ("aten::embedding_renorm_", "autograd"):
        "PyTorch records EmbeddingRenormBackward0 (whose backward raises); glasstorch refuses "
        "to record the in-place call",
    ("aten::grid_sampler_2d_backward", "autograd"): "double backward of grid_sample",
    ("aten::grid_sampler_3d_backward", "autograd"): "double backward of grid_sample",
}
# Sparse tensors' own operators run on the sparse keys only (glasstorch.sparse), and the
# conversions from dense have no meta form: the sparse layouts have no meta tensors yet.
KNOWN_GAPS.update({(f"aten::{name}", facet): "sparse layouts only" for facet in
                   ("cpu", "cuda", "meta") for name in (
                       "_indices", "_values", "indices", "values", "crow_indices",
                       "col_indices", "ccol_indices", "row_indices", "coalesce", "sparse_mask")})
KNOWN_GAPS.update({(f"aten::{name}", "meta"): "sparse results have no meta tensors yet" for
                   name in ("_sparse_coo_tensor_with_dims_and_tensors", "_to_sparse",
                            "_sparse_compressed_tensor_unsafe",
                            "_to_sparse.sparse_dim", "to_dense")})


def test_every_aten_operator_has_the_facets_it_needs():
    gaps = {(row.name, facet) for row in operator_coverage() for facet in row.missing()}
    assert gaps - set(KNOWN_GAPS) == set(), "operators missing facets"
    assert set(KNOWN_GAPS) - gaps == set(), "filled gaps: remove them from KNOWN_GAPS"


def test_facets_say_where_each_comes_from():
    rows = {r.name: r for r in operator_coverage()}
    assert (rows["aten::add.Tensor"].meta, rows["aten::add.Tensor"].autograd) == (
        "kernel", "formula")
    assert rows["aten::add_.Tensor"].autograd == "in-place (functional's)"
    assert rows["aten::add.Tensor_out"].autograd == "out= (refuses grad)"
    assert rows["aten::isnan"].autograd == "not differentiable"
    assert rows["aten::floor_divide"].autograd == "not implemented"
    assert rows["aten::nonzero"].meta == "data-dependent"
    assert rows["aten::view"].cpu == "composite-explicit"
    assert rows["aten::_softmax"].cuda == "native"          # glasstorch's own CUDA C
    assert rows["aten::mul.Tensor"].cuda == "shared"        # the CPU's array kernel on CuPy
    assert rows["aten::_softmax"].decomposition == "yes"    # torch._decomp has one
    assert rows["aten::mm"].decomposition == "-"


def test_every_primitive_has_meta_cpu_and_elementwise_ones_a_scalar_expression():
    rows = {r.name: r for r in operator_coverage("prims")}
    assert len(rows) >= 50
    assert {r.name: r.missing() for r in rows.values() if r.missing()} == {}
    assert rows["prims::exp"].expression == "yes"
    assert rows["prims::mm"].expression == "-"               # an extern primitive


def test_an_operator_without_meta_derivative_or_cuda_kernels_is_reported():
    with gt.library._scoped_library("coveragetest", "DEF") as lib:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CPU")
        (row,) = operator_coverage("coveragetest")
    assert row.name == "coveragetest::twice"
    assert row.missing() == ("meta", "autograd", "cuda")
    assert row.meta == MISSING and row.cpu == "kernel"
    with gt.library._scoped_library("coveragetest", "DEF") as lib:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CompositeImplicitAutograd")
        (row,) = operator_coverage("coveragetest")
    assert (row.meta, row.autograd, row.cpu, row.cuda) == ("decomposes",) * 4
    assert (row.decomposition, row.expression) == ("-", "-")


def test_command_prints_the_table_and_the_gaps(capsys):
    assert main(["ops", "--missing"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["operator", "meta", "autograd", "cpu", "cuda", "decomposition",
                              "expression"]
    assert {line.split()[0] for line in out[1:-1]} == {name for name, _ in KNOWN_GAPS}
    assert out[-1].endswith(f"operators, {len(KNOWN_GAPS)} missing facet(s)")


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_command_lists_every_operator(capsys, flag):
    assert main(["ops", *flag]) == 0
    assert "aten::addmm" in capsys.readouterr().out
