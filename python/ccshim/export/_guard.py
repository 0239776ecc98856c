"""Bytes read by a process of their own first.

MLIR's and StableHLO's native readers abort the process on some corrupt
bytecode and never finish on other (both found by fuzz_export_reader), and
no Python exception can report either.  So before a process reads a
program, a reader process tries the same bytes: one Python started for it
(never a fork of this one, whose XLA threads may hold locks a forked child
would wait on forever), kept for the next read, fed over a pipe.  When it
dies or runs past the limit it is killed, the bytes are refused with
ArtifactError, and the next read starts another.

The protocol on its stdin and stdout: the parent writes an 8-byte
little-endian length and the bytes; the reader answers one byte, 0 when
ccshim.export read them and 1 when it refused them (the parent's own read
then says why, properly).  Once started and ready to read, it writes "R".
The reader process is ccshim.export._reader.
"""
from __future__ import annotations

import hashlib
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time

from ._common import ArtifactError, _describe_bytes

# How long reading one program may take in the reader process.
READ_SECONDS = float(os.environ.get("CCSHIM_READ_TIMEOUT", "60"))
_IN_READER = "CCSHIM_READER_PROCESS"

_lock = threading.Lock()
_reader: subprocess.Popen | None = None
# Digests of the bytes the reader process has read in this process's life:
# a program read again (rewrite, register and load each read the same
# artifact) is not sent again.
_proven: set[bytes] = set()


def _start() -> subprocess.Popen:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env[_IN_READER] = "1"
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.Popen([sys.executable, "-m", "ccshim.export._reader"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)


def _stop(reader: subprocess.Popen) -> int | None:
    try:
        reader.kill()
    except OSError:
        pass
    return reader.wait()


def _answer(reader: subprocess.Popen, deadline: float) -> bytes:
    fd = reader.stdout.fileno()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b""
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            return os.read(fd, 1)


def survives_reading(data: bytes, what: str) -> None:
    """Returns when the reader process read or refused `data`; raises
    ArtifactError when reading it crashed that process or ran past
    READ_SECONDS.  Does nothing inside the reader process itself."""
    global _reader
    if os.environ.get(_IN_READER):
        return
    key = hashlib.blake2b(data, digest_size=16).digest()
    with _lock:
        if key in _proven:
            return
        if _reader is None or _reader.poll() is not None:
            _reader = _start()
            # Its start-up (importing JAX) is not the read's time.
            if _answer(_reader, time.monotonic() + 120) != b"R":
                _stop(_reader)
                _reader = None
                raise ArtifactError(f"{what}: the reader process did not start ({sys.executable} "
                                    "-m ccshim.export._guard)")
        reader = _reader
        deadline = time.monotonic() + READ_SECONDS
        try:
            reader.stdin.write(struct.pack("<Q", len(data)))
            reader.stdin.write(data)  # not joined to the length: no second copy
            reader.stdin.flush()
            got = _answer(reader, deadline)
        except (BrokenPipeError, OSError):
            got = b""
        if got == b"\0":
            _proven.add(key)
        if got in (b"\0", b"\1"):
            return
        _reader = None
        timed_out = reader.poll() is None
        status = _stop(reader)
    if timed_out:
        raise ArtifactError(
            f"{what}: reading it did not finish in {READ_SECONDS:g} s ({_describe_bytes(data)}); "
            "a corrupt artifact that MLIR's reader does not finish (CCSHIM_READ_TIMEOUT sets "
            "the limit)")
    how = (f"signal {-status}, {signal.Signals(-status).name}" if status < 0
           else f"exit status {status}")
    raise ArtifactError(
        f"{what}: MLIR's reader crashed on it ({how}) ({_describe_bytes(data)}): a corrupt "
        "artifact; this process was kept out of it")
