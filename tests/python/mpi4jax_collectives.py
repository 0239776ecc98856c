"""mpi4jax's twelve collectives on one row, as the GPU lowering programs
lower them for cuda (gpu_lowering_program.py: its legacy build through
ccshim; port_gpu_lowering_program.py: its kept port, without ccshim)."""

import jax
import numpy as np

# one rank: the leading axis of alltoall and scatter
ROW = jax.ShapeDtypeStruct((1, 12), np.float32)


def collectives(mpi4jax, MPI) -> dict:
    """{name: a function of one row} for mpi4jax and mpi4py's MPI."""
    return {
        "allgather": lambda x: mpi4jax.allgather(x),
        "allreduce": lambda x: mpi4jax.allreduce(x, op=MPI.SUM),
        "alltoall": lambda x: mpi4jax.alltoall(x),
        "barrier": lambda x: (mpi4jax.barrier(), x)[1],
        "bcast": lambda x: mpi4jax.bcast(x, root=0),
        "gather": lambda x: mpi4jax.gather(x, root=0),
        "reduce": lambda x: mpi4jax.reduce(x, op=MPI.MAX, root=0),
        "scan": lambda x: mpi4jax.scan(x, op=MPI.SUM),
        "scatter": lambda x: mpi4jax.scatter(x, root=0),
        "sendrecv": lambda x: mpi4jax.sendrecv(x, x, source=0, dest=0),
        "send": lambda x: (mpi4jax.send(x, dest=0), x)[1],
        "recv": lambda x: mpi4jax.recv(x, source=0),
    }
