"""The reader process ccshim.export._guard starts (its protocol is there):
reads programs from stdin until it closes, and answers whether each read.
A crash here is this process's own death, which _guard reports."""

from __future__ import annotations

import signal
import struct
import sys

from ._common import _jax
from ._read import Artifact


def serve() -> None:
    """The reader process: reads programs until its stdin closes."""
    # A crash is this process's own death, not a handler's report.
    for sig in (signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE):
        signal.signal(sig, signal.SIG_DFL)
    _jax()
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sink.write(b"R")  # ready
    sink.flush()
    while True:
        head = source.read(8)
        if len(head) < 8:
            return
        (n,) = struct.unpack("<Q", head)
        data = source.read(n)
        try:
            Artifact(data)
            answer = b"\0"
        except Exception:  # noqa: BLE001 - refused: the asking process says why
            answer = b"\1"
        sink.write(answer)
        sink.flush()


if __name__ == "__main__":
    serve()
