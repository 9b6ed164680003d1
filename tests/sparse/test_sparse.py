"""Sparse tensors (COO, CSR, CSC, BSR, BSC) against PyTorch: construction, conversions,
printing, dispatch, ops, autograd, saving and loading, and a GCN layer."""
import pickle

import numpy as np
import pytest

import glasstorch as g

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

INDICES = [[0, 1, 1, 2], [2, 0, 2, 1]]
VALUES = [3.0, 4.0, 5.0, -1.0]
DENSE = np.array([[0, 2, 0, 0], [1, 0, 0, 3], [0, 0, 0, 0], [4, 0, 5, 0]], dtype=np.float32)


def pair(indices=INDICES, values=VALUES, size=(3, 3), **kw):
    return (g.sparse_coo_tensor(indices, values, size, **kw),
            torch.sparse_coo_tensor(indices, values, size, **kw))


def same(ours, theirs, rtol=1e-6):
    assert ours.layout.name == str(theirs.layout).removeprefix("torch.")
    assert tuple(ours.shape) == tuple(theirs.shape)
    a = ours.to_dense() if ours.layout is not g.strided else ours
    b = theirs.to_dense() if theirs.layout is not torch.strided else theirs
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=1e-6)


def test_layouts_and_flags():
    s, t = pair()
    assert s.layout is g.sparse_coo and repr(s.layout) == "torch.sparse_coo"
    assert s.is_sparse and not s.is_sparse_csr and type(s) is g.Tensor
    csr = s.to_sparse_csr()
    assert csr.is_sparse_csr and not csr.is_sparse and csr.layout is g.sparse_csr
    assert not g.ones(2).is_sparse and g.ones(2).layout is g.strided
    assert (s.sparse_dim(), s.dense_dim(), s._nnz()) == (t.sparse_dim(), t.dense_dim(), t._nnz())
    assert str(g.debug.dispatch_keys(s)) == (
        "DispatchKeySet(SparseCPU, ADInplaceOrView, AutocastCPU)")
    assert "SparseCsrCPU" in str(g.debug.dispatch_keys(csr))


def test_printing_matches_pytorch():
    s, t = pair()
    assert repr(s) == repr(t)
    assert repr(s.coalesce()) == repr(t.coalesce())
    for method in ("to_sparse_csr", "to_sparse_csc"):
        assert repr(getattr(s, method)()) == repr(getattr(t, method)())
    d = g.tensor(DENSE)
    assert repr(d.to_sparse_bsr((2, 2))) == repr(torch.tensor(DENSE).to_sparse_bsr((2, 2)))
    s, t = pair(requires_grad=True)
    assert repr(s) == repr(t)
    assert repr(g.sparse_coo_tensor(g.zeros(2, 0, dtype=g.int64), g.zeros(0), (2, 3))) == repr(
        torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (2, 3)))


def test_coalesce_sums_duplicates():
    idx, val = [[1, 0, 1], [2, 1, 2]], [1.0, 2.0, 3.0]
    s, t = pair(idx, val, (2, 3))
    assert not s.is_coalesced()
    c, tc = s.coalesce(), t.coalesce()
    assert c.is_coalesced()
    assert c.indices().tolist() == tc.indices().tolist()
    assert c.values().tolist() == tc.values().tolist()
    same(s, t)


def test_inferred_size_and_hybrid_values():
    s = g.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]])
    t = torch.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]])
    assert tuple(s.shape) == tuple(t.shape) == (3, 2)
    assert (s.sparse_dim(), s.dense_dim()) == (1, 1)
    same(s, t)


