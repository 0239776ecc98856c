"""jaxbind 1.2.1's kernel state for `ccshim conform` (census.py port).

jaxbind's one kernel, cpu_pycall (src/_jaxbind.cc), calls back into the
Python function whose address (id(f)) its first operand carries, with the
operands after it described by the counts, type codes and shapes its
lowering passes (jaxbind/jaxbind.py, _lowering).  So a process can run the
kernel only on a function of its own.  Imported in each side's process with
that side's build first on its path, this module gives the kernel as that
build registers it (the legacy kernel, or the handler `ccshim port` wrote)
and, through `--arg-from 0=...`, the address of its own function, which
each entry of the manifest names.  The functions write their results into
jaxbind's output arrays as the project's own functions do (its demos).
"""

import struct

import _jaxbind  # the side's build: the extension jaxbind/jaxbind.py registers
import numpy as np


def one(out, args, kwargs_dump):
    """One input, one output (an untupled result)."""
    (x,) = args
    out[0][()] = np.sin(x) * x + 1.0


def two(out, args, kwargs_dump):
    """Two inputs, two outputs (a tuple result, a pointer table)."""
    x, y = args
    out[0][()] = x * y
    out[1][()] = x - 2.0 * y


def registrations():
    return _jaxbind.registrations()


def one_address():
    return struct.pack("<q", id(one))


def two_address():
    return struct.pack("<q", id(two))
