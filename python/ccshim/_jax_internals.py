"""Every JAX internal (``jax._src``) ccshim touches, in this one module, each
behind a function so that nothing is imported before it is needed (JAX is
optional for the rest of the package).  A test fails when ``jax._src``
appears in code anywhere else.

==========================  ==========================================  =========================
here                        JAX internal                                used for
==========================  ==========================================  =========================
``ir()``                    ``jax._src.lib.mlir.ir``                    reading and rewriting
                                                                        custom calls in a module
                                                                        (``_hlo``, ``export``)
``mlir()``                  ``jax._src.interpreters.mlir``              lowering ordered calls,
                                                                        the restored
                                                                        ``mlir.custom_call``,
                                                                        reading a module's bytes
``jax_ext()``               ``jax._src.lib._jax``                       deserializing a portable
                                                                        artifact
``core()``                  ``jax._src.core``                           the ordered effect, avals
                                                                        of old artifacts
``effects()``               ``jax._src.effects``                        the ordered effect's
                                                                        lowerability
``config()``                ``jax._src.config``                         the calling conventions
                                                                        JAX reads and writes
``export_module()``         ``jax._src.export._export``                 module bytecode, the
                                                                        platform index
``serialization()``         ``jax._src.export.serialization``           old artifacts' shardings
``compiler()``              ``jax._src.compiler``                       zero-change mode's one
                                                                        place every compile goes
                                                                        through
``xla_client()``            ``jax._src.lib.xla_client``                 shardings of old
                                                                        artifacts
``ad()``                    ``jax._src.interpreters.ad``                a JVP rule's None output
                                                                        tangent, kept as JAX 0.4
                                                                        kept it (zero-change mode)
``hlo()``                   ``jax._src.lib.mlir.dialects.hlo``          the StableHLO ops a
                                                                        translation rule's
                                                                        XlaBuilder made
                                                                        (zero-change mode)
==========================  ==========================================  =========================

Where JAX offers a public name, ccshim uses it instead; these have none.
"""

from __future__ import annotations


def ir():
    from jax._src.lib.mlir import ir
    return ir


def mlir():
    from jax._src.interpreters import mlir
    return mlir


def jax_ext():
    from jax._src.lib import _jax
    return _jax


def core():
    from jax._src import core
    return core


def effects():
    from jax._src import effects
    return effects


def config():
    from jax._src import config
    return config


def export_module():
    from jax._src.export import _export
    return _export


def serialization():
    from jax._src.export import serialization
    return serialization


def compiler():
    from jax._src import compiler
    return compiler


def xla_client():
    from jax._src.lib import xla_client
    return xla_client


def ad():
    from jax._src.interpreters import ad
    return ad


def hlo():
    from jax._src.lib.mlir.dialects import hlo
    return hlo