@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
def test_round_trip_conversions(layout):
    d, td = g.tensor(DENSE), torch.tensor(DENSE)
    s, t = getattr(d, f"to_sparse_{layout}")(), getattr(td, f"to_sparse_{layout}")()
    same(s, t)
    for target in ("coo", "csr", "csc"):
        same(getattr(s, f"to_sparse_{target}")(), getattr(t, f"to_sparse_{target}")())
    if layout != "coo":
        parts = ("crow_indices", "col_indices") if layout == "csr" else (
            "ccol_indices", "row_indices")
        for part in parts:
            assert getattr(s, part)().tolist() == getattr(t, part)().tolist()
        assert s.values().tolist() == t.values().tolist()


@pytest.mark.parametrize("layout", ["bsr", "bsc"])
def test_block_layouts(layout):
    d, td = g.tensor(DENSE), torch.tensor(DENSE)
    s, t = getattr(d, f"to_sparse_{layout}")((2, 2)), getattr(td, f"to_sparse_{layout}")((2, 2))
    assert s.values().tolist() == t.values().tolist()
    same(s, t)
    made = getattr(g, f"sparse_{layout}_tensor")(
        *(g.tensor(x.tolist()) for x in (
            (t.crow_indices(), t.col_indices()) if layout == "bsr" else
            (t.ccol_indices(), t.row_indices()))), s.values(), (4, 4))
    same(made, t)


def test_to_sparse_arguments():
    d, td = g.tensor(DENSE), torch.tensor(DENSE)
    same(d.to_sparse(1), td.to_sparse(1))
    same(d.to_sparse(layout=g.sparse_csr), td.to_sparse(layout=torch.sparse_csr))
    with pytest.raises(RuntimeError, match="blocksize"):
        d.to_sparse(layout=g.sparse_bsr)


def test_accessors_and_copies():
    s, t = pair()
    assert s._indices().tolist() == t._indices().tolist()
    assert s._values().tolist() == t._values().tolist()
    # PyTorch has no sparse kernel for indices_copy/values_copy; ours copy indices()/values()
    assert g.indices_copy(s.coalesce()).tolist() == t.coalesce().indices().tolist()
    assert g.values_copy(s.coalesce()).tolist() == t.coalesce().values().tolist()
    c, tc = s.to_sparse_csr(), t.to_sparse_csr()
    assert g.crow_indices_copy(c).tolist() == torch.crow_indices_copy(tc).tolist()
    assert g.col_indices_copy(c).tolist() == torch.col_indices_copy(tc).tolist()
    cc, tcc = s.to_sparse_csc(), t.to_sparse_csc()
    assert g.ccol_indices_copy(cc).tolist() == torch.ccol_indices_copy(tcc).tolist()
    assert g.row_indices_copy(cc).tolist() == torch.row_indices_copy(tcc).tolist()
    with pytest.raises(RuntimeError, match="expected sparse row compressed tensor layout"):
        s.crow_indices()


def test_invariant_checks_have_pytorch_messages():
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 0, "
                                           "size is 3 but found index 5"):
        g.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,), check_invariants=True)
    with pytest.raises(RuntimeError, match="found negative index -1 for dim 0"):
        g.sparse_coo_tensor([[0, -1]], [1.0, 2.0], (3,), check_invariants=True)
    v = [3.0, 4.0, 5.0]
    cases = [([1, 1, 3], [2, 0, 2], r"`crow_indices\[..., 0\] == 0` is not satisfied."),
             ([0, 1, 2], [2, 0, 2], r"`crow_indices\[..., -1\] == nnz` is not satisfied."),
             ([0, 1, 3], [2, 0, 5], r"`0 <= col_indices < ncols` is not satisfied."),
             ([0, 1, 3], [2, 2, 0], "are sorted and distinct")]
    for crow, col, message in cases:
        with pytest.raises(RuntimeError, match=message):
            torch.sparse_csr_tensor(crow, col, v, (2, 3), check_invariants=True)
        with pytest.raises(RuntimeError, match=message):
            g.sparse_csr_tensor(crow, col, v, (2, 3), check_invariants=True)
    with g.sparse.check_sparse_tensor_invariants():
        assert g.sparse.check_sparse_tensor_invariants.is_enabled()
        with pytest.raises(RuntimeError, match="found negative index"):
            g.sparse_coo_tensor([[-1]], [1.0], (3,))
    assert not g.sparse.check_sparse_tensor_invariants.is_enabled()


