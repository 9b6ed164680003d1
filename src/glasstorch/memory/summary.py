"""memory_summary(): allocator statistics as PyTorch's 75-column table."""
from __future__ import annotations

_WIDTH = 75
_SIZE_ROWS = (("allocated_bytes", "Allocated memory"), ("active_bytes", "Active memory"),
              ("requested_bytes", "Requested memory"), ("reserved_bytes", "{dev} reserved memory"),
              ("inactive_split_bytes", "Non-releasable memory"))
_COUNT_ROWS = (("allocation", "Allocations"), ("active", "Active allocs"),
               ("segment", "{dev} reserved segments"), ("inactive_split", "Non-releasable allocs"))
_OVERSIZE_ROWS = (("oversize_allocations", "Oversize allocations"),
                  ("oversize_segments", "Oversize {dev} segments"))
_LABELS = {"cuda": ("GPU", "CUDA", "cudaMalloc"), "cpu": ("CPU", "CPU", "malloc")}


def _size(n, pref):
    """Bytes in the largest unit (up to PiB) that keeps `pref` at least 768 of it."""
    unit = "B  "
    for bigger in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if pref < 768 * 1024:
            break
        unit, n, pref = bigger, n // 1024, pref / 1024
    return f"{n:6d} {unit}"


def _count(n, pref):
    unit = " "
    for bigger in ("K", "M"):
        if pref < 750 * 1000:
            break
        unit, n, pref = bigger, n // 1000, pref / 1000
    return f"{n:7d} {unit} "


def _row(name, values, fmt, prefs):
    cells = " | ".join(fmt(v, p) for v, p in zip(values, prefs))
    return f" {name:<21} | {cells} "


def format_memory_summary(stats: dict, device_type: str = "cpu", device_index: int = 0,
                          abbreviated: bool = False) -> str:
    """The table torch.cuda.memory_summary prints, for `stats` in memory_stats()'s keys."""
    dev, api, malloc = _LABELS.get(device_type, (device_type.upper(),) * 2 + ("malloc",))
    title = f"glasstorch {api} memory summary, device ID {device_index}"
    ooms = f"{' ' * 12}{api} OOMs: {stats.get('num_ooms', 0):<12d}"
    retries = f"{' ' * 8}{malloc} retries: {stats.get('num_alloc_retries', 0):<8d}"
    lines = ["=" * _WIDTH, f"{' ' * 18}{title:<{_WIDTH - 18}}", "-" * _WIDTH,
             f"{ooms:<36}|{retries:<38}", "=" * _WIDTH,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    fields = ("current", "peak", "allocated", "freed")
    for rows, fmt in ((_SIZE_ROWS, _size), (_COUNT_ROWS, _count)):
        for key, name in rows:
            lines.append("-" * _WIDTH)
            subs = [("all", name.format(dev=dev))]
            if not abbreviated:
                subs += [("large_pool", "      from large pool"),
                         ("small_pool", "      from small pool")]
            prefs = None
            for pool, label in subs:
                values = [stats[f"{key}.{pool}.{f}"] for f in fields]
                prefs = prefs or values     # sub-rows use the 'all' row's units
                lines.append(_row(label, values, fmt, prefs))
    for key, name in _OVERSIZE_ROWS:
        lines.append("-" * _WIDTH)
        values = [stats.get(f"{key}.{f}", 0) for f in fields]
        lines.append(_row(name.format(dev=dev), values, _count, values))
    lines.append("=" * _WIDTH)
    return "|" + "|\n|".join(lines) + "|\n"
