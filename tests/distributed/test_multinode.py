"""torchrun's multi-node contract: `glasstorch.distributed.run --nnodes 2 --node-rank K ...`
started once per machine makes one job. The second machine is a network namespace (its own
address, through a veth pair) with its own host name, so Open MPI sees two nodes; making one
needs root and `ip`, and the tests that need it skip without them."""
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from glasstorch.distributed import run

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


class _Machine:
    def __init__(self, netns, master_addr, own_addr):
        self.netns, self.master_addr, self.own_addr = netns, master_addr, own_addr


@pytest.fixture
def second_machine():
    """A network namespace joined to this one by a veth pair: node 1 lives there."""
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"):
        pytest.skip("a second machine needs root, ip and unshare (a network namespace)")
    pytest.importorskip("mpi4py")
    tag = os.getpid() % 100000
    netns, here, there, net = f"gtnode{tag}", f"gth{tag}", f"gtn{tag}", f"10.213.{tag % 250}"
    inside = ["ip", "netns", "exec", netns, "ip"]
    steps = [["ip", "netns", "add", netns],
             ["ip", "link", "add", here, "type", "veth", "peer", "name", there],
             ["ip", "link", "set", there, "netns", netns],
             ["ip", "addr", "add", f"{net}.1/24", "dev", here],
             ["ip", "link", "set", here, "up"],
             inside + ["addr", "add", f"{net}.2/24", "dev", there],
             inside + ["link", "set", there, "up"],
             inside + ["link", "set", "lo", "up"],
             inside + ["route", "add", "default", "via", f"{net}.1"]]
    try:
        for step in steps:
            subprocess.run(step, check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        _remove(here, netns)
        pytest.skip(f"cannot make a network namespace here: {' '.join(e.cmd)}: {e.stderr}")
    yield _Machine(netns, f"{net}.1", f"{net}.2")
    _remove(here, netns)


def _remove(link, netns):
    subprocess.run(["ip", "link", "del", link], capture_output=True)
    subprocess.run(["ip", "netns", "del", netns], capture_output=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _start(node_rank, script, port, master_addr, nproc=1, netns=None):
    command = [sys.executable, "-m", "glasstorch.distributed.run", "--nnodes", "2",
               "--node-rank", str(node_rank), "--master-addr", master_addr,
               "--master-port", str(port), "--nproc-per-node", str(nproc), str(script)]
    if netns is not None:           # node 1: its own network and host name
        command = ["ip", "netns", "exec", netns, "unshare", "--uts", "sh", "-c",
                   'hostname node1 && exec "$@"', "sh", *command]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))


def _two_nodes(machine, script, nproc=1):
    port = _free_port()
    node1 = _start(1, script, port, machine.master_addr, nproc, machine.netns)
    node0 = _start(0, script, port, machine.master_addr, nproc)
    return node0, node1


class _Output:
    """A process's stdout and stderr, read as they come."""

    def __init__(self, process):
        self.text, self._readers = "", []
        for pipe in (process.stdout, process.stderr):
            reader = threading.Thread(target=self._read, args=(pipe,), daemon=True)
            reader.start()
            self._readers.append(reader)

    def _read(self, pipe):
        for line in iter(pipe.readline, b""):
            self.text += line.decode(errors="replace")

    def wait_for(self, *words, timeout=120):
        deadline = time.monotonic() + timeout
        while not all(w in self.text for w in words):
            assert time.monotonic() < deadline, f"waited for {words}:\n{self.text}"
            time.sleep(0.2)

    def all(self):
        for reader in self._readers:
            reader.join(timeout=30)
        return self.text


def _left_over(script) -> list:
    """Processes still running the script (none may outlive the job)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if str(script).encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def _assert_nothing_left(script):
    deadline = time.monotonic() + 20
    while _left_over(script) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _left_over(script) == []


def test_two_machines_make_one_job_with_torchruns_ranks(second_machine, tmp_path):
    script = tmp_path / "job.py"
    script.write_text(
        "import os, socket, glasstorch as torch, glasstorch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.tensor([float(dist.get_rank())])\n"
        "dist.all_reduce(t)\n"
        "e = os.environ\n"
        "print(f\"rank {e['RANK']}/{e['WORLD_SIZE']} local {e['LOCAL_RANK']}/"
        "{e['LOCAL_WORLD_SIZE']} node {e['GROUP_RANK']} on {socket.gethostname()} "
        "sum {t.item()}\", flush=True)\n")
    node0, node1 = _two_nodes(second_machine, script, nproc=2)
    out0, err0 = node0.communicate(timeout=240)
    out1, err1 = node1.communicate(timeout=60)
    assert node0.returncode == 0 and node1.returncode == 0, (err0 + err1).decode()
    here = socket.gethostname()
    for rank, host in enumerate([here, here, "node1", "node1"]):
        line = f"rank {rank}/4 local {rank % 2}/2 node {rank // 2} on {host} sum 6.0"
        assert line in out0.decode(), out0.decode()


def test_a_rank_failing_on_the_second_machine_stops_both(second_machine, tmp_path):
    script = Path(shutil.copy(HERE / "rank_one_fails.py", tmp_path))   # a path of its own
    node0, node1 = _two_nodes(second_machine, script)
    out0, err0 = node0.communicate(timeout=240)      # well before rank 0's sleep ends
    node1.communicate(timeout=60)
    both = (out0 + err0).decode()
    assert node0.returncode != 0 and node1.returncode != 0
    assert "rank one gives up" in both and "rank 1 failed" in both
    _assert_nothing_left(script)


@pytest.mark.parametrize("victim", [0, 1])
def test_a_launcher_that_dies_ends_the_job_everywhere(second_machine, tmp_path, victim):
    script = tmp_path / "waits.py"
    script.write_text(
        "import time, glasstorch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "dist.barrier()\n"
        "print(f'rank {dist.get_rank()} ready', flush=True)\n"
        "time.sleep(300)\n")
    nodes = _two_nodes(second_machine, script)
    outputs = [_Output(p) for p in nodes]
    outputs[0].wait_for("rank 0 ready", "rank 1 ready")
    nodes[victim].kill()
    survivor = nodes[1 - victim]
    assert survivor.wait(timeout=60) != 0
    message = ("lost the launcher of node 1" if victim == 1 else
               "node 1 lost node 0's launcher")
    assert message in outputs[1 - victim].all()
    nodes[victim].wait()
    _assert_nothing_left(script)


def test_node_arguments_are_checked():
    with pytest.raises(SystemExit, match="elastic ranges are not supported"):
        run.main(["--nnodes", "1:4", "x.py"])
    with pytest.raises(SystemExit, match=r"--node-rank 2 is not in 0\.\.1"):
        run.main(["--nnodes", "2", "--node-rank", "2", "x.py"])


def test_a_node_with_another_nproc_is_refused(tmp_path):
    port = _free_port()
    node0 = _start(0, tmp_path / "never.py", port, "127.0.0.1", nproc=1)
    try:
        node1 = _start(1, tmp_path / "never.py", port, "127.0.0.1", nproc=2)
        _, err = node1.communicate(timeout=120)
        assert node1.returncode != 0
        assert "node 0 refused node 1: --nproc-per-node 2 differs from node 0's 1" in \
            err.decode()
    finally:
        node0.terminate()
        node0.wait()