def test_op_without_sparse_kernel_raises_not_implemented():
    s, _ = pair()
    with pytest.raises(NotImplementedError, match="Could not run 'aten::view' with arguments "
                                                  "from the 'SparseCPU' backend"):
        s.view(9)
    with pytest.raises(NotImplementedError, match="'SparseCsrCPU' backend"):
        s.to_sparse_csr().view(9)


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_times_dense(layout):
    s, t = pair()
    s, t = getattr(s, f"to_sparse_{layout}")(), getattr(t, f"to_sparse_{layout}")()
    d = np.arange(6, dtype=np.float32).reshape(3, 2)
    gd, td = g.tensor(d), torch.tensor(d)
    for f in (lambda a, b: a @ b, lambda a, b: torch_or_g(a).mm(a, b),
              lambda a, b: torch_or_g(a).sparse.mm(a, b), lambda a, b: torch_or_g(a).spmm(a, b),
              lambda a, b: torch_or_g(a).matmul(a, b)):
        same(f(s, gd), f(t, td))
    same(g.addmm(g.ones(3, 2), s, gd, beta=0.5, alpha=2),
         torch.addmm(torch.ones(3, 2), t, td, beta=0.5, alpha=2))
    same(g.sparse.addmm(g.ones(3, 2), s, gd), torch.sparse.addmm(torch.ones(3, 2), t, td))
    same(s @ g.tensor([1.0, 2.0, 3.0]), t @ torch.tensor([1.0, 2.0, 3.0]))


def torch_or_g(t):
    return torch if isinstance(t, torch.Tensor) else g


def test_sparse_times_sparse_and_legacy_products():
    s, t = pair()
    same(g.sparse.mm(s, s), torch.sparse.mm(t, t))
    d = np.arange(6, dtype=np.float32).reshape(3, 2)
    same(g.smm(s, g.tensor(d)), torch.smm(t, torch.tensor(d)))
    same(g.dsmm(s, g.tensor(d)), torch.dsmm(t, torch.tensor(d)))
    h, th = g.hspmm(s, g.tensor(d)), torch.hspmm(t, torch.tensor(d))
    assert (h.sparse_dim(), h.dense_dim()) == (th.sparse_dim(), th.dense_dim())
    same(h, th)
    same(g.sspaddmm(s, s, g.ones(3, 3), beta=2, alpha=3),
         torch.sspaddmm(t, t, torch.ones(3, 3), beta=2, alpha=3))


def test_pointwise_ops_keep_sparsity():
    s, t = pair()
    other, tother = pair([[0, 2], [2, 1]], [10.0, 20.0])
    d = np.arange(9, dtype=np.float32).reshape(3, 3)
    for f in (lambda a, b: a * 2, lambda a, b: a * b, lambda a, b: a + b, lambda a, b: -a,
              lambda a, b: a.abs(), lambda a, b: torch_or_g(a).relu(a), lambda a, b: a.sqrt(),
              lambda a, b: a.tanh(), lambda a, b: a.sin(), lambda a, b: a / 4,
              lambda a, b: a.pow(2), lambda a, b: a.clone(), lambda a, b: a.t(),
              lambda a, b: a.transpose(0, 1), lambda a, b: a.to(torch_or_g(a).float64),
              lambda a, b: a.detach(), lambda a, b: a.coalesce()):
        ours, theirs = f(s, other), f(t, tother)
        assert ours.layout is g.sparse_coo
        same(ours, theirs)
    same(s * g.tensor(d), t * torch.tensor(d))
    same(g.tensor(d) + s, torch.tensor(d) + t)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        s + g.tensor(d)


