"""The `glasstorch` command (also `python -m glasstorch`).

    glasstorch info          versions, BLAS, threads and which backends can run here
    glasstorch info --json   the same as JSON, for scripts and bug reports
    glasstorch ops           every operator's facets: meta, autograd, CPU and CUDA kernels
    glasstorch ops --missing only the facets operators lack
    glasstorch doctor train.py [args...]   run a training script and say what is wrong
    glasstorch profile script.py [args]    run a script under the profiler, print its table
    glasstorch memory script.py [args]     run a script, print its peak memory and summary
    glasstorch demo          a tour of the machinery (storages, dispatch, autograd, memory)
    glasstorch bench [args]  glasstorch against PyTorch, side by side (from a checkout)
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import sys


def _blas() -> str:
    """NumPy's BLAS as its build configuration names it."""
    import numpy as np
    try:
        config = np.show_config(mode="dicts")
    except TypeError:                       # NumPy < 1.26 only prints its configuration
        return "unknown (NumPy too old to report it)"
    blas = (config or {}).get("Build Dependencies", {}).get("blas", {})
    if not blas.get("found", False):
        return "none found"
    return f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()


def _blas_threads() -> str:
    from .backends.cpu.blas_threads import get_blas_threads
    from .backends.cpu.split_gemm import available
    count = get_blas_threads()
    if count is not None:
        split = "; large products split on glasstorch's threads" if available() else ""
        return f"{count} (set with glasstorch.set_num_threads){split}"
    if importlib.util.find_spec("threadpoolctl") is not None:
        from threadpoolctl import threadpool_info
        counts = sorted({p["num_threads"] for p in threadpool_info()
                         if p.get("user_api") == "blas"})
        if counts:
            return ", ".join(map(str, counts))
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var):
            return f"{os.environ[var]} (from {var})"
    return "library default (install threadpoolctl to see the exact count)"


