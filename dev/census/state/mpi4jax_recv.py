"""mpi4jax 0.8.1.post2's mpi_recv for `ccshim conform` (census.py port).

On one rank a receive returns only with a message some process sent it, so
before the kernel runs, each side's process sends itself one: 16 doubles
(0.5, 1.5, ... 15.5), tag 7, on MPI_COMM_WORLD, posted without waiting, as
a partner rank's send would be.  The kernel's receive (source 0, tag 7)
takes it into its result, in the legacy build and in the ported one alike.
The message is posted by `sent_from()`, which conform calls through
`--arg-from` after mapping the run's buffers (never in its probe, whose
process makes no call), and which gives the receive's source operand:
rank 0, this process.
"""

import struct

import numpy as np
from mpi4jax._src.xla_bridge import mpi_xla_bridge_cpu
from mpi4py import MPI

MESSAGE = np.arange(16, dtype=np.float64) + 0.5  # alive until the process ends


def sent_from():
    # the request freed at once: the send completes when the kernel receives
    MPI.COMM_WORLD.Isend(MESSAGE, dest=0, tag=7).Free()
    return struct.pack("<i", 0)


def targets():
    return mpi_xla_bridge_cpu.custom_call_targets
