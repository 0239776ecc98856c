"""One MPI rank of tests/python/test_tokens.py's two-rank test: each of
mpi4jax 0.8.1.post2's 12 CPU kernels (its Cython extension as dev/setup.sh
builds it), called with the operands its lowering passes (sizes as s32[1],
handles as u64[1], the token last on both sides), through ccshim
(legacy_call(..., ordered=True)) and through XLA's legacy path
(xla_legacy_call(..., ordered=True)), compared with each other and with
mpi4py.  Prints one JSON line: {kernel: "ok" or what differed}.

    mpiexec -n 2 python mpi4jax_tokens_worker.py MPI4JAX_BUILD_DIR
"""
import json
import sys

import jax
import numpy as np
from mpi4py import MPI
from project_modules import load_package_module

import ccshim.jax as cj

jax.config.update("jax_enable_x64", True)
root_dir = sys.argv[1]
bridge = load_package_module(root_dir, "mpi4jax._src.xla_bridge.mpi_xla_bridge")
targets = load_package_module(root_dir,
                              "mpi4jax._src.xla_bridge.mpi_xla_bridge_cpu").custom_call_targets

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
S = jax.ShapeDtypeStruct
F32 = np.dtype(np.float32)


def i32(v):
    return np.array([v], np.int32)


def h(obj):
    return np.array([MPI._handleof(obj)], np.uint64)


IGNORE = np.array([bridge.MPI_STATUS_IGNORE_ADDR], np.uint64)
for kernel, fn in targets.items():
    cj.register_legacy(f"ours_{kernel}", fn, api_version=2)
    cj.register_xla_legacy(f"xla_{kernel}", fn)


def both(kernel, results, *operands):
    ours = jax.block_until_ready(
        jax.jit(cj.legacy_call(f"ours_{kernel}", results, ordered=True))(*operands))
    xla = jax.block_until_ready(jax.jit(cj.xla_legacy_call(f"xla_{kernel}", results,
                                                           api_version=2, ordered=True))(*operands))
    return [np.asarray(o) for o in ours], [np.asarray(o) for o in xla]


x = (np.arange(6, dtype=np.float32).reshape(2, 3) + 10 * rank)
n = x.size
report = {}


def check(kernel, ours, xla, want):
    """want: the arrays mpi4py gives, or None where the kernel leaves its
    result unwritten on this rank (mpi4jax discards it there)."""
    if want is None:
        report[kernel] = "ok"
        return
    same = all(a.tobytes() == b.tobytes() for a, b in zip(ours, xla))
    right = all(a.tobytes() == np.asarray(w, a.dtype).tobytes() for a, w in zip(ours, want))
    report[kernel] = "ok" if same and right else f"ours={ours} xla={xla} mpi4py={want}"


# allgather: (n, x, dtype, n, dtype, comm)
ours, xla = both("mpi_allgather", [S((size, *x.shape), F32)], i32(n), x, h(MPI.FLOAT), i32(n),
                 h(MPI.FLOAT), h(comm))
check("mpi_allgather", ours, xla, [np.stack(comm.allgather(x))])
# allreduce: (n, x, op, comm, dtype)
ours, xla = both("mpi_allreduce", [S(x.shape, F32)], i32(n), x, h(MPI.SUM), h(comm),
                 h(MPI.FLOAT))
check("mpi_allreduce", ours, xla, [comm.allreduce(x, op=MPI.SUM)])
# alltoall: (n per rank, x[size, ...], dtype, n per rank, dtype, comm)
xa = np.arange(size * 3, dtype=np.float32).reshape(size, 3) + 100 * rank
ours, xla = both("mpi_alltoall", [S(xa.shape, F32)], i32(3), xa, h(MPI.FLOAT), i32(3),
                 h(MPI.FLOAT), h(comm))