def test_sums():
    s, t = pair()
    assert s.sum().item() == t.sum().item()
    assert g.sparse.sum(s).item() == torch.sparse.sum(t).item()
    same(g.sparse.sum(s, 1), torch.sparse.sum(t, 1))
    same(g.sparse.sum(s, (0, 1)), torch.sparse.sum(t, (0, 1)))
    h, th = (g.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]]),
             torch.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]]))
    same(g.sparse.sum(h, 1), torch.sparse.sum(th, 1))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_over_specified_entries(name, dim):
    s, t = pair()
    same(getattr(g.sparse, name)(s, dim), getattr(torch.sparse, name)(t, dim))
    s, t = pair(requires_grad=True)
    w = np.arange(9, dtype=np.float32).reshape(3, 3)
    (getattr(g.sparse, name)(s, dim).to_dense() * g.tensor(w)).sum().backward()
    (getattr(torch.sparse, name)(t, dim).to_dense() * torch.tensor(w)).sum().backward()
    same(s.grad, t.grad, rtol=1e-5)


def test_sampled_addmm_and_spdiags():
    s, t = pair()
    a, b = np.arange(6, dtype=np.float32).reshape(3, 2), np.ones((2, 3), np.float32)
    same(g.sparse.sampled_addmm(s.to_sparse_csr(), g.tensor(a), g.tensor(b), beta=0.5),
         torch.sparse.sampled_addmm(t.to_sparse_csr(), torch.tensor(a), torch.tensor(b),
                                    beta=0.5))
    diags = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]
    for offsets in ([0, 1, -1], [0, 2, -2]):
        ours = g.sparse.spdiags(g.tensor(diags), g.tensor(offsets), (3, 4))
        theirs = torch.sparse.spdiags(torch.tensor(diags), torch.tensor(offsets), (3, 4))
        same(ours, theirs)
    same(g.sparse.spdiags(g.tensor(diags), g.tensor([0, 1, -1]), (3, 3), g.sparse_csr),
         torch.sparse.spdiags(torch.tensor(diags), torch.tensor([0, 1, -1]), (3, 3),
                              torch.sparse_csr))


def test_autograd_to_dense_operand_and_sparse_leaf():
    s, t = pair(requires_grad=True)
    d = np.arange(6, dtype=np.float32).reshape(3, 2)
    gd, td = g.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    (g.sparse.mm(s, gd) ** 2).sum().backward()
    (torch.sparse.mm(t, td) ** 2).sum().backward()
    assert s.grad.layout is g.sparse_coo
    same(s.grad, t.grad)
    assert s.grad.coalesce().indices().tolist() == t.grad.coalesce().indices().tolist()
    same(gd.grad, td.grad)


def test_autograd_to_dense_and_values():
    s, t = pair(requires_grad=True)
    w = np.arange(9, dtype=np.float32).reshape(3, 3)
    (s.to_dense() * g.tensor(w)).sum().backward()
    (t.to_dense() * torch.tensor(w)).sum().backward()
    same(s.grad, t.grad)
    v, tv = g.tensor(VALUES, requires_grad=True), torch.tensor(VALUES, requires_grad=True)
    built, tbuilt = g.sparse_coo_tensor(INDICES, v, (3, 3)), torch.sparse_coo_tensor(
        INDICES, tv, (3, 3))
    assert type(built.grad_fn).__name__ == type(tbuilt.grad_fn).__name__
    (built.to_dense() * g.tensor(w)).sum().backward()
    (tbuilt.to_dense() * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy())


def test_gradients_accumulate_sparse():
    s, t = pair(requires_grad=True)
    d = np.ones((3, 2), np.float32)
    for _ in range(2):
        g.sparse.mm(s, g.tensor(d)).sum().backward()
        torch.sparse.mm(t, torch.tensor(d)).sum().backward()
    same(s.grad, t.grad)


