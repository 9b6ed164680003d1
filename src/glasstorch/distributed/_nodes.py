"""torchrun's multi-node contract on Open MPI: `--nnodes M --node-rank K --master-addr A
--master-port P --nproc-per-node N`, run once on each machine, makes one job of M*N ranks.

Open MPI starts a job on several machines from one place: mpirun (PRRTE) on node 0 starts a
daemon on every other node through a remote-launch agent (ssh by default) and the daemons
start the ranks. Separately started Open MPI jobs cannot join into one, so the launchers meet
instead: node 0's launcher listens on A:P, the others connect and wait; node 0 then runs
mpirun with a host list of the nodes and, as the agent, this module's `agent` command, which
hands the daemon's command line to the waiting launcher of the node it names. That launcher
runs it locally, streams its output back and reports its exit status; the daemon then joins
node 0's mpirun over the network as if ssh had started it. No ssh, no shared host file.

Messages are lines of JSON. A node's launcher that dies takes its local processes with it
(they get SIGTERM from the kernel), which ends the job on every node with an error naming it;
node 0's launcher dying does the same for every node."""
from __future__ import annotations

import base64
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

RENDEZVOUS_SECONDS = 300       # how long node 0 waits for the others, and they retry for it
RELAY_SOCKET = "GLASSTORCH_RELAY_SOCKET"


def _send(stream, message: dict) -> None:
    stream.write(json.dumps(message).encode() + b"\n")
    stream.flush()


def _receive(stream) -> dict | None:
    """The next message, or None when the other side has gone (or is no launcher)."""
    try:
        message = json.loads(stream.readline() or "null")
    except (OSError, ValueError):
        return None
    return message if isinstance(message, dict) else None


def die_with_parent() -> None:
    """Have the kernel send this process SIGTERM when its parent dies (in a child about to
    exec: when this launcher dies; in a rank: when Open MPI's daemon does)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)    # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class _Node:
    """One connected node, as node 0 sees it."""

    def __init__(self, rank, host, conn):
        self.rank, self.host, self.conn = rank, host, conn
        self.stream = conn.makefile("rwb")
        self.used = False
        self.lost = False        # its launcher went away before its command ended


def _gather_nodes(args, nnodes: int, nproc: int) -> list:
    """Node 0: wait for the other nodes' launchers on master_addr:master_port."""
    try:
        server = socket.create_server(("", args.master_port))
    except OSError as e:
        raise SystemExit(f"glasstorch.distributed.run: node 0 cannot listen on port "
                         f"{args.master_port} ({e}); pick a free --master-port") from None
    server.settimeout(1.0)
    nodes, deadline = {}, time.monotonic() + RENDEZVOUS_SECONDS
    with server:
        while len(nodes) < nnodes - 1:
            if time.monotonic() > deadline:
                missing = sorted(set(range(1, nnodes)) - set(nodes))
                raise SystemExit(f"glasstorch.distributed.run: node(s) {missing} did not join at "
                                 f"{args.master_addr}:{args.master_port} within "
                                 f"{RENDEZVOUS_SECONDS} s")
            try:
                conn, (peer, _) = server.accept()
            except socket.timeout:
                continue
            conn.settimeout(10)                 # a launcher says hello at once
            node = _Node(None, peer, conn)
            hello = _receive(node.stream) or {}
            conn.settimeout(None)
            rank = hello.get("node_rank")
            problem = (f"--nnodes {hello.get('nnodes')} differs from node 0's {nnodes}"
                       if hello.get("nnodes") != nnodes else
                       f"--nproc-per-node {hello.get('nproc')} differs from node 0's {nproc}"
                       if hello.get("nproc") != nproc else
                       f"--node-rank {rank} is not in 1..{nnodes - 1} or is taken"
                       if rank not in range(1, nnodes) or rank in nodes else None)
            if problem:
                try:
                    _send(node.stream, {"refused": problem})
                except OSError:
                    pass
                conn.close()
                continue
            node.rank, node.host = rank, hello.get("host") or peer
            nodes[rank] = node
    return [nodes[k] for k in sorted(nodes)]


def _serve_agents(path: str, nodes: list) -> socket.socket:
    """Node 0: accept the agent's requests on a Unix socket (this user's only) and relay each
    to its node's launcher, the output and exit status back."""
    by_host = {node.host: node for node in nodes}
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen()

    def relay(conn):
        with conn, conn.makefile("rwb") as agent:
            request = _receive(agent) or {}
            node = by_host.get(request.get("host"))
            if node is None or node.used:
                _send(agent, {"err": _b64(f"no node {request.get('host')!r} waits for a "
                                          "command\n"), "exit": 255})
                return
            node.used = True
            try:
                _send(node.stream, {"run": request["command"]})
                while (message := _receive(node.stream)) is not None:
                    _send(agent, message)
                    if "exit" in message:
                        return
            except OSError:
                pass
            node.lost = True
            _send(agent, {"exit": 255})

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=relay, args=(conn,), daemon=True).start()
    threading.Thread(target=accept, daemon=True).start()
    return listener