check("mpi_alltoall", ours, xla, [np.stack(comm.alltoall(list(xa)))])
# barrier: (comm) -> token only
ours, xla = both("mpi_barrier", [], h(comm))
check("mpi_barrier", ours, xla, [])
# bcast: (n, x, root, comm, dtype); the root's result is left unwritten
ours, xla = both("mpi_bcast", [S(x.shape, F32)], i32(n), x, i32(0), h(comm), h(MPI.FLOAT))
broadcast = comm.bcast(x, root=0)  # every rank calls the collective
check("mpi_bcast", ours, xla, None if rank == 0 else [broadcast])
# gather: (n, x, dtype, n, dtype, root, comm); out (size, ...) on the root, (0,) elsewhere
shape = (size, *x.shape) if rank == 0 else (0,)
ours, xla = both("mpi_gather", [S(shape, F32)], i32(n), x, h(MPI.FLOAT), i32(n), h(MPI.FLOAT),
                 i32(0), h(comm))
gathered = comm.gather(x, root=0)
check("mpi_gather", ours, xla, [np.stack(gathered)] if rank == 0 else None)
# reduce: (n, x, op, root, comm, dtype); out only on the root
shape = x.shape if rank == 0 else (0,)
ours, xla = both("mpi_reduce", [S(shape, F32)], i32(n), x, h(MPI.SUM), i32(0), h(comm),
                 h(MPI.FLOAT))
reduced = comm.reduce(x, op=MPI.SUM, root=0)
check("mpi_reduce", ours, xla, [reduced] if rank == 0 else None)
# scan: (n, x, op, comm, dtype)
ours, xla = both("mpi_scan", [S(x.shape, F32)], i32(n), x, h(MPI.SUM), h(comm), h(MPI.FLOAT))
check("mpi_scan", ours, xla, [comm.scan(x, op=MPI.SUM)])
# scatter: (n, x, dtype, n, dtype, root, comm); x (size, ...) on the root
xs = (np.arange(size * 4, dtype=np.float32).reshape(size, 4) if rank == 0
      else np.zeros(4, np.float32))
ours, xla = both("mpi_scatter", [S((4,), F32)], i32(4), xs, h(MPI.FLOAT), i32(4), h(MPI.FLOAT),
                 i32(0), h(comm))
check("mpi_scatter", ours, xla, [comm.scatter(list(xs) if rank == 0 else None, root=0)])
# send (rank 0) and recv (rank 1): (n, x, dest, tag, comm, dtype) and
# (n, source, tag, comm, dtype, status) -> array
for path in ("ours", "xla"):
    if rank == 0:
        call = (cj.legacy_call("ours_mpi_send", [], ordered=True) if path == "ours" else
                cj.xla_legacy_call("xla_mpi_send", [], api_version=2, ordered=True))
        jax.block_until_ready(jax.jit(call)(i32(n), x, i32(1), i32(7), h(comm), h(MPI.FLOAT)))
    elif rank == 1:
        call = (cj.legacy_call("ours_mpi_recv", [S(x.shape, F32)], ordered=True)
                if path == "ours" else
                cj.xla_legacy_call("xla_mpi_recv", [S(x.shape, F32)], api_version=2,
                                   ordered=True))
        got = np.asarray(jax.jit(call)(i32(n), i32(0), i32(7), h(comm), h(MPI.FLOAT),
                                       IGNORE)[0])
        report.setdefault("recv_got", {})[path] = got.tobytes().hex()
report["mpi_send"] = "ok"
if rank == 1:
    want = (np.arange(6, dtype=np.float32).reshape(2, 3)).tobytes().hex()
    got = report.pop("recv_got")
    report["mpi_recv"] = "ok" if got["ours"] == got["xla"] == want else str(got)
else:
    report["mpi_recv"] = "ok"
# sendrecv: (n, x, dest, sendtag, dtype, n, source, recvtag, dtype, comm, status)
other = (rank + 1) % size
ours, xla = both("mpi_sendrecv", [S(x.shape, F32)], i32(n), x, i32(other), i32(5),
                 h(MPI.FLOAT), i32(n), i32(other), i32(5), h(MPI.FLOAT), h(comm), IGNORE)
check("mpi_sendrecv", ours, xla, [comm.sendrecv(x, dest=other, source=other)])
print(json.dumps({"rank": rank, "size": size, "kernels": report}), flush=True)