def test_gradcheck_through_values():
    s = g.sparse_coo_tensor(INDICES, VALUES, (3, 3), dtype=g.float64, requires_grad=True)
    d = g.ones(3, 2, dtype=g.float64, requires_grad=True)
    check = g.sparse.as_sparse_gradcheck(g.autograd.gradcheck)
    assert check(lambda a, b: g.sparse.mm(a, b), (s, d))


@pytest.mark.parametrize("layout", ["coo", "csr", "csc", "bsr"])
def test_save_and_load_both_ways(tmp_path, layout):
    d, td = g.tensor(DENSE), torch.tensor(DENSE)
    args = ((2, 2),) if layout == "bsr" else ()
    s, t = getattr(d, f"to_sparse_{layout}")(*args), getattr(td, f"to_sparse_{layout}")(*args)
    g.save({"x": s}, tmp_path / "ours.pt")
    same(s, torch.load(tmp_path / "ours.pt")["x"])
    torch.save({"x": t}, tmp_path / "theirs.pt")
    same(g.load(tmp_path / "theirs.pt")["x"], t)
    same(pickle.loads(pickle.dumps(s)), t)


def test_gcn_layer_matches_pytorch():
    rng = np.random.default_rng(0)
    n, f_in, f_out = 6, 4, 3
    edges = np.array([[0, 1, 1, 2, 3, 4, 4, 5], [1, 0, 2, 1, 4, 3, 5, 4]])
    a = np.zeros((n, n), np.float32)
    a[tuple(edges)] = 1
    a += np.eye(n, dtype=np.float32)
    deg = a.sum(1)
    norm = a / np.sqrt(deg[:, None] * deg[None, :])
    x = rng.standard_normal((n, f_in)).astype(np.float32)
    w0 = rng.standard_normal((f_in, f_out)).astype(np.float32)
    labels = np.array([0, 1, 2, 0, 1, 2])
    results = []
    for lib, layout in ((g, "coo"), (torch, "coo"), (g, "csr"), (torch, "csr")):
        adj = getattr(lib.tensor(norm), f"to_sparse_{layout}")()
        w = lib.tensor(w0, requires_grad=True)
        losses = []
        for _ in range(3):          # plain SGD (torch.optim's first step imports torch._dynamo)
            out = lib.sparse.mm(adj, lib.tensor(x) @ w)
            loss = lib.nn.functional.cross_entropy(out, lib.tensor(labels))
            loss.backward()
            with lib.no_grad():
                w -= 0.5 * w.grad
            w.grad = None
            losses.append(loss.item())
        results.append((losses, w.detach().numpy().copy()))
    for losses, weights in results[1:]:
        np.testing.assert_allclose(losses, results[0][0], rtol=1e-5)
        np.testing.assert_allclose(weights, results[0][1], rtol=1e-5, atol=1e-6)


def _outcome(lib, f):
    try:
        r = f(lib)
    except Exception as e:      # noqa: BLE001  (the error type is what is compared)
        return type(e).__name__
    if hasattr(r, "layout"):
        dense = r.to_dense() if r.layout is not lib.strided else r
        return str(r.layout), dense.tolist()
    return r


CASES = {
    "csr * 2": lambda L: L.tensor(DENSE).to_sparse_csr() * 2,
    "csr + csr": lambda L: L.tensor(DENSE).to_sparse_csr() + L.tensor(DENSE).to_sparse_csr(),
    "csr.t()": lambda L: L.tensor(DENSE).to_sparse_csr().t(),
    "csr @ csr": lambda L: L.tensor(DENSE).to_sparse_csr() @ L.tensor(DENSE).to_sparse_csr(),
    "dense @ coo": lambda L: L.tensor(DENSE) @ L.tensor(DENSE).to_sparse(),
    "coo * coo": lambda L: L.tensor(DENSE).to_sparse() * L.eye(4).to_sparse(),
    "sum(0)": lambda L: L.tensor(DENSE).to_sparse().sum(0),
    "zeros_like": lambda L: L.zeros_like(L.tensor(DENSE).to_sparse()),
    "sparse_mask": lambda L: L.tensor(DENSE).sparse_mask(L.eye(4).to_sparse()),
    "empty of size": lambda L: L.sparse_coo_tensor(size=(2, 3)),
    "dense._nnz": lambda L: L.tensor(DENSE)._nnz(),
    "dense.coalesce": lambda L: L.tensor(DENSE).coalesce(),
    "csr.is_coalesced": lambda L: L.tensor(DENSE).to_sparse_csr().is_coalesced(),
    "hybrid to_sparse(2)": lambda L: tuple(L.ones(2, 2, 3).to_sparse(2).values().shape),
    "resize_as_sparse_": lambda L: tuple(L.sparse_coo_tensor([[0]], [1.0], (2,)).resize_as_sparse_(
        L.sparse_coo_tensor([[0]], [1.0], (5,))).shape),
}


