"""``ccshim conform`` where it needs Python: kernels as projects ship them,
and XLA itself as the reference.

* ``--python MODULE[:ATTR] [NAME]``: the kernel is a capsule from a Python
  extension (pybind11 and nanobind modules' ``registrations()``, Cython
  ``cdef`` kernels), reachable only with the module imported, and some
  needing the interpreter while they run (Cython kernels that take the
  GIL).  conform's engine (libccshim_conform, the C code of ``ccshim
  conform``) is loaded into this process and given the capsule's address;
  its child processes, forked from here, have the interpreter and the
  module.
* ``--reference xla``: the legacy side is not ccshim's invoker but XLA's own
  legacy custom-call path in jaxlib (``ccshim.jax.xla_legacy_call``), run in
  that side's child process, so that "equal" means equal to XLA; the report
  names the reference.  The typed side is ccshim's adapter in the embedded
  runtime, as always, on the same inputs.

Everything else is conform's own (inputs, child processes, deadlines, guard
pages, the report), so the two references compare like for like.
"""

from __future__ import annotations

import ctypes
import math
import pathlib
import sys
from collections.abc import Mapping, Sequence
from typing import Any

_REFERENCE_NAME = "xla_legacy_reference"
# Where conform's options table (tools/conform/options.c) says an option
# is handled.
_PYTHON = 1


class UsageError(ValueError):
    pass


def _engine() -> ctypes.CDLL:
    from . import library_path
    path = pathlib.Path(library_path()).with_name("libccshim_conform.so")
    if not path.exists():
        raise UsageError(f"conform's engine is not installed at {path} (a build of ccshim "
                         "with its tools makes it)")
    engine = ctypes.CDLL(str(path))
    engine.ccshim_conform_embedded.argtypes = [ctypes.c_void_p, _REFERENCE_FN, ctypes.c_char_p,
                                               _INIT_FN, _RESOLVE_FN, ctypes.c_int,
                                               ctypes.POINTER(ctypes.c_char_p)]
    engine.ccshim_conform_embedded.restype = ctypes.c_int
    engine.ccshim_conform_option.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                                             ctypes.POINTER(ctypes.c_char_p),
                                             ctypes.POINTER(ctypes.c_int)]
    engine.ccshim_conform_option.restype = ctypes.c_int
    return engine


def options(engine: ctypes.CDLL) -> dict[str, tuple[bool, int]]:
    """conform's options, read from its one table in the engine: name ->
    (takes a value, where it is handled: 0 the command, 1 here, 2 a
    target's words)."""
    out = {}
    name, value, where = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int()
    i = 0
    while engine.ccshim_conform_option(i, ctypes.byref(name), ctypes.byref(value),
                                       ctypes.byref(where)):
        out[name.value.decode()] = (value.value is not None, where.value)
        i += 1
    return out


_REFERENCE_FN = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
    ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
    ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)


# conform's --init, called in each of its child processes before the
# kernel; and the resolver of a manifest's lines that name Python options.
_INIT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)
_RESOLVE_FN = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p,
    ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int), ctypes.c_void_p,
    ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)


def _say(message_ptr: int, cap: int, text: str) -> None:
    data = text.encode(errors="replace")[:max(cap - 1, 0)]
    ctypes.memmove(message_ptr, data + b"\0", len(data) + 1)


def _xla_reference(kernel, api, signature, opaque, opaque_len, args, num_args, rets, num_rets,
                   message, cap) -> int:
    """conform's legacy side, run by XLA: in a child process of conform's,
    forked before JAX was imported here.  0 ran, 1 the kernel failed (XLA's
    message), 2 XLA cannot run this call (why)."""
    try:
        import os
        # XLA's own log lines (its notice that legacy calls are deprecated)
        # are not what the kernel printed.
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import jax
        import numpy as np

        from . import Signature, numpy_dtype
        from . import jax as cj
        jax.config.update("jax_enable_x64", True)
        sig = Signature(signature.decode())
        why = _xla_cannot(sig)
        if why:
            _say(message, cap, f"--reference xla: {why}")
            return 2
        operands = []
        for i, leaf in enumerate(sig.operands):
            dtype = numpy_dtype(leaf.dtype)
            size = math.prod(leaf.shape) * dtype.itemsize
            data = ctypes.string_at(args[i], size) if size else b""
            operands.append(np.frombuffer(data, dtype).reshape(leaf.shape).copy())
        results = [jax.ShapeDtypeStruct(leaf.shape, numpy_dtype(leaf.dtype))
                   for leaf in sig.results]
        blob = ctypes.string_at(opaque, opaque_len) if opaque_len else b""
        cj.register_xla_legacy(_REFERENCE_NAME, int(kernel))
        call = cj.xla_legacy_call(_REFERENCE_NAME, results if sig.tuple_result else results[0],
                                  api_version=int(api), opaque=blob)
        try:
            out = jax.jit(call)(*operands)
            out = [np.asarray(o) for o in (out if sig.tuple_result else [out])]
        except jax.errors.JaxRuntimeError as e:
            _say(message, cap, str(e))
            return 1
        for i, o in enumerate(out):
            data = o.tobytes()
            if data:
                ctypes.memmove(rets[i], data, len(data))
        return 0
    except Exception as e:  # noqa: BLE001 - the reference could not run: said, not raised
        _say(message, cap, f"--reference xla: {type(e).__name__}: {e}")
        return 2


