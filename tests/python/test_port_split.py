"""`ccshim port` of a lowering rule shared by two GPU platforms whose kernels
were ported on one of them only (docs/port.md, "A rule split by platform";
python/ccshim/port/_split.py): mpi4jax's form, one rule per collective for
CUDA and SYCL, reached through a wrapper per platform or through a function
per platform that calls it.

The rule is kept, legacy, for the platform whose kernel has no source here
(rocm), and a copy of it, typed, lowers for the ported one (cuda); a call
in the same rule to a target ported on both (m) is typed in both: proven
by lowering the ported module in real JAX for each platform, without a
GPU: cuda's call is typed, the opaque bytes its attribute, and rocm's is
the legacy call it was (API version 2), its bytes its backend_config.
"""

import importlib

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("libcst", reason="ccshim port needs libcst (dev/setup.sh test installs it)")
from test_port import _port  # noqa: E402

GPU_OPS = """\
#include <pybind11/pybind11.h>
#include <cuda_runtime_api.h>

void k_gpu(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {}
void j_gpu(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {}
void m_gpu(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {}

pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["k"] = EncapsulateFunction(k_gpu);
  dict["j"] = EncapsulateFunction(j_gpu);
  dict["m"] = EncapsulateFunction(m_gpu);
  return dict;
}
"""

# m has a ROCm kernel too: its call, beside k's in k's rule, is typed on
# both sides of the split
HIP_OPS = """\
#include <pybind11/pybind11.h>
#include <hip/hip_runtime_api.h>

void m_hip(hipStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {}

pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["m"] = EncapsulateFunction(m_hip);
  return dict;
}
"""

OPS = """\
import functools

from jax._src.interpreters.mlir import custom_call
from jax.extend.core import Primitive
from jax.interpreters import mlir

k_p = Primitive("k")
k_p.def_abstract_eval(lambda x: x)
j_p = Primitive("j")
j_p.def_abstract_eval(lambda x: x)


def on_gpu(rule):
    @functools.wraps(rule)
    def wrapped(*args, **kwargs):
        return rule(*args, **kwargs)

    return wrapped


def _k_device(ctx, x):
    # one custom call for both platforms
    y = custom_call(
        "k",
        result_types=[x.type],
        operands=[x],
        backend_config=b"\\x01\\x00k",
    ).results
    return custom_call("m", result_types=[x.type], operands=y, backend_config=b"m").results


_k_cuda = on_gpu(_k_device)
_k_rocm = on_gpu(_k_device)
mlir.register_lowering(k_p, _k_cuda, platform="cuda")
mlir.register_lowering(k_p, _k_rocm, platform="rocm")


def _j_device(ctx, x):
    out = custom_call(
        "j",
        result_types=[x.type],
        operands=[x],
        backend_config=b"j",
    )
    return out.results


def _j_cuda(ctx, x):
    return _j_device(ctx, x)


def _j_rocm(ctx, x):
    return _j_device(ctx, x)


mlir.register_lowering(j_p, _j_cuda, platform="cuda")
mlir.register_lowering(j_p, _j_rocm, platform="rocm")
"""


def _lowered(ops, platform: str) -> str:
    """The ported ops lowered for platform (no such device needed)."""
    x = jax.ShapeDtypeStruct((3,), jax.numpy.float32)
    return jax.jit(lambda x: ops.j_p.bind(ops.k_p.bind(x))).trace(x).lower(
        lowering_platforms=(platform,)).as_text()


def _calls(text: str) -> dict[str, str]:
    return {name: line for line in text.splitlines() if "stablehlo.custom_call @" in line
            for name in ("k", "j", "m") if f"custom_call @{name}(" in line}


@pytest.mark.once
def test_a_rule_shared_with_a_platform_not_ported_is_split_and_each_side_lowers_as_it_should(
        tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    (tree / "splitpkg").mkdir(parents=True)
    (tree / "splitpkg" / "__init__.py").write_text("")
    (tree / "splitpkg" / "gpu_ops.cc").write_text(GPU_OPS)
    (tree / "splitpkg" / "hip_ops.cc").write_text(HIP_OPS)
    (tree / "splitpkg" / "ops.py").write_text(OPS)
    (tree / "CMakeLists.txt").write_text(
        "project(p LANGUAGES CXX)\nfind_package(pybind11 CONFIG REQUIRED)\n"
        'pybind11_add_module(gpu_ops "splitpkg/gpu_ops.cc")\n'
        'pybind11_add_module(hip_ops "splitpkg/hip_ops.cc")\n')
    done = _port(tree, "--apply")
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert said[-1] == "ccshim port: 5 files written", said
    assert said[:-1] == [
        "ccshim port: splitpkg/ops.py:23: not ported: lowers k (rocm), not ported: _k_device "
        "is kept legacy for it; its copy _k_device_ffi lowers the ported ones (cuda) typed",
        "ccshim port: splitpkg/ops.py:39: not ported: lowers j (rocm), not ported: _j_device "
        "is kept legacy for it; its copy _j_device_ffi lowers the ported ones (cuda) typed"], said
    text = (tree / "splitpkg" / "ops.py").read_text()
    assert "_k_cuda = on_gpu(_k_device_ffi)\n_k_rocm = on_gpu(_k_device)\n" in text
    assert "def _j_cuda(ctx, x):\n    return _j_device_ffi(ctx, x)\n" in text
    assert "def _j_rocm(ctx, x):\n    return _j_device(ctx, x)\n" in text
    # the legacy rule keeps k's legacy call; m's, ported on both platforms,
    # is typed in it as in its copy
    legacy = text[text.index("def _k_device("):text.index("def _k_device_ffi(")]
    assert OPS[OPS.index("    y = custom_call("):OPS.index("    return custom_call(\"m\"")] \
        in legacy, legacy
    assert '    return jax.ffi.ffi_lowering("m", ' in legacy, legacy
    assert "# The legacy custom call, for rocm, whose kernels are not ported; the typed\n" \
           "# one, for cuda, is _k_device_ffi below.\ndef _k_device(ctx, x):" in text
    assert "XLA_FFI_DEFINE_HANDLER" in (tree / "splitpkg" / "gpu_ops.cc").read_text()

    monkeypatch.syspath_prepend(str(tree))
    ops = importlib.import_module("splitpkg.ops")
    cuda, rocm = _calls(_lowered(ops, "cuda")), _calls(_lowered(ops, "rocm"))
    # typed (the opaque bytes an attribute) for cuda; the legacy call for rocm
    for name, opaque in (("k", "dense<[1, 0, 107]> : tensor<3xui8>"),
                         ("j", "dense<106> : tensor<1xui8>"),
                         ("m", "dense<109> : tensor<1xui8>")):
        assert f"mhlo.backend_config = {{opaque = {opaque}}}" in cuda[name], cuda[name]
        assert "api_version = 2" not in cuda[name], cuda[name]
        if name != "m":
            assert "mhlo.backend_config" not in rocm[name], rocm[name]
    assert "mhlo.backend_config = {opaque = dense<109>" in rocm["m"], rocm["m"]
    assert 'api_version = 2 : i32, backend_config = "\\01\\00k"' in rocm["k"], rocm["k"]
    assert 'api_version = 2 : i32, backend_config = "j"' in rocm["j"], rocm["j"]
    # the port of the ported tree is nothing
    again = _port(tree)
    assert again.returncode == 0 and again.stdout == "", again.stdout[:2000]
