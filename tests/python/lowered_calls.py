"""The custom calls of a module JAX lowered, read from its StableHLO as XLA
reads them: per call its target, its API version (4 where JAX wrote a typed
call: a dictionary `mhlo.backend_config`, which XLA's HLO says is
API_VERSION_TYPED_FFI), its opaque bytes in hex (the `opaque` attribute of
a typed call, the backend_config string of a legacy one) and its operand
and result layouts (minor to major; None where the call has none).  Used by
programs that lower a project's GPU path on a machine with no GPU
(port_gpu_lowering_program.py, veros_cuda_lowering_program.py), which
also say whether ccshim could be imported there (ccshim_state)."""
import numpy as np
from jax._src.lib.mlir import ir


def ops(op):
    """Every operation nested in op."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner
                yield from ops(inner.operation)


def _layouts(attrs, name: str):
    if name not in attrs:
        return None
    return [[int(i) for i in ir.DenseIntElementsAttr(a)] for a in ir.ArrayAttr(attrs[name])]


def call(op) -> dict:
    """One stablehlo.custom_call op, as the module docstring says."""
    attrs = op.attributes
    target = ir.StringAttr(attrs["call_target_name"]).value
    if "mhlo.backend_config" in attrs and isinstance(attrs["mhlo.backend_config"], ir.DictAttr):
        attr = ir.DictAttr(attrs["mhlo.backend_config"])
        opaque = bytes(np.asarray(ir.DenseIntElementsAttr(attr["opaque"]), dtype=np.uint8)) \
            if "opaque" in attr else b""
        version = 4
    else:
        version = ir.IntegerAttr(attrs["api_version"]).value if "api_version" in attrs else 1
        config = attrs["backend_config"] if "backend_config" in attrs else None
        opaque = ir.StringAttr(config).value_bytes if config is not None else b""
    return {"target": target, "version": version, "opaque": opaque.hex(),
            "operand_layouts": _layouts(attrs, "operand_layouts"),
            "result_layouts": _layouts(attrs, "result_layouts")}


def module_calls(module, prefix: str = "") -> list[dict]:
    """The custom calls of a lowered module (its compiler_ir("stablehlo"))
    whose targets start with prefix."""
    return [call(op.operation) for op in ops(module.operation)
            if op.operation.name == "stablehlo.custom_call" and
            ir.StringAttr(op.operation.attributes["call_target_name"]).value.startswith(prefix)]


def ccshim_state() -> str:
    """"importable", or why `import ccshim` failed (a port's run needs it
    to fail)."""
    try:
        import ccshim  # noqa: F401
        return "importable"
    except ImportError as e:
        return f"{type(e).__name__}: {e}"