def _cpuinfo(field: str) -> str | None:
    """The first /proc/cpuinfo line's value for `field`, or None (not Linux, say)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(field):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    return _cpuinfo("model name") or platform.processor() or platform.machine() or "unknown"


def _products() -> str:
    """What multiplies float32/float64 matrices here, without building it: glasstorch's own
    kernel needs the C kernels and an AVX-512 CPU (it is built for `-march=native`)."""
    from .backends.cpu import linalg, native
    from .compiler.inductor import build
    flags = (_cpuinfo("flags") or "").split()
    if native.ENABLED and build.compiler() is not None and "avx512f" in flags:
        return (f"float32/float64 from {linalg.OWN_KERNEL_MNK:,} multiply-adds on "
                "glasstorch's own AVX-512 kernel (native/gemm.c); the rest on NumPy's BLAS")
    return "NumPy's BLAS (glasstorch's own kernel needs the C kernels and an AVX-512 CPU)"


def _cuda() -> tuple:
    """(available, detail): whether CUDA tensors can work here, and why not if not."""
    if importlib.util.find_spec("cupy") is None:
        return False, "cupy not installed"
    try:
        cupy = importlib.import_module("cupy")
    except Exception as e:                  # a broken install: say what broke
        return False, f"cupy fails to import ({type(e).__name__}: {e})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:                  # CUDARuntimeError without a driver or a GPU
        return False, f"no CUDA device ({type(e).__name__}: {e})"
    if count == 0:
        return False, "no CUDA device"
    names = []
    for i in range(count):
        name = cupy.cuda.runtime.getDeviceProperties(i)["name"]
        names.append(name.decode() if isinstance(name, bytes) else str(name))
    return True, f"{count} device(s): {', '.join(names)} (cupy {cupy.__version__})"


def collect_info() -> dict:
    """Everything `glasstorch info` reports, as a dict."""
    import ml_dtypes
    import numpy as np

    import glasstorch
    from glasstorch.backends.cpu import native
    cuda_ok, cuda_detail = _cuda()
    return {
        "glasstorch": glasstorch.version.glasstorch,
        "pytorch_api": str(glasstorch.__version__),
        "python": f"{platform.python_version()} ({platform.python_implementation()}, "
                  f"{sys.executable})",
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": glasstorch.get_num_threads(),
        "numpy": np.__version__,
        "blas": _blas(),
        "blas_threads": _blas_threads(),
        "products": _products(),
        "ml_dtypes": getattr(ml_dtypes, "__version__", "unknown"),
        "backends": {
            "cpu": {"available": True, "detail": f"NumPy kernels; {native.describe()}"},
            "cuda": {"available": cuda_ok, "detail": cuda_detail},
            "meta": {"available": True, "detail": "shapes, dtypes and strides only, no data"},
        },
    }


def format_info(info: dict) -> str:
    rows = [("glasstorch", info["glasstorch"]),
            ("PyTorch API", f"{info['pytorch_api']} (torch.__version__)"),
            ("Python", info["python"]),
            ("platform", info["platform"]), ("CPU", info["cpu"]),
            ("CPU count", str(info["cpu_count"])),
            ("threads", f"{info['threads']} (kernels split large work across them; "
                        "glasstorch.set_num_threads)"),
            ("NumPy", info["numpy"]),
            ("BLAS", info["blas"]), ("BLAS threads", info["blas_threads"]),
            ("products", info["products"]),
            ("ml_dtypes", info["ml_dtypes"])]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines.append("backends:")
    for name, b in info["backends"].items():
        lines.append(f"  {name.ljust(5)} {'yes' if b['available'] else 'no '}  {b['detail']}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    import glasstorch
    parser = argparse.ArgumentParser(
        prog="glasstorch", description="glasstorch: PyTorch's API over machinery you can "
                                       "read and watch.")
    parser.add_argument("--version", action="version",
                        version=f"glasstorch {glasstorch.version.glasstorch}")
    commands = parser.add_subparsers(dest="command", metavar="command")
    info = commands.add_parser("info", help="versions, BLAS, threads and available backends")
    info.add_argument("--json", action="store_true", help="print the report as JSON")
    ops = commands.add_parser("ops", help="every operator's facets: meta kernel, autograd, "
                                          "CPU and CUDA kernels")
    ops.add_argument("--missing", action="store_true",
                     help="list only operators that lack a facet they need")
    ops.add_argument("--namespace", default="aten", help="operator namespace (default: aten)")
    ops.add_argument("--json", action="store_true", help="print the table as JSON")
    doctor = commands.add_parser("doctor", help="run a PyTorch training script on glasstorch "
                                                "and report what is wrong with it")
    doctor.add_argument("script", help="the training script (it says `import torch`)")
    doctor.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    prof = commands.add_parser("profile", help="run a script under glasstorch.profiler and "
                                               "print the time each operator took")
    prof.add_argument("--trace", metavar="OUT.json", help="also write a Chrome trace (Perfetto)")
    prof.add_argument("--sort-by", default="cpu_time_total",
                      help="table column to sort by (default: cpu_time_total)")
    prof.add_argument("--row-limit", type=int, default=20, help="rows to show (-1: all)")
    prof.add_argument("--record-shapes", action="store_true", help="one row per input shape")
    prof.add_argument("--profile-memory", action="store_true", help="memory columns too")
    prof.add_argument("script", help="the Python script to run")
    prof.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    mem = commands.add_parser("memory", help="run a script and print its peak memory and "
                                             "memory_summary()")
    mem.add_argument("script", help="the Python script to run")
    mem.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    commands.add_parser("demo", help="a tour of the machinery: storages and views, the "
                                     "dispatcher, the autograd graph, memory accounting")
    commands.add_parser("bench", help="time glasstorch against PyTorch side by side (bench/ "
                                      "of a glasstorch checkout; its options follow)")
    return parser


def _bench(args) -> int:
    """Run bench/ (a directory of the repository, not of the installed package) when the
    current directory is a checkout that has it."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if importlib.util.find_spec("bench") is None:
        print("glasstorch bench runs the side-by-side benchmarks in bench/ of a glasstorch "
              "checkout (PyTorch must be installed): run it from the repository's root.",
              file=sys.stderr)
        return 2
    return importlib.import_module("bench.cli").main(args)


def main(argv=None) -> int:
    """Run the command line; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:             # bench's own options pass through untouched
        return _bench(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "info":
        info = collect_info()
        print(json.dumps(info, indent=2) if args.json else format_info(info))
        return 0
    if args.command == "ops":
        from glasstorch.debug import coverage
        rows = coverage.operator_coverage(args.namespace)
        text = (coverage.coverage_json(rows) if args.json
                else coverage.format_coverage(rows, missing_only=args.missing))
        try:
            print(text)
        except BrokenPipeError:         # `glasstorch ops | head`: the reader has had enough
            sys.stdout = open(os.devnull, "w")
        return 0
    if args.command == "doctor":
        from glasstorch.debug import doctor
        return doctor.main(args.script, args.args)
    if args.command == "profile":
        from glasstorch.profiler.script import profile_script
        return profile_script(args.script, args.args, trace=args.trace, sort_by=args.sort_by,
                              row_limit=args.row_limit, record_shapes=args.record_shapes,
                              profile_memory=args.profile_memory)
    if args.command == "memory":
        from glasstorch.profiler.script import memory_script
        return memory_script(args.script, args.args)
    if args.command == "demo":
        from glasstorch import demo
        demo.main()
        return 0
    parser.print_help()
    return 2
