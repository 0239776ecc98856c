"""Serialized JAX programs whose custom calls use the legacy convention,
brought back through ccshim.

A ``jax.export`` artifact (or a plain StableHLO module) keeps its custom
calls as they were lowered: a legacy call names its target, its form
(``api_version`` 1-3) and its opaque (``backend_config``).  Such a program
stops compiling when the target is no longer registered, and every one of
them stops the day XLA drops the legacy path.  ``rewrite`` turns each legacy
call into a typed-FFI call (``api_version`` 4) on a target that ccshim wraps::

    stablehlo.custom_call @lapack_sgetrf(...) {api_version = 2, backend_config = "..."}
      becomes
    stablehlo.custom_call @ccshim.v2.lapack_sgetrf(...)
        {api_version = 4, backend_config = {opaque = dense<...> : tensor<Nxui8>}}

with the opaque bytes carried intact (a uint8 array attribute, the one
``ccshim.jax.legacy_call`` passes), and operands, results, layouts, aliases,
side-effect flags, locations and everything else untouched.  The new
target's name is a function of the old one and its form only
(``typed_name``), so executables cached and reloaded find it again; the
platform is XLA's other registration key.  ``register`` registers, for an
artifact, each kernel it needs under that name; ``load`` refuses an artifact
whose targets are not registered, naming them.

Reading and writing go through JAX's own machinery: ``jax.export``'s
(de)serialization, and jaxlib's MLIR and StableHLO bindings (portable
artifacts are written at the StableHLO version ``jax.export`` itself
targets).  The written artifact uses the running JAX's serialization.

Calls left alone: typed-FFI calls (``api_version`` 4, or JAX's own form for
them, ``api_version`` 1 with an ``mhlo.backend_config`` dictionary: so the
version alone does not tell), calls to XLA's and JAX's built-in targets
(``Sharding``, ``shape_assertion``, ...), calls already rewritten, and the
targets named in ``keep``.
"""

from __future__ import annotations

from ._check import check
from ._cli import main
from ._common import (BUILTIN_PREFIXES, BUILTIN_TARGETS, BYTECODE_MAGIC, DEFAULT_PREFIX,
                      OPAQUE_ATTR, ArtifactError, Call, typed_name)
from ._read import Artifact, read
from ._register import Registered, disabled_checks, load, needed, platforms_here, register
from ._rewrite import Rewritten, rewrite

__all__ = ["ArtifactError", "Artifact", "Call", "read", "rewrite", "typed_name", "needed",
           "register", "load", "check", "main", "Rewritten", "Registered", "disabled_checks",
           "platforms_here", "BYTECODE_MAGIC",
           "DEFAULT_PREFIX", "OPAQUE_ATTR", "BUILTIN_TARGETS", "BUILTIN_PREFIXES"]