def _b64(text) -> str:
    return base64.b64encode(text if isinstance(text, bytes) else text.encode()).decode()


def launch_node0(args, nnodes: int, nproc: int, mpirun_command, env: dict) -> int:
    """Node 0: gather the nodes, run one mpirun over all of them, tell them the result."""
    nodes = _gather_nodes(args, nnodes, nproc)
    hosts = [args.master_addr] + [node.host for node in nodes]
    with tempfile.TemporaryDirectory(prefix="glasstorch-run-") as scratch:
        path = os.path.join(scratch, "relay")
        listener = _serve_agents(path, nodes)
        extra = ["--host", ",".join(f"{h}:{nproc}" for h in hosts),
                 "--map-by", f"ppr:{nproc}:node:oversubscribe",
                 "--prtemca", "plm_ssh_agent", f"{sys.executable} -m {__name__}",
                 "--prtemca", "plm_ssh_no_tree_spawn", "1"]
        result = subprocess.run(mpirun_command(nproc * len(hosts), extra),
                                env=dict(env, **{RELAY_SOCKET: path}),
                                preexec_fn=die_with_parent)
        listener.close()
    lost = [node for node in nodes if node.lost]
    if lost:
        print(f"glasstorch.distributed.run: lost the launcher of node "
              f"{', '.join(f'{n.rank} ({n.host})' for n in lost)}; the job was stopped",
              file=sys.stderr, flush=True)
    for node in nodes:
        try:
            _send(node.stream, {"done": result.returncode})
        except OSError:
            pass
    return result.returncode or (1 if lost else 0)


def launch_other(args, nnodes: int, nproc: int) -> int:
    """Node K > 0: join node 0's launcher, run the command it relays, report, and exit with
    the job's status."""
    deadline = time.monotonic() + RENDEZVOUS_SECONDS
    while True:
        try:
            conn = socket.create_connection((args.master_addr, args.master_port), timeout=5,
                                            source_address=(args.local_addr, 0)
                                            if args.local_addr else None)
            break
        except OSError as e:
            if time.monotonic() > deadline:
                raise SystemExit(f"glasstorch.distributed.run: node {args.node_rank} could not "
                                 f"reach node 0 at {args.master_addr}:{args.master_port} "
                                 f"({e})") from None
            time.sleep(0.5)
    conn.settimeout(None)
    stream = conn.makefile("rwb")
    _send(stream, {"node_rank": args.node_rank, "nnodes": nnodes, "nproc": nproc,
                   "host": args.local_addr})
    child = None
    while (message := _receive(stream)) is not None:
        if "refused" in message:
            raise SystemExit(f"glasstorch.distributed.run: node 0 refused node "
                             f"{args.node_rank}: {message['refused']}")
        if "run" in message:
            child = _run_relayed(message["run"], stream)
        if "done" in message:
            return message["done"]
    if child is not None and child.poll() is None:
        os.killpg(child.pid, signal.SIGTERM)
    print(f"glasstorch.distributed.run: node {args.node_rank} lost node 0's launcher at "
          f"{args.master_addr}:{args.master_port}; its processes here were stopped",
          file=sys.stderr, flush=True)
    return 1


def _run_relayed(command: str, stream) -> subprocess.Popen:
    """Start node 0's command here (its own process group), streaming its output back."""
    child = subprocess.Popen(["/bin/sh", "-c", command], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True,
                             preexec_fn=die_with_parent)
    lock = threading.Lock()

    def pump(pipe, key):
        for chunk in iter(lambda: pipe.read1(65536), b""):
            with lock:
                _send(stream, {key: _b64(chunk)})

    pumps = [threading.Thread(target=pump, args=(child.stdout, "out"), daemon=True),
             threading.Thread(target=pump, args=(child.stderr, "err"), daemon=True)]
    for p in pumps:
        p.start()

    def report():
        for p in pumps:
            p.join()
        code = child.wait()
        with lock:
            try:
                _send(stream, {"exit": code})
            except OSError:
                pass
    threading.Thread(target=report, daemon=True).start()
    return child


def agent(argv) -> int:
    """Open MPI's remote-launch agent (`agent HOST COMMAND...`, as ssh is called): ask node
    0's launcher to run COMMAND on HOST, and behave as ssh would (output, exit status)."""
    host, command = argv[0], " ".join(argv[1:])
    path = os.environ.get(RELAY_SOCKET)
    if path is None:
        print(f"{__name__}: only glasstorch.distributed.run starts this", file=sys.stderr)
        return 255
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        stream = conn.makefile("rwb")
        _send(stream, {"host": host, "command": command})
        while (message := _receive(stream)) is not None:
            for key, out in (("out", sys.stdout.buffer), ("err", sys.stderr.buffer)):
                if key in message:
                    out.write(base64.b64decode(message[key]))
                    out.flush()
            if "exit" in message:
                return message["exit"]
    return 255


if __name__ == "__main__":
    sys.exit(agent(sys.argv[1:]))
