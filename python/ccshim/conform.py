"""One side of a ``ccshim conform`` run that needs Python, in the child
process the command forked for it.

* ``--python MODULE[:ATTR] [NAME]``: the kernel is a capsule from a Python
  extension (pybind11 and nanobind modules' ``registrations()``, Cython
  ``cdef`` kernels), reachable only with the module imported, some needing
  the interpreter while they run (Cython kernels that take the GIL);
* ``--reference xla``: the legacy side is XLA's own legacy custom-call path
  in jaxlib (``ccshim.jax.xla_legacy_call``), so that "equal" means equal
  to XLA.

The command does everything else as for any target (the inputs, the
deadline, the process group, the guard pages, the comparison, the report):
its child execs ``python -c BOOT conform ccshim.conform --control FD
--buffers FD ...`` (tools/conform/in_python.c).  The control record says
which side, its form, signature, opaque and where each buffer lies; this
module maps it and the buffers, runs the side, and writes back how it ended.
Its layout is docs/contracts.md, section 3, and this module never calls the
command back.
"""

from __future__ import annotations

import argparse
import ctypes
import math
import mmap
import os
import struct
import sys
from collections.abc import Mapping

# docs/contracts.md, section 3: the record up to its side, the side, a buffer.
REFERENCE_CAP, MESSAGE_CAP = 160, 512
CONTROL = struct.Struct(f"<8sIIIIQQQQQQ{REFERENCE_CAP}s")
SIDE = struct.Struct(f"<iiiiQQ{MESSAGE_CAP}s")
BUFFER = struct.Struct("<QQQ")
MAGIC = b"ccshimC1"
LEGACY, TYPED, PROBE = range(3)
RAN, FAILED, CRASHED, TIMED_OUT, BROKEN = range(5)
NO_BUFFER = 2**64 - 1
_REFERENCE_NAME = "xla_legacy_reference"


class Broken(Exception):
    """The side could not run (a module, a name, a reference that cannot
    make the call): an error in conform's report, never a pass."""


class Failed(Exception):
    """The kernel reported a failure: compared with the other side's."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class Control:
    """The control record, mapped from the command's memfd."""

    def __init__(self, fd: int):
        self.map = mmap.mmap(fd, 0)
        (magic, self.what, self.api, self.tuple_operands, self.platform, self.num_args,
         self.num_rets, signature_at, opaque_at, opaque_len, buffers_at,
         _) = CONTROL.unpack_from(self.map, 0)
        if magic != MAGIC:
            raise Broken(f"the control record starts {magic!r}; expected {MAGIC!r} (a ccshim "
                         "command and package of different versions?)")
        end = self.map.find(b"\0", signature_at)
        self.signature = self.map[signature_at:end].decode()
        self.opaque = self.map[opaque_at:opaque_at + opaque_len]
        self.buffers = [BUFFER.unpack_from(self.map, buffers_at + i * BUFFER.size)
                        for i in range(self.num_args + self.num_rets)]
        self.state = [RAN, 0, 0, 0]  # state, loaded, done, code

    def name_reference(self, name: str) -> None:
        data = name.encode()[:REFERENCE_CAP - 1]
        self.map[CONTROL.size - REFERENCE_CAP:CONTROL.size] = data.ljust(REFERENCE_CAP, b"\0")

    def write(self, message: str = "") -> None:
        """The side record: state, loaded, done, code, and the message as
        conform_set_message keeps it (its last 32 bytes then say how long it was)."""
        data = message.encode(errors="replace")
        shown = data[:MESSAGE_CAP - 1]
        if len(data) > MESSAGE_CAP - 1:
            tail = f"... ({len(data)} bytes)".encode()
            shown = data[:MESSAGE_CAP - 32] + tail[:31]
        SIDE.pack_into(self.map, CONTROL.size, *self.state, len(data), fnv1a(data),
                       shown + b"\0")


def fnv1a(data: bytes) -> int:
    """The hash a failure's whole message is compared by (FNV-1a, 64 bits)."""
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def map_buffers(fd: int, table: list[tuple[int, int, int]]) -> list[int | None]:
    """Maps the buffers' memfd with a PROT_NONE page after each buffer, as
    the command's own children have it; each buffer's address (None for a
    token)."""
    if fd < 0:
        return []
    size = os.fstat(fd).st_size
    base = _libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
    if base in (None, ctypes.c_void_p(-1).value):
        raise Broken(f"cannot map the buffers: {os.strerror(ctypes.get_errno())}")
    for offset, _, guard in table:
        if offset != NO_BUFFER:
            _libc.mprotect(base + guard, mmap.PAGESIZE, 0)  # PROT_NONE
    return [None if offset == NO_BUFFER else base + offset for offset, _, _ in table]


