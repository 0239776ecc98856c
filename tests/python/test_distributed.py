"""A ccshim-wrapped legacy kernel inside a jax.distributed program of two
processes on this machine (CPU collectives over gloo, loopback only): each
process registers the target before its first compile, and a shard_map over
the four devices of both calls it and sums the blocks across processes.
The workers are tests/python/distributed_worker.py."""

import os
import pathlib
import socket
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_run_a_wrapped_kernel(build_dir):
    kernels = build_dir / "tests" / "libccshim_pytest_kernels.so"
    port = free_port()
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)  # each worker sets its own device count
    workers = [subprocess.Popen([sys.executable, str(HERE / "distributed_worker.py"),
                                 str(i), str(port), str(kernels)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                text=True)
               for i in range(2)]
    outputs = []
    try:
        for w in workers:
            out, _ = w.communicate(timeout=180)
            outputs.append(out)
    except subprocess.TimeoutExpired:
        for w in workers:
            w.kill()
        pytest.fail("the two-process program did not finish in 180 s")
    for i, (w, out) in enumerate(zip(workers, outputs)):
        assert w.returncode == 0, f"process {i} exited {w.returncode}:\n{out[-3000:]}"
        assert f"process {i}: ok, 2 processes, 4 devices" in out, out[-3000:]