def _xla_cannot(sig) -> str | None:
    """Why XLA's legacy path from JAX cannot make this call, or None."""
    if sig.has_tuple_operand:
        return ("a tuple operand: a JAX call site passes arrays, each one in[i], so XLA's "
                "legacy path never hands a kernel nested operand tables")
    if sig.nested_result:
        return "a nested tuple result, which no JAX call site makes"
    for leaf in (*sig.operands, *sig.results):
        if leaf.dtype == "token":
            return "a token buffer"
        if leaf.layout is not None and tuple(leaf.layout) != tuple(
                reversed(range(len(leaf.shape)))):
            return (f"the layout of {leaf}: conform's buffers are given to XLA row-major, "
                    "so give the signature without layouts")
        if leaf.dtype in ("s1", "u1", "s2", "u2", "s4", "u4", "f4e2m1fn"):
            return (f"the sub-byte element type of {leaf}: conform packs it, and how XLA's "
                    "CPU buffers hold it is not compared here")
    return None


def _split(argv: Sequence[str], table: dict) -> tuple[dict, list[str]]:
    """ccshim.conform's own options, and the words for conform's engine."""
    own: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        valued, where = table.get(a, (False, None))
        if where == _PYTHON:
            if i + 1 >= len(argv):
                raise UsageError(f"{a} needs a value")
            own[a[2:]] = argv[i + 1]
            i += 2
            continue
        rest.append(a)
        if valued and i + 1 < len(argv):
            rest.append(argv[i + 1])
            i += 1
        i += 1
    return own, rest


def _positionals(words: Sequence[str], table: dict) -> list[int]:
    at, i = [], 0
    while i < len(words):
        if words[i].startswith("--"):
            i += 2 if table.get(words[i], (False, None))[0] else 1
            continue
        at.append(i)
        i += 1
    return at


def _python_kernel(spec: str, init: str | None, words: list[str],
                   table: dict) -> tuple[int, Any, list[str]]:
    """The kernel's address from --python MODULE[:ATTR] [NAME], its module's
    --init function (not called here), and the words for the engine,
    MODULE[:ATTR] NAME standing where LIB SYMBOL do."""
    from . import _modules, resolve_kernel
    at = _positionals(words, table)
    if len(at) > 1:
        raise UsageError(f"--python {spec}: one NAME expected after it, got "
                         f"{', '.join(words[i] for i in at)}")
    name = words[at[0]] if at else None
    try:
        value, attr, init_fn = _modules.offered(spec, init, run_init=False)
    except _modules.ModuleError as e:
        raise UsageError(f"--python: {e}") from None
    if isinstance(value, Mapping):
        if name is None:
            names = [k for k in value if isinstance(k, str)]
            raise UsageError(f"--python {spec}: {attr} is a mapping; name the target: one of "
                             f"{', '.join(sorted(names)[:12])}{' ...' if len(names) > 12 else ''}")
        kernel = _modules.entry(value, name)
        if kernel is None:
            raise UsageError(f"--python {spec}: {attr} has no entry {name!r}")
        if isinstance(kernel, Mapping):
            raise UsageError(f"--python {spec}: {name!r} is a typed-FFI entry (a dict of "
                             "stages), not a legacy kernel")
    elif _modules.is_kernel(value):
        kernel, name = value, name or attr
    else:
        raise UsageError(f"--python {spec}: {attr} gave {type(value).__name__}; expected a "
                         "mapping of target name to capsule, or a capsule")
    if not _modules.is_kernel(kernel):
        raise UsageError(f"--python {spec}: {attr}[{name!r}] is {type(kernel).__name__}; "
                         "expected a capsule")
    address = resolve_kernel(kernel)
    from . import answers_as_typed_handler
    if answers_as_typed_handler(address):
        raise UsageError(f"--python {spec}: {name} is a typed-FFI handler, not a legacy "
                         "kernel (called in a child process with XLA's metadata query, it "
                         "answered as one); conform compares legacy kernels")
    words = [w for i, w in enumerate(words) if i not in at]
    return address, init_fn, [spec, name, *words]