def _python_kernel(spec: str, name: str | None, init: str | None) -> int:
    """The address of --python MODULE[:ATTR] [NAME]'s kernel, --init run."""
    from . import _modules
    from ._core import resolve_kernel
    try:
        value, attr, init_fn = _modules.offered(spec, init, run_init=False)
    except _modules.ModuleError as e:
        raise Broken(f"--python: {e}") from None
    if isinstance(value, Mapping):
        if name is None:
            names = sorted(k for k in value if isinstance(k, str))
            raise Broken(f"--python {spec}: {attr} is a mapping; name the target: one of "
                         f"{', '.join(names[:12])}{' ...' if len(names) > 12 else ''}")
        kernel = _modules.entry(value, name)
        if kernel is None:
            raise Broken(f"--python {spec}: {attr} has no entry {name!r}")
        if isinstance(kernel, Mapping):
            raise Broken(f"--python {spec}: {name!r} is a typed-FFI entry (a dict of "
                         "stages), not a legacy kernel")
    elif _modules.is_kernel(value):
        kernel, name = value, name or attr
    else:
        raise Broken(f"--python {spec}: {attr} gave {type(value).__name__}; expected a "
                     "mapping of target name to capsule, or a capsule")
    if not _modules.is_kernel(kernel):
        raise Broken(f"--python {spec}: {attr}[{name!r}] is {type(kernel).__name__}; "
                     "expected a capsule")
    if init_fn is not None:
        try:
            init_fn()
        except BaseException as e:  # noqa: BLE001 - said in the report, never a pass
            raise Broken(f"--init: {init}() raised {type(e).__name__}: {e}") from None
    return resolve_kernel(kernel)


def _restore_jax() -> None:
    """--restore-jax: JAX's removed custom-call plumbing put back as
    zero-change mode puts it (ccshim.legacy.restore_plumbing), before the legacy
    build is imported; what the module registers through it goes to XLA's
    own legacy registry, as it went on the JAX the build was made for."""
    import jax

    from .legacy import restore_plumbing

    def register(name, fn, platform="cpu", api_version=0):
        jax.ffi.register_ffi_target(name, fn, platform=platform, api_version=api_version)
    try:
        restore_plumbing(register)
    except Exception as e:  # noqa: BLE001 - said in the report, never a pass
        raise Broken(f"--restore-jax: {type(e).__name__}: {e}") from None


def _args_from(spec: str, given: list[str], c: Control, at: list) -> None:
    """--arg-from I=FUNC: argument I set, in this side's process, to the
    bytes FUNC of the side's module returns here (an object's address the
    kernel finds its state by), after the command made the inputs."""
    from . import _modules
    module = _modules.load_module(spec.partition(":")[0])
    for item in given:
        index, _, name = item.partition("=")
        i = int(index)
        if i >= c.num_args or at[i] is None:
            raise Broken(f"--arg-from {item}: the kernel has {c.num_args} arguments"
                         f"{'' if i >= c.num_args else f'; argument {i} is a token'}")
        fn = getattr(module, name, None)
        if not callable(fn):
            raise Broken(f"--arg-from {item}: {module.__name__} has no function {name!r}")
        try:
            value = bytes(fn())
        except Exception as e:  # noqa: BLE001 - said in the report, never a pass
            raise Broken(f"--arg-from {item}: {name}() raised {type(e).__name__}: {e}") \
                from None
        size = c.buffers[i][1]
        if len(value) != size:
            raise Broken(f"--arg-from {item}: {name}() gave {len(value)} bytes; argument {i} "
                         f"has {size}")
        ctypes.memmove(at[i], value, size)


