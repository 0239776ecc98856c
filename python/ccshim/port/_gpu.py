"""GPU kernels in a port: legacy CUDA/HIP kernels

    void f(STREAM stream, void** buffers, const char* opaque, size_t opaque_len)
    void f(STREAM, void**, const char*, size_t, XlaCustomCallStatus* status)

(API version 1/2, and 2/3 with a status; STREAM cudaStream_t, CUstream or
hipStream_t) get a typed handler bound to the platform stream, the operands
and results, and the opaque bytes as the attribute ``opaque`` (an array of
uint8, which the lowering passes).  ``xla_legacy_call.h`` rebuilds the
legacy call from them (docs/port.md).  The handler is defined beside the
dict that exports the kernel, which must see the kernel's declaration (its
own, or a header it includes); the kernel itself may live in a ``.cu`` file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from . import _binding as _bind
from ._cxxnames import base_name

_STREAM = re.compile(r"\b(cudaStream_t|CUstream|hipStream_t)\b")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
_STATUS = re.compile(
    r'^#include\s*"((?:tensorflow/compiler/)?xla/service/custom_call_status\.h)"', re.M)
# A platform for each stream type: the one its registration names.
PLATFORM = {"cudaStream_t": "cuda", "CUstream": "cuda", "hipStream_t": "rocm"}
PLATFORMS = ("cpu", *sorted(set(PLATFORM.values())))    # a kernel's, as the port says it


@dataclass
class GpuKernel:
    stream: str          # the stream's type, as the kernel spells it
    status: bool         # it reports through an XlaCustomCallStatus


def _squash(param: str) -> str:
    return re.sub(r"\s+", "", param)


def kind(params: list[str]) -> str:
    """'gpu' for the legacy GPU signature, 'gpu-status' for it with a status
    last, 'other' for any other signature with a stream in it."""
    if len(params) not in (4, 5) or not _STREAM.search(params[0]):
        return "other"
    buffers, opaque, length = (_squash(p) for p in params[1:4])
    if not (buffers.startswith("void**") and opaque.startswith("constchar*") and
            re.match(r"(?:std::)?size_t", length)):
        return "other"
    if len(params) == 5:
        return "gpu-status" if "XlaCustomCallStatus*" in _squash(params[4]) else "other"
    return "gpu"


def untyped_kind(params: list[str]) -> str | None:
    """'gpu' or 'gpu-status' for the legacy GPU signature with a `void*`
    stream (whose platform is its registration's); None for any other."""
    if not params or not re.match(r"void\s*\*", params[0].strip()):
        return None
    found = kind(["cudaStream_t stream"] + params[1:])
    return found if found != "other" else None


def registered_platform(platforms: set[str] | None) -> str | None:
    """The platform of a `void*`-stream kernel whose module is registered
    for platforms: cuda (JAX's "gpu" and "cuda") or rocm; None where that
    is not one of them alone."""
    named = {{"gpu": "cuda", "cuda": "cuda", "rocm": "rocm"}.get(p) for p in platforms or ()}
    return named.pop() if len(named) == 1 and None not in named else None


def void_stream_platform(what: str, module: str | None,
                         platforms: set[str] | None) -> tuple[str, str | None]:
    """(its platform, why it is not ported or None) of a void*-stream
    kernel (what: how it is named) whose module is registered for
    platforms."""
    platform = registered_platform(platforms)
    if platform is not None:
        return platform, None
    said = ", ".join(sorted(platforms or ())) or "no platform"
    return "other", (f"{what} is a GPU kernel whose stream is a void*, and its module {module} "
                     f"is registered for {said} (its Python's loop over it), not CUDA or ROCm "
                     "alone: not ported")


def platform_of(params: list[str]) -> str:
    """The platform of a kernel of these parameters: cpu, cuda or rocm."""
    m = _STREAM.search(" ".join(params))
    return PLATFORM[m.group(1)] if m else "cpu"


def held(target: str) -> str:
    return (f"'{target}': a lowering or registration of it stays legacy (said below): kept legacy "
            "with it")


def stream_of(params: list[str]) -> str:
    if untyped_kind(params):
        return "void*"
    return _STREAM.search(params[0]).group(1)


def declaring_include(path: Path, text: str, function: str,
                       sources: dict[Path, str]) -> Path | None:
    """The header that declares `void function(` among those text (path's)
    includes with quotes: beside path, or in the tree by its path's end."""
    name = re.escape(base_name(function))
    for m in _INCLUDE.finditer(text):
        inc = m.group(1)
        beside = (path.parent / inc).resolve()
        candidates = [beside] + [p for p in sources if p != beside and
                                 p.as_posix().endswith("/" + inc)]
        for header in candidates:
            header_text = sources.get(header)
            if header_text and re.search(r"\bvoid\s+" + name + r"\s*\(", header_text):
                return header
    return None


def scan_kernel(target: str, function: str, params: list[str], defined: str, path: Path,
                text: str, sources: dict[Path, str],
                here: bool) -> tuple[GpuKernel, str | None] | str:
    """(the kernel, the status header to add, relative to path's folder) when
    it can be ported; else why not."""
    status = kind(params) == "gpu-status"
    header = None if here else declaring_include(path, text, function, sources)
    if not here and header is None:
        return (f"'{target}': {function} ({defined}) is a GPU kernel whose declaration the "
                f"file with the dict does not include: not ported (include its header there)")
    status_header = None
    if status:
        found = [(folder, _STATUS.search(body)) for folder, body in
                 [(path.parent, text)] + ([(header.parent, sources[header])] if header else [])]
        found = [(folder, m) for folder, m in found if m]
        if not found:
            return (f"'{target}': {function} ({defined}) is a GPU kernel that reports through "
                    "XlaCustomCallStatus without including xla/service/custom_call_status.h "
                    "with quotes: not ported yet")
        folder, m = found[0]
        status_header = os.path.relpath(folder / m.group(1), path.parent)
    return GpuKernel(stream_of(params), status), status_header


def _binding(stream: str, indent: str, counts: _bind.Counts | None = None) -> str:
    """Ffi::Bind() for GpuHandler: the stream, the buffers, the opaque."""
    return _bind.bind(counts, indent, ctx=f".Ctx<xla::ffi::PlatformStream<{stream}>>()",
                      attr='.Attr<xla::ffi::Span<const std::uint8_t>>("opaque")')


def handler(target: str, function: str, name: str, stream: str, status: bool,
            counts: _bind.Counts | None = None) -> str:
    """The typed handler of one GPU kernel, as C++ beside its dict; counts:
    the (operands, results) every call site passes, where fixed."""
    indent = " " * len("XLA_FFI_DEFINE_HANDLER(")
    # (a void* stream: the stream of the platform it is registered for)
    platform = PLATFORM[stream].upper() if stream in PLATFORM else "GPU"
    if counts:
        head = _bind.comment(f"{target}, as a typed XLA FFI handler ({_bind.said(counts)}; "
                             f"{platform}: the stream, the buffers, the opaque bytes as the "
                             f"`opaque` attribute).")
    else:
        head = (f"// {target}, as a typed XLA FFI handler ({platform}: the stream, the buffers,\n"
                f"// the opaque bytes as the `opaque` attribute).\n")
    return (head +
            f"XLA_FFI_DEFINE_HANDLER({name},\n"
            f"{indent}{_bind.handler('GpuStatus' if status else 'Gpu', counts, function)},\n"
            f"{indent}{_binding(stream, indent, counts)});\n")


# The header that declares each stream type, for a handler file compiled
# by the host compiler (the Cython form).
RUNTIME_HEADER = {"cudaStream_t": "cuda_runtime_api.h", "CUstream": "cuda.h",
                  "hipStream_t": "hip/hip_runtime_api.h"}


def cython_platform(params: list[str]) -> str:
    """A Cython kernel's platform: cuda or rocm by its stream; 'other' for
    the GPU form with a stream of another type (void*: SYCL's); cpu else."""
    if _STREAM.search(" ".join(params)):
        return platform_of(params)
    if len(params) in (4, 5) and kind(["cudaStream_t s"] + params[1:]) != "other":
        return "other"
    return "cpu"


def runtime_includes(streams) -> str:
    headers = sorted({RUNTIME_HEADER[s] for s in streams})
    return "".join(f"#include <{h}>\n" for h in headers) + ("\n" if headers else "")


def cython_handler(target: str, function: str, where: str, stream: str) -> str:
    """The typed handler of a Cython GPU kernel, in the handlers' C++ file."""
    what = function if target == function else f"'{target}': {function}"
    indent = " " * len("XLA_FFI_DEFINE_HANDLER_SYMBOL(")
    return (f"// {what} ({where}), as a typed XLA FFI handler\n"
            f"// ({PLATFORM[stream].upper()}: the stream, the buffers, the opaque bytes as the "
            f"`opaque` attribute).\n"
            f"XLA_FFI_DEFINE_HANDLER_SYMBOL({function}_ffi,\n"
            f"{indent}{_bind.handler('Gpu', None, function)},\n"
            f"{indent}{_binding(stream, indent)});\n")