class _Session:
    """One run of the engine: the --init of the target being checked (a
    manifest's lines each set theirs), and the resolver of manifest lines."""

    def __init__(self, table: dict):
        self.table = table
        self.init_fn = None
        self.init_name = ""
        self.xla_name: str | None = None  # XLA's path, when jaxlib is here
        self.init_cb = _INIT_FN(self._init)
        self.resolve_cb = _RESOLVE_FN(self._resolve)

    def _init(self, message, cap) -> int:
        """In conform's child: the target's --init, before its kernel."""
        if self.init_fn is None:
            return 0
        try:
            self.init_fn()
            return 0
        except BaseException as e:  # noqa: BLE001 - said in the report, never a pass
            _say(message, cap, f"{self.init_name}() raised {type(e).__name__}: {e}")
            return 1

    def set_init(self, init_fn, init: str | None) -> None:
        self.init_fn, self.init_name = init_fn, init or ""

    def _resolve(self, argc, argv, base_dir, kernel, reference, words, cap, message,
                 message_cap) -> int:
        try:
            line = [argv[i].decode() for i in range(argc)]
            own, rest = _split(line, self.table)
            xla = _reference_of(own)
            if xla and self.xla_name is None:
                _xla_name()  # says why not
            address, init_fn = None, None
            if "python" in own:
                spec = _relative_to(own["python"], base_dir.decode())
                address, init_fn, rest = _python_kernel(spec, own.get("init"), rest,
                                                        self.table)
            _check_together(own, rest, xla)
            self.set_init(init_fn, own.get("init"))
            data = b"".join(w.encode() + b"\0" for w in rest) + b"\0"
            if len(data) > cap:
                raise UsageError("the line's words are too long")
            ctypes.memmove(words, data, len(data))
            kernel[0] = address
            reference[0] = int(xla)
            return 0
        except (UsageError, TypeError, ValueError) as e:
            _say(message, message_cap, str(e))
            return 2
        except Exception as e:  # noqa: BLE001 - a line that cannot be resolved is an error
            _say(message, message_cap, f"{type(e).__name__}: {e}")
            return 2


def _relative_to(spec: str, base_dir: str) -> str:
    """A manifest's --python MODULE given as a relative path is relative to
    the manifest, as its LIB is."""
    import os
    module, colon, attr = spec.partition(":")
    if (os.sep in module or module.endswith((".so", ".py", ".pyd"))) and \
            not os.path.isabs(module):
        module = os.path.join(base_dir, module)
    return module + colon + attr


def _reference_of(own: dict) -> bool:
    reference = own.get("reference", "invoker")
    if reference not in ("invoker", "xla"):
        raise UsageError(f"--reference {reference}: expected xla or invoker")
    return reference == "xla"


def _check_together(own: dict, words: list[str], xla: bool) -> None:
    if "init" in own and "python" not in own:
        raise UsageError("--init goes with --python (it is called on that module)")
    if "--against" in words and xla:
        raise UsageError("--against compares a native port with ccshim's adapter; with "
                         "--reference xla the legacy side is XLA's, so leave one out")


def _xla_name() -> str:
    from importlib import metadata
    try:
        jaxlib = metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        raise UsageError("--reference xla needs jaxlib (pip install jax)") from None
    return f"XLA's legacy custom-call path (jaxlib {jaxlib})"


def main(argv: Sequence[str] | None = None) -> int:
    """``ccshim conform`` with --python, --init or --reference, on the
    command line or on a manifest's lines: the exit status of conform (0
    equal, 1 a difference, 2 the command is wrong)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        engine = _engine()
        table = options(engine)
        session = _Session(table)
        own, words = _split(argv, table)
        xla = _reference_of(own)
        manifest = "--manifest" in words
        if manifest and own:
            raise UsageError(f"--{next(iter(own))} goes on a manifest's lines, not beside "
                             "--manifest")
        kernel = None
        if "python" in own:
            kernel, init_fn, words = _python_kernel(own["python"], own.get("init"), words,
                                                    table)
            session.set_init(init_fn, own.get("init"))
        _check_together(own, words, xla)
        ref, name = _REFERENCE_FN(), None
        if xla or manifest:
            try:
                name = session.xla_name = _xla_name()
                ref = _REFERENCE_FN(_xla_reference)
            except UsageError:
                if xla:
                    raise
    except (UsageError, TypeError, ValueError) as e:
        print(f"ccshim conform: {e}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    c_words = (ctypes.c_char_p * (len(words) + 1))(*[w.encode() for w in words], None)
    resolve = session.resolve_cb if manifest else _RESOLVE_FN()
    return engine.ccshim_conform_embedded(kernel, ref, name.encode() if name else None,
                                          session.init_cb, resolve, len(words), c_words)


if __name__ == "__main__":
    sys.exit(main())