def _library_kernel(lib: str, symbol: str) -> int:
    try:
        library = ctypes.CDLL(lib, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as e:
        raise Broken(f"cannot load {lib}: {e}") from None
    try:
        return ctypes.cast(getattr(library, symbol), ctypes.c_void_p).value
    except AttributeError:
        raise Broken(f"no symbol '{symbol}' in {lib}") from None


def _xla_name() -> str:
    from importlib import metadata
    try:
        jaxlib = metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        raise Broken("--reference xla needs jaxlib (pip install jax)") from None
    return f"XLA's legacy custom-call path (jaxlib {jaxlib})"


def _xla_cannot(sig) -> str | None:
    """Why XLA's legacy path from JAX cannot make this call, or None."""
    if sig.has_tuple_operand:
        return ("a tuple operand: a JAX call site passes arrays, each one in[i], so XLA's "
                "legacy path never hands a kernel nested operand tables")
    if sig.nested_result:
        return "a nested tuple result, which no JAX call site makes"
    if not _threaded_token(sig):
        return ("a token other than one last operand and one last result, the token an "
                "ordered call threads (as mpi4jax's lowerings do): no JAX call site makes "
                "another")
    for leaf in (*sig.operands, *sig.results):
        if leaf.layout is not None and tuple(leaf.layout) != tuple(
                reversed(range(len(leaf.shape)))):
            return (f"the layout of {leaf}: conform's buffers are given to XLA row-major, "
                    "so give the signature without layouts")
        if leaf.dtype in ("s1", "u1", "s2", "u2", "s4", "u4", "f4e2m1fn"):
            return (f"the sub-byte element type of {leaf}: conform packs it, and how XLA's "
                    "CPU buffers hold it is not compared here")
    return None


def _threaded_token(sig) -> bool:
    """Whether the signature's tokens, if any, are the one an ordered call
    threads: the last operand and the last result, and no other."""
    ins = [leaf.dtype == "token" for leaf in sig.operands]
    outs = [leaf.dtype == "token" for leaf in sig.results]
    if not any(ins) and not any(outs):
        return True
    return ins.count(True) == 1 and outs.count(True) == 1 and ins[-1] and outs[-1]


def _probe(c: Control, kernel: int, python: bool, xla: bool) -> None:
    from ._core import Signature, answers_as_typed_handler
    if python and answers_as_typed_handler(kernel):
        raise Broken("the kernel is a typed-FFI handler, not a legacy kernel (called in a "
                     "child process with XLA's metadata query, it answered as one); conform "
                     "compares legacy kernels")
    if xla:
        why = _xla_cannot(Signature(c.signature))
        if why:
            raise Broken(f"--reference xla: {why}")


def _legacy_by_xla(c: Control, kernel: int, at: list) -> None:
    """The legacy side run by XLA's own legacy path (its message on failure)."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # XLA's log lines are not the kernel's output
    import jax
    import numpy as np

    from ._core import Signature, numpy_dtype
    from . import jax as cj
    jax.config.update("jax_enable_x64", True)
    sig = Signature(c.signature)
    # A token (the last operand and result, _xla_cannot) is JAX's own: the call
    # is an ordered one, as mpi4jax's lowerings thread theirs.
    ordered = any(leaf.dtype == "token" for leaf in sig.operands)
    operands = []
    for i, leaf in enumerate(sig.operands[:-1] if ordered else sig.operands):
        dtype = numpy_dtype(leaf.dtype)
        size = math.prod(leaf.shape) * dtype.itemsize
        data = ctypes.string_at(at[i], size) if size else b""
        operands.append(np.frombuffer(data, dtype).reshape(leaf.shape).copy())
    results = [jax.ShapeDtypeStruct(leaf.shape, numpy_dtype(leaf.dtype))
               for leaf in (sig.results[:-1] if ordered else sig.results)]
    listed = sig.tuple_result or ordered  # an ordered call's arrays come as a list
    cj.register_xla_legacy(_REFERENCE_NAME, kernel)
    call = cj.xla_legacy_call(_REFERENCE_NAME, results if listed else results[0],
                              api_version=c.api, opaque=bytes(c.opaque), ordered=ordered)
    try:
        out = jax.jit(call)(*operands)
        out = [np.asarray(o) for o in (out if listed else [out])]
    except jax.errors.JaxRuntimeError as e:
        raise Failed(13, str(e)) from None
    for i, o in enumerate(out):
        data = o.tobytes()
        if data:
            ctypes.memmove(at[c.num_args + i], data, len(data))


def _legacy_by_invoker(c: Control, kernel: int, at: list) -> None:
    """The legacy side run by ccshim's legacy invoker (ccshim_legacy_invoke)."""
    from . import _native
    from ._native import lib
    sig = ctypes.POINTER(_native.SignatureStruct)()
    if lib.ccshim_signature_parse(c.signature.encode(), ctypes.byref(sig)) != 0:
        raise Broken(_native.last_error())
    args = (ctypes.c_void_p * (c.num_args + 1))(*at[:c.num_args])
    rets = (ctypes.c_void_p * (c.num_rets + 1))(*at[c.num_args:])
    opaque = ctypes.create_string_buffer(bytes(c.opaque), len(c.opaque) + 1)
    call = _native.LegacyCall(fn=kernel, api_version=c.api, platform=c.platform, signature=sig,
                              tuple_operands=c.tuple_operands, args=args, num_args=c.num_args,
                              rets=rets, num_rets=c.num_rets,
                              opaque=ctypes.addressof(opaque), opaque_len=len(c.opaque))
    outcome = _native.LegacyOutcome()
    try:
        if lib.ccshim_legacy_invoke(ctypes.byref(call), ctypes.byref(outcome)) != 0:
            raise Broken(_native.last_error())
        if outcome.failed:
            message = ctypes.string_at(outcome.message, outcome.message_len)
            raise Failed(outcome.code, message.decode(errors="replace"))
    finally:
        lib.ccshim_legacy_outcome_reset(ctypes.byref(outcome))
        lib.ccshim_signature_free(sig)


def _typed(c: Control, kernel: int, at: list) -> None:
    """The typed side: ccshim's adapter of the kernel, in the embedded runtime."""
    import numpy as np

    from ._core import CcshimError, wrap
    from ._native import lib
    from .runtime import HandlerError, invoke_at
    try:
        adapter = wrap(kernel, api_version=c.api, platform="cpu", signature=c.signature,
                       tuple_operands="nested" if c.tuple_operands else "flat")
    except CcshimError as e:
        raise Broken(str(e)) from None
    sig = adapter.signature  # parsed once, by wrap

    def frame(leaves, addresses):
        return [(lib.ccshim_dtype_from_name(leaf.dtype.encode(), len(leaf.dtype)), address,
                 leaf.shape) for leaf, address in zip(leaves, addresses)]

    attrs = {"opaque": np.frombuffer(bytes(c.opaque), np.uint8)} if c.opaque else None
    try:
        invoke_at(adapter.handler, frame(sig.operands, at[:c.num_args]),
                  frame(sig.results, at[c.num_args:]), attrs)
    except HandlerError as e:
        raise Failed(e.number, e.message) from None
    except CcshimError as e:
        raise Broken(str(e)) from None


def _ported(c: Control, handler: int, at: list) -> None:
    """The typed side: a handler `ccshim port` wrote (--against-python), run
    in the embedded runtime on the same buffers, the opaque (if any) as its
    u8 attribute `opaque`, as the port's GPU lowering passes it."""
    import numpy as np

    from ._core import CcshimError, Signature, answers_as_typed_handler
    from ._native import lib
    from .runtime import HandlerError, invoke_at
    if not answers_as_typed_handler(handler):
        raise Broken("--against-python: the capsule is not a typed-FFI handler (it did not "
                     "answer XLA's metadata query as one): not a ported build?")
    sig = Signature(c.signature)

    def frame(leaves, addresses):
        return [(lib.ccshim_dtype_from_name(leaf.dtype.encode(), len(leaf.dtype)), address,
                 leaf.shape) for leaf, address in zip(leaves, addresses)]

    attrs = {"opaque": np.frombuffer(bytes(c.opaque), np.uint8)} if c.opaque else None
    try:
        invoke_at(handler, frame(sig.operands, at[:c.num_args]),
                  frame(sig.results, at[c.num_args:]), attrs)
    except HandlerError as e:
        raise Failed(e.number, e.message) from None
    except CcshimError as e:
        raise Broken(str(e)) from None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ccshim conform (a side in Python)")
    p.add_argument("--control", type=int, required=True)
    p.add_argument("--buffers", type=int, default=-1)
    p.add_argument("--python")
    p.add_argument("--name")
    p.add_argument("--lib")
    p.add_argument("--symbol")
    p.add_argument("--init")
    p.add_argument("--restore-jax", action="store_true")
    p.add_argument("--arg-from", action="append", default=[])  # I=FUNC of the side's module
    p.add_argument("--reference", choices=("xla", "invoker"), default="invoker")
    p.add_argument("--against")   # MODULE[:ATTR] of a ported build: the typed side
    return p


def run(c: Control, a: argparse.Namespace) -> None:
    """Runs the side the record names; raises Broken or Failed."""
    xla = a.reference == "xla"
    if xla and c.what != TYPED:
        c.name_reference(_xla_name())
    if a.restore_jax:
        _restore_jax()
    if a.against:
        kernel = _python_kernel(a.against, a.name, None)
    elif a.python:
        kernel = _python_kernel(a.python, a.name, a.init)
    else:
        kernel = _library_kernel(a.lib, a.symbol)
    c.state[1] = 1  # loaded: from here on, a crash is the kernel's
    c.write()
    if c.what == PROBE:
        _probe(c, kernel, bool(a.python), xla)
        return
    at = map_buffers(a.buffers, c.buffers)
    if a.arg_from:
        _args_from(a.against if c.what == TYPED and a.against else a.python, a.arg_from, c, at)
    if c.what == TYPED and a.against:
        _ported(c, kernel, at)
    elif c.what == TYPED:
        _typed(c, kernel, at)
    elif xla:
        _legacy_by_xla(c, kernel, at)
    else:
        _legacy_by_invoker(c, kernel, at)


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    c = Control(a.control)
    message = ""
    try:
        run(c, a)
    except Failed as e:
        c.state[0], c.state[3], message = FAILED, e.code, str(e)
    except Broken as e:
        c.state[0], message = BROKEN, str(e)
    except Exception as e:  # noqa: BLE001 - the side could not run: said, not a pass
        c.state[0], message = BROKEN, f"{type(e).__name__}: {e}"
    c.state[2] = 1  # done
    sys.stdout.flush()
    sys.stderr.flush()
    c.write(message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
