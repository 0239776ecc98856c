"""ccshim: legacy XLA custom-call kernels as typed-FFI handlers.

A thin layer over libccshim (through ctypes), in floors: ``_native`` (the
library and its declarations), ``_core`` (signatures, kernels, adapters),
then ``runtime``, ``jax``, ``conform``, ``export`` and ``legacy``.

* :func:`wrap` turns a legacy kernel (API version 1, 2 or 3; CPU or GPU) into
  an :class:`Adapter`, whose ``handler`` is an ``XLA_FFI_Handler*``;
* :mod:`ccshim.jax` registers adapters with JAX and calls them under ``jit``,
  ``vmap`` and ``shard_map`` (``legacy_call``);
* :mod:`ccshim.legacy` runs a legacy extension unchanged (zero-change mode);
* :mod:`ccshim.export` rewrites exported programs (``ccshim rewrite``);
* :mod:`ccshim.runtime` runs typed handlers in ccshim's embedded runtime.

Importing ccshim loads libccshim with RTLD_GLOBAL, so legacy kernel libraries
loaded afterwards (:func:`load_legacy_library`) resolve their
``XlaCustomCallStatus*`` symbols to it.
"""

from ._core import (Adapter, CcshimError, Leaf, Signature, WrapSpec, answers_as_typed_handler,
                    cmake_dir, dtype_name, dtype_number, export_platform_name, include_dir,
                    include_dirs, legacy_form_name, legacy_targets, library_path,
                    load_legacy_library, numpy_dtype, parse_platform, pycapsule, resolve_kernel,
                    version, wrap, wrap_kernel, wrap_spec, xla_platform_name)

__all__ = [
    "CcshimError", "Signature", "Leaf", "Adapter", "WrapSpec", "wrap", "wrap_spec",
    "wrap_kernel", "resolve_kernel", "answers_as_typed_handler", "load_legacy_library",
    "legacy_targets", "version", "dtype_name", "dtype_number", "numpy_dtype", "include_dir",
    "include_dirs", "cmake_dir", "library_path", "parse_platform", "legacy_form_name",
    "xla_platform_name", "export_platform_name", "pycapsule",
]
