"""A short tour of glasstorch's machinery: `python -m glasstorch.demo`.

It shows what exists so far: tensors as views over storages, the version counter, type
promotion, the dispatcher's key sets and trace, the autograd graph, meta tensors and exact
memory accounting.
"""
from __future__ import annotations

import glasstorch as torch


def _section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 70 - len(title)))


def main() -> None:
    torch.manual_seed(0)

    _section("A tensor is a view over a storage")
    base = torch.arange(12.0)
    x = base.view(3, 4)
    print(x)
    print(f"shape={tuple(x.shape)} stride={x.stride()} offset={x.storage_offset()} "
          f"storage={x.untyped_storage().nbytes()} bytes")
    col = x.t()[1]
    print(f"x.t()[1] = {col}")
    print(f"  stride={col.stride()} offset={col.storage_offset()} "
          f"shares storage: {col.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()}"
          f" root base is arange's tensor: {col._base is base}")
    col[0] = 100.0
    print(f"  writing through the view changes x: x[0, 1] = {x[0, 1].item()}, "
          f"version counter = {x._version}")
    try:
        x.t().view(12)
    except RuntimeError as e:
        print(f"  x.t().view(12) -> RuntimeError: {e}")
    print(f"  x.t().reshape(12) copies: shares storage = "
          f"{x.t().reshape(12).untyped_storage().data_ptr() == x.untyped_storage().data_ptr()}")

    _section("Type promotion (PyTorch's rules)")
    i32 = torch.tensor([1, 2], dtype=torch.int32)
    for expr, value in [("int32 + 1", i32 + 1), ("int32 + 1.5", i32 + 1.5),
                        ("int32 + int64 0-dim", i32 + torch.tensor(7)),
                        ("int32 + float64 0-dim", i32 + torch.tensor(1.0, dtype=torch.float64)),
                        ("uint8 + int8", torch.ones(1, dtype=torch.uint8) +
                         torch.ones(1, dtype=torch.int8))]:
        print(f"  {expr:24s} -> {value.dtype}")

    _section("The dispatcher")
    a = torch.randn(2, 3)
    print(f"  key set of a CPU tensor:               {torch.debug.dispatch_keys(a)}")
    print(f"  key set of one that requires grad:     "
          f"{torch.debug.dispatch_keys(a.detach().requires_grad_())}")
    with torch.debug.dispatch_trace() as trace:
        b = (a * 2).add_(1).sum()
    print(trace)

    _section("Autograd: the graph a computation records")
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (w * w).exp().sum()
    node, depth = loss.grad_fn, 0
    while node is not None:
        print(f"  {'  ' * depth}{node.name()}")
        node = next((n for n, _ in node.next_functions if n is not None), None)
        depth += 1
    loss.backward()
    print(f"  d/dw sum(exp(w*w)) = {w.grad}  (2*w*exp(w*w))")

    _section("Meta tensors: shapes and dtypes without data")
    m = torch.empty(64, 128, device="meta")
    w = torch.empty(128, 10, device="meta")
    out = (m @ w).sum(-1)
    print(f"  (64x128 @ 128x10).sum(-1) on meta -> {tuple(out.shape)} {out.dtype}, "
          "no data, no memory used")

    _section("Exact memory accounting")
    before = torch.memory.memory_allocated("cpu")
    big = torch.zeros(1000, 1000)
    print(f"  zeros(1000, 1000) allocated "
          f"{torch.memory.memory_allocated('cpu') - before:,} bytes")
    del big
    print(f"  after del: {torch.memory.memory_allocated('cpu') - before:,} bytes")
    print(f"  (the traced expression's value: {b.item():.4f})")


if __name__ == "__main__":
    main()
