"""What the native side of a port takes from the project's Python before
the Python is ported: the platforms each extension module's kernels are
registered for, where a kernel's own parameters do not say it.

A GPU kernel whose stream is a ``void*`` (sphericart-jax's CUDA kernels,
`void f(void* stream, void** buffers, const char* opaque, size_t len)`) runs
on whatever platform it is registered for: XLA hands the legacy kernel the
platform's stream as it is.  Its platform is the one its module's
registrations are made for, in a loop over ``M.registrations().items()``
(or ``M.custom_call_targets.items()``) whose registration names a literal
``platform=``.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import libcst.matchers as m

from .._names import loop_module


def registered_platforms(files: list[Path]) -> dict[str, set[str]]:
    """Each extension module's platforms, as its registration loops give
    them (lowercase, as written: "gpu", "cuda", "rocm", "sycl", ...)."""
    found: dict[str, set[str]] = {}
    for path in files:
        if path.suffix != ".py":
            continue
        text = path.read_text(errors="replace")
        if ".items()" not in text or "platform" not in text:
            continue
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue        # said where the Python is ported
        for loop in m.findall(module, m.For()):
            name = loop_module(loop.iter)
            if name is None:
                continue
            for call in m.findall(loop.body, m.Call()):
                for arg in call.args:
                    if arg.keyword is not None and arg.keyword.value == "platform" and \
                            isinstance(arg.value, cst.SimpleString):
                        found.setdefault(name, set()).add(arg.value.evaluated_value.lower())
    return found