@pytest.mark.parametrize("case", list(CASES))
def test_edge_cases_match_pytorch(case):
    assert _outcome(g, CASES[case]) == _outcome(torch, CASES[case])


def test_csr_leaf_gets_csr_gradient():
    c, tc = (g.tensor(DENSE).to_sparse_csr().requires_grad_(),
             torch.tensor(DENSE).to_sparse_csr().requires_grad_())
    g.sparse.mm(c, g.ones(4, 2)).pow(2).sum().backward()
    torch.sparse.mm(tc, torch.ones(4, 2)).pow(2).sum().backward()
    assert c.grad.layout is g.sparse_csr
    same(c.grad, tc.grad)


def test_sparse_parameter_trains_with_sgd():
    results = []
    for lib in (g, torch):
        p = lib.nn.Parameter(lib.tensor(DENSE).to_sparse())
        assert p.layout is lib.sparse_coo and p.requires_grad
        opt = lib.optim.SGD([p], lr=0.1) if lib is g else None
        for _ in range(2):
            lib.sparse.mm(p, lib.ones(4, 2)).pow(2).sum().backward()
            if opt is not None:
                opt.step()
            else:               # SGD's update by hand (torch.optim imports torch._dynamo)
                with torch.no_grad():
                    p.add_(p.grad, alpha=-0.1)
            p.grad = None
        results.append(p.detach().to_dense().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_assert_close_compares_sparse_values():
    s = g.tensor(DENSE).to_sparse()
    g.testing.assert_close(s, s.clone())
    with pytest.raises(AssertionError, match="not close"):
        g.testing.assert_close(s, s * 2)


@pytest.mark.parametrize("layout", ["csr", "csc", "bsr", "bsc"])
def test_compressed_constructor_passes_gradient_to_values(layout):
    t = getattr(torch.tensor(DENSE), f"to_sparse_{layout}")(
        *(((2, 2),) if layout in ("bsr", "bsc") else ()))
    compressed, plain = ((t.crow_indices(), t.col_indices()) if layout in ("csr", "bsr")
                         else (t.ccol_indices(), t.row_indices()))
    w = np.arange(16, dtype=np.float32).reshape(4, 4)
    grads = []
    for lib in (g, torch):
        values = lib.tensor(t.values().tolist(), requires_grad=True)
        s = getattr(lib, f"sparse_{layout}_tensor")(
            lib.tensor(compressed.tolist()), lib.tensor(plain.tolist()), values, (4, 4))
        assert type(s.grad_fn).__name__ == "SparseCompressedTensorBackward0"
        (s.to_dense() * lib.tensor(w)).sum().backward()
        grads.append(values.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1])
    mask = getattr(g.eye(4), f"to_sparse_{layout}")(
        *(((2, 2),) if layout in ("bsr", "bsc") else ()))
    tmask = getattr(torch.eye(4), f"to_sparse_{layout}")(
        *(((2, 2),) if layout in ("bsr", "bsc") else ()))
    assert g.tensor(w).sparse_mask(mask).values().tolist() == torch.tensor(w).sparse_mask(
        tmask).values().tolist()
