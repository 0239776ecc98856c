"""`ccshim port` of legacy GPU kernels (docs/port.md, GPU): no GPU is needed.

- The opaque bytes: the lowering the port writes for a GPU call site
  (ffi_lowering(...)(ctx, *ops, opaque=np.frombuffer(OPAQUE, dtype=np.uint8)))
  delivers them, in real XLA on the CPU, byte for byte (empty, NULs, "{}")
  to a typed handler running xla_legacy_call.h's GPU convention, with the
  buffer table operands then results.
- The handlers the port writes for tests/fixtures/port/gpu_ext (CUDA
  kernels in a .cu, declared in the header its pybind11 dict includes; one
  reports through a status), compiled with host versions of its kernels
  (they take a cudaStream_t and touch host memory) and run by ccshim's
  embedded runtime in a "cuda" context: the stream, the table (a token's
  entry NULL), the bytes, and a status failure as INTERNAL "CustomCall
  failed: <message>".  Its kernels.cu compiles with nvcc once ported.
- exoplanet-core's ported GPU sources compile: the dict's file with the host
  compiler against jax.ffi.include_dir(), the CUDA kernels with nvcc -std=c++17.
"""

import ctypes
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import FIXTURES, ROOT, fixture_missing
import project_suites

jax = pytest.importorskip("jax")
HERE = FIXTURES / "port" / "gpu_ext"
PORT = ROOT / "python" / "ccshim" / "port"
CUDA_INCLUDE = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"


def _headers(tmp_path: pathlib.Path) -> pathlib.Path:
    """The two headers a port adds, where a ported tree has them."""
    inc = tmp_path / "inc"
    (inc / "xla" / "service").mkdir(parents=True)
    shutil.copy(PORT / "legacy_call.h", inc / "xla_legacy_call.h")
    shutil.copy(PORT / "custom_call_status.h", inc / "xla" / "service")
    return inc


def _compile(tmp_path, source, name, *includes) -> pathlib.Path:
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler here")
    out = tmp_path / name
    flags = [f"-I{i}" for i in (_headers(tmp_path), jax.ffi.include_dir(), *includes)]
    done = subprocess.run([cxx, "-std=c++17", "-shared", "-fPIC", "-w", *flags, str(source),
                           "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.parametrize("symbol,forms", [
    ("opaque_echo", ("ffi_lowering", "custom_call", "op", "ffi_call")),
    ("opaque_echo_fixed", ("ffi_lowering",))], ids=["each-form", "fixed-counts"])
def test_the_opaque_bytes_arrive_as_they_were_through_real_xla(tmp_path, symbol, forms):
    """Through the handlers' two bindings: RemainingArgs and RemainingRets,
    and the counts fixed (an Arg or Ret<AnyBuffer> per buffer); and through
    each form of call the port writes for a GPU site: ffi_lowering, a call
    typed in place (JAX's custom_call, a stablehlo.CustomCallOp), an
    ffi_call given the bytes as its attribute."""
    lib = _compile(tmp_path, HERE / "opaque_echo.cc", "echo.so")
    done = subprocess.run([sys.executable, str(HERE / "opaque_program.py"), str(lib), symbol,
                           ",".join(forms)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["jax"] == jax.__version__ and sorted(report["seen"]) == sorted(forms)
    for form, seen_each in report["seen"].items():
        assert len(seen_each) == len(report["cases"]) == 5, form
        for sent, seen in zip(report["cases"], seen_each):
            assert seen["bytes"] == sent and seen["len"] == len(sent) // 2, form
            # operands 0 and 1, then results 0 and 1: one table, in that order
            assert seen["buffers"] == [0, 1, 100, 101], form


def _port(tree: pathlib.Path, *flags: str) -> subprocess.CompletedProcess:
    """`python -m ccshim.port TREE FLAGS...` with this checkout's package."""
    return subprocess.run([sys.executable, "-m", "ccshim.port", str(tree), *flags],
                          env=dict(os.environ, PYTHONPATH=str(ROOT / "python")),
                          capture_output=True, text=True, timeout=300)


def _ported_fixture(tmp_path) -> pathlib.Path:
    tree = tmp_path / "gpu_ext"
    shutil.copytree(HERE, tree)
    done = _port(tree, "--apply")
    assert done.returncode == 0, done.stderr
    assert "not ported" not in done.stderr, done.stderr
    return tree


def _capsule_address(capsule) -> int:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get(capsule, b"xla._CUSTOM_CALL_TARGET")


def _pybind11_module(tmp_path: pathlib.Path, name: str, sources: list, *includes):
    """The ported dict's file (and sources beside it) built with g++ into the
    Python module `name`, imported; (the module, its library's path)."""
    pybind11 = pytest.importorskip("pybind11", reason="the dict is pybind11's")
    import importlib
    import sysconfig
    path = tmp_path / "mod" / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    path.parent.mkdir()
    built = subprocess.run(["g++", "-std=c++17", "-shared", "-fPIC", "-w",
                            *(f"-I{i}" for i in includes), f"-I{jax.ffi.include_dir()}",
                            f"-I{pybind11.get_include()}",
                            f"-I{sysconfig.get_paths()['include']}", *map(str, sources),
                            "-o", str(path)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    sys.path.insert(0, str(path.parent))
    try:
        return importlib.import_module(name), path
    finally:
        sys.path.remove(str(path.parent))


def _context_stream():
    """ccshim_context_stream: the stream the embedded runtime's context gives."""
    from ccshim import runtime
    stream_of = ctypes.CDLL(runtime.lib._name).ccshim_context_stream
    stream_of.restype, stream_of.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    return stream_of


class _Seen(ctypes.Structure):
    _fields_ = [("stream", ctypes.c_uint64), ("opaque_len", ctypes.c_uint64),
                ("buffers", ctypes.c_uint64 * 4), ("opaque", ctypes.c_ubyte * 64)]


@pytest.mark.once("newest")  # (no JAX in what it builds or runs)
def test_generated_gpu_handlers_run_with_their_stream_in_the_embedded_runtime(tmp_path):
    """The handlers `ccshim port` wrote into gpu_ext's gpu_ops.cc, compiled
    with host versions of its CUDA kernels (host_kernels.cc), run by
    ccshim's embedded runtime in a "cuda" context: the stream Stream_Get
    gives, one table of the operands' then the results' pointers (a token's
    entry NULL), the opaque bytes, and a status failure as XLA's legacy GPU
    runtime reported it (through a handler bound with fixed counts)."""
    if not (CUDA_INCLUDE / "cuda_runtime_api.h").exists():
        pytest.skip(f"no cuda_runtime_api.h in {CUDA_INCLUDE} (the CUDA toolkit's headers)")
    from ccshim import runtime
    src = _ported_fixture(tmp_path) / "src" / "gpu_ext"
    # gpu_ext_fail's only call site writes its counts out: bound with them
    source = (src / "gpu_ops.cc").read_text()
    assert "xla_legacy_call::GpuHandler<Scale>," in source
    assert "xla_legacy_call::GpuStatusFixedHandler<Fail>," in source
    gpu_ops, module = _pybind11_module(tmp_path, "gpu_ops",
                                       [src / "gpu_ops.cc", HERE / "host_kernels.cc"],
                                       src, CUDA_INCLUDE)
    handlers = {k: _capsule_address(v) for k, v in gpu_ops.registrations().items()}
    seen_of = ctypes.CDLL(str(module)).gpu_ext_seen     # the same library, its globals
    seen_of.restype = ctypes.POINTER(_Seen)
    stream_of = _context_stream()

    context = runtime.Context(platform="cuda")
    x = np.array([1.0, 2.0, 3.5, -4.0], np.float32)
    opaque = np.float32(2.5).tobytes() + np.int32(4).tobytes()
    attrs = {"opaque": np.frombuffer(opaque, np.uint8)}
    out, count = runtime.call(handlers["gpu_ext_scale"], [x],
                              [jax.ShapeDtypeStruct((4,), np.float32),
                               jax.ShapeDtypeStruct((), np.int32)], attrs, context=context)
    np.testing.assert_array_equal(out, x * 2.5)
    assert count == 4
    seen = seen_of().contents
    assert seen.stream == stream_of(context._ptr) != 0      # what Stream_Get gave
    assert bytes(seen.opaque[:seen.opaque_len]) == opaque
    # operands then results, in one table; a token operand's entry is NULL
    out, count = np.zeros(4, np.float32), np.zeros((), np.int32)
    token = (17, None, ())     # XLA_FFI_DataType_TOKEN: no data, as XLA passes a token
    runtime.invoke_at(handlers["gpu_ext_scale"], [runtime._at(x), token],
                      [runtime._at(out), runtime._at(count)], attrs, context=context)
    assert list(seen_of().contents.buffers) == [x.ctypes.data, 0, out.ctypes.data,
                                                count.ctypes.data]
    with pytest.raises(runtime.HandlerError) as failed:
        runtime.call(handlers["gpu_ext_fail"], [x], [jax.ShapeDtypeStruct((4,), np.float32)],
                     {"opaque": np.frombuffer(b"no good\x00unseen", np.uint8)}, context=context)
    assert (failed.value.code, failed.value.message) == ("INTERNAL",
                                                         "CustomCall failed: no good")
    context.close()


def test_gpu_ext_port_compiles_with_nvcc_and_its_lowering_passes_the_opaque(tmp_path):
    tree = _ported_fixture(tmp_path)
    ops = (tree / "src" / "gpu_ext" / "ops.py").read_text()
    assert "opaque=np.frombuffer(descriptor, dtype=np.uint8))" in ops
    assert "backend_config=" not in ops and "xla_client" not in ops
    again = _port(tree)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    nvcc = shutil.which("nvcc") or shutil.which("nvcc", path="/usr/local/cuda/bin")
    if nvcc is None:
        pytest.skip("no nvcc here (the CUDA toolkit)")
    src = tree / "src" / "gpu_ext"
    done = subprocess.run([nvcc, "-std=c++17", "-Xcompiler", "-fPIC", "-c", f"-I{src}",
                           str(src / "kernels.cu"), "-o", str(tmp_path / "kernels.o")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.once("newest")  # (no JAX in what it builds or runs)
def test_exoplanet_core_gpu_port_compiles_with_nvcc_and_the_host_compiler(tmp_path):
    nvcc = shutil.which("nvcc") or (shutil.which("nvcc", path="/usr/local/cuda/bin"))
    if nvcc is None:
        pytest.skip("no nvcc here (the CUDA toolkit)")
    pybind11 = pytest.importorskip("pybind11", reason="the dict's file includes pybind11")
    folder, inner, _ = project_suites.SUITES["exoplanet-core-0.3.1"]["suite"]
    src = project_suites.cached(folder)
    if not (src / ".complete").exists():
        fixture_missing(f"exoplanet-core 0.3.1's sdist ({folder})")
    tree = tmp_path / "tree"
    shutil.copytree(src / inner, tree)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    done = subprocess.run([sys.executable, "-m", "ccshim.port", str(tree), "--apply"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "not ported" not in done.stderr, done.stderr
    jaxdir = tree / "src" / "exoplanet_core" / "jax"
    incs = [f"-I{jaxdir}", f"-I{tree / 'src/exoplanet_core/lib/include'}"]
    import sysconfig
    host = subprocess.run(["g++", "-std=c++17", "-fPIC", "-w", "-c", *incs,
                           f"-I{jax.ffi.include_dir()}", f"-I{pybind11.get_include()}",
                           f"-I{sysconfig.get_paths()['include']}", f"-I{CUDA_INCLUDE}",
                           str(jaxdir / "gpu_driver.cpp"), "-o", str(tmp_path / "g.o")],
                          capture_output=True, text=True, timeout=300)
    assert host.returncode == 0, host.stderr[-3000:]
    device = subprocess.run([nvcc, "-std=c++17", "-Xcompiler", "-fPIC", "-c", *incs,
                             str(jaxdir / "cuda_kernels.cc.cu"), "-o", str(tmp_path / "k.o")],
                            capture_output=True, text=True, timeout=300)
    assert device.returncode == 0, device.stderr[-3000:]


HIP_KERNELS_H = """\
#include <hip/hip_runtime_api.h>

#include <cstddef>

void HipScale(hipStream_t stream, void** buffers, const char* opaque, std::size_t opaque_len);
"""

HIP_KERNELS = """\
#include <hip/hip_runtime.h>

#include "kernels.h"

__global__ void Twice(float* x) { x[threadIdx.x] *= 2; }

void HipScale(hipStream_t stream, void** buffers, const char*, std::size_t) {
  hipLaunchKernelGGL(Twice, dim3(1), dim3(4), 0, stream, static_cast<float*>(buffers[0]));
}
"""

HIP_DICT = """\
#include <pybind11/pybind11.h>

#include "kernels.h"

template <typename T>
pybind11::capsule EncapsulateFunction(T* fn) {
  return pybind11::capsule(reinterpret_cast<void*>(fn), "xla._CUSTOM_CALL_TARGET");
}

pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["hip_scale"] = EncapsulateFunction(HipScale);
  return dict;
}

PYBIND11_MODULE(hip_ops, m) { m.def("registrations", &Registrations); }
"""


@pytest.mark.once("newest")  # (no JAX in what it builds or runs)
def test_a_hip_port_compiles_with_hipcc(tmp_path):
    """The same for HIP: the handler takes a hipStream_t (from the kernel's
    declaration); the ported dict's file and the kernels compile with
    hipcc (for one AMD architecture named, since none is here to detect)."""
    hipcc = shutil.which("hipcc")
    if hipcc is None:
        pytest.skip("no hipcc here (ROCm's HIP compiler)")
    pybind11 = pytest.importorskip("pybind11", reason="the dict's file includes pybind11")
    import sysconfig
    tree = tmp_path / "hip_ext"
    tree.mkdir()
    (tree / "kernels.h").write_text(HIP_KERNELS_H)
    (tree / "kernels.hip").write_text(HIP_KERNELS)
    (tree / "hip_ops.cc").write_text(HIP_DICT)
    (tree / "CMakeLists.txt").write_text(
        "project(p LANGUAGES CXX HIP)\nfind_package(pybind11 CONFIG REQUIRED)\n"
        'pybind11_add_module(hip_ops "hip_ops.cc" "kernels.hip")\n')
    done = _port(tree, "--apply")
    assert done.returncode == 0 and "not ported" not in done.stderr, done.stderr
    ported = (tree / "hip_ops.cc").read_text()
    assert ".Ctx<xla::ffi::PlatformStream<hipStream_t>>()" in ported
    assert 'dict["hip_scale"] = EncapsulateFunction(HipScale_ffi);' in ported
    flags = ["-std=c++17", "-fPIC", "-w", "-c", "--offload-arch=gfx90a", f"-I{tree}"]
    for source, extra in (("hip_ops.cc", [f"-I{jax.ffi.include_dir()}",
                                          f"-I{pybind11.get_include()}",
                                          f"-I{sysconfig.get_paths()['include']}"]),
                          ("kernels.hip", [])):
        built = subprocess.run([hipcc, *flags, *extra, str(tree / source), "-o",
                                str(tmp_path / f"{source}.o")],
                               capture_output=True, text=True, timeout=300)
        assert built.returncode == 0, built.stderr[-3000:]


# gpu_ext's _fail_lowering as a stablehlo.CustomCallOp built by hand, and
# its op also called through a legacy ffi_call made and called in one place.
OP_FORMS = """

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo


def _fail_op_lowering(ctx, x, *, factor):
    descriptor = np.float32(factor).tobytes()
    return stablehlo.CustomCallOp(
        [mlir.ir.RankedTensorType(x.type)],
        [x],
        call_target_name=ir.StringAttr.get("gpu_ext_fail"),
        backend_config=ir.StringAttr.get(descriptor),
        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 2),
    ).results


def fail_call(x, descriptor):
    return jax.ffi.ffi_call(
        "gpu_ext_fail", x, custom_call_api_version=2, legacy_backend_config=descriptor
    )(x)
"""


@pytest.mark.once
def test_a_gpu_custom_call_op_and_ffi_call_pass_the_opaque_as_an_attribute(tmp_path):
    """The GPU form of the call sites typed in place: the legacy opaque is
    the attribute the handler binds (its bytes arrive as they were through
    each form: test_the_opaque_bytes_arrive_as_they_were_through_real_xla)."""
    tree = tmp_path / "gpu_ext"
    shutil.copytree(HERE, tree)
    ops = tree / "src" / "gpu_ext" / "ops.py"
    ops.write_text("import jax\n" + ops.read_text() + OP_FORMS)
    done = _port(tree, "--apply")
    assert done.returncode == 0 and "not ported" not in done.stderr, done.stderr
    text = ops.read_text()
    assert """        backend_config=ir.DictAttr.get({"opaque": mlir.ir_attribute(np.frombuffer(""" \
        """descriptor, dtype=np.uint8))}),
        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
    ).results""" in text, text
    assert """    return jax.ffi.ffi_call(
        "gpu_ext_fail", x
    )(x, opaque=np.frombuffer(descriptor, dtype=np.uint8))""" in text, text
    assert _port(tree).stdout == ""


@pytest.mark.once
def test_a_lowering_it_cannot_read_keeps_the_targets_it_may_lower_legacy(tmp_path):
    """jax-finufft's form: a custom call through the module's own wrapper
    (`custom_call(*args, **kwargs)`) in the module that registers the GPU
    targets.  Were the kernels ported, that lowering would call typed
    targets the legacy way: they are kept legacy, each said, and so is
    their registration."""
    tree = tmp_path / "gpu_ext"
    shutil.copytree(HERE, tree)
    ops = tree / "src" / "gpu_ext" / "ops.py"
    ops.write_text(ops.read_text() + "\n\ndef custom_call(*args, **kwargs):\n"
                   "    return mlir.custom_call(*args, **kwargs).results\n")
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    for line, target in ((15, "gpu_ext_scale"), (16, "gpu_ext_fail")):
        assert f"ccshim port: src/gpu_ext/gpu_ops.cc:{line}: not ported: '{target}': a " \
               "lowering or registration of it stays legacy (said below): kept legacy with " \
               "it" in said, said
    assert "ccshim port: src/gpu_ext/ops.py:60: not ported: a custom call whose target it " \
           "cannot read (passed through *args): not ported" in said, said
    assert "XLA_FFI_DEFINE_HANDLER" not in done.stdout and "opaque=" not in done.stdout
    assert '+    jax.ffi.register_ffi_target(_name, _value, platform="CUDA", api_version=0)' \
        in done.stdout


BOTH_CPU = """\
#include <pybind11/pybind11.h>

void k(void* out, const void** in) {}

pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["k"] = EncapsulateFunction(k);
  return dict;
}
"""

BOTH_GPU = """\
#include <pybind11/pybind11.h>
#include <cuda_runtime_api.h>

void k_gpu(cudaStream_t stream, void** buffers, const char* opaque, size_t opaque_len) {}

pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["k"] = EncapsulateFunction(k_gpu);
  return dict;
}
"""

BOTH_PY = """\
from jax.interpreters import mlir
from jax.lib import xla_client

from pkg import cpu_ops, gpu_ops

for _name, _value in cpu_ops.registrations().items():
    xla_client.register_custom_call_target(_name, _value, platform="cpu")
for _name, _value in gpu_ops.registrations().items():
    xla_client.register_custom_call_target(_name, _value, platform="CUDA")


def _rule(ctx, x):
    return mlir.custom_call(
        "k",
        operands=[x],
        result_types=[mlir.aval_to_ir_type(a) for a in ctx.avals_out],
    ).results


mlir.register_lowering(p, _rule, platform="cpu")
mlir.register_lowering(p, _rule, platform="cuda")
"""


@pytest.mark.once
def test_one_custom_call_for_cpu_and_gpu_keeps_its_targets_legacy(tmp_path):
    """A target with a CPU and a GPU kernel lowered by one rule registered
    for both platforms: one call cannot be both forms (the GPU one passes
    the opaque attribute, which the CPU handler does not bind), so the call
    and both kernels stay legacy, each said."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "cpu_ops.cc").write_text(BOTH_CPU)
    (tree / "pkg" / "gpu_ops.cc").write_text(BOTH_GPU)
    (tree / "pkg" / "ops.py").write_text(BOTH_PY)
    (tree / "CMakeLists.txt").write_text(
        "project(p LANGUAGES CXX)\nfind_package(pybind11 CONFIG REQUIRED)\n"
        'pybind11_add_module(cpu_ops "pkg/cpu_ops.cc")\n'
        'pybind11_add_module(gpu_ops "pkg/gpu_ops.cc")\n')
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert said[:2] == [
        "ccshim port: pkg/cpu_ops.cc:7: not ported: 'k': a lowering or registration of it "
        "stays legacy (said below): kept legacy with it",
        "ccshim port: pkg/gpu_ops.cc:8: not ported: 'k': a lowering or registration of it "
        "stays legacy (said below): kept legacy with it"], said
    assert "ccshim port: pkg/ops.py:13: not ported: one custom call lowers its targets for " \
           "CPU and GPU: kept legacy (a rule per platform is ported)" in said, said
    assert "XLA_FFI_DEFINE_HANDLER" not in done.stdout and "ffi_lowering" not in done.stdout


@pytest.mark.once
def test_a_cpu_kernel_declared_in_an_included_header_is_ported_beside_the_dict(tmp_path):
    """The dict's file sees the kernel's declaration, so it can take the
    handler's template argument as it took the kernel's address; a kernel
    it does not see is said."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "kernels.h").write_text("void seen(void* out, const void** in);\n")
    (tree / "pkg" / "kernels.cc").write_text(
        '#include "kernels.h"\nvoid seen(void* out, const void** in) {}\n'
        "void unseen(void* out, const void** in) {}\n")
    (tree / "pkg" / "ops.cc").write_text(
        '#include <pybind11/pybind11.h>\n#include "kernels.h"\n\n'
        "pybind11::dict Registrations() {\n  pybind11::dict dict;\n"
        '  dict["seen"] = EncapsulateFunction(seen);\n'
        '  dict["unseen"] = EncapsulateFunction(unseen);\n  return dict;\n}\n')
    (tree / "CMakeLists.txt").write_text(
        "project(p LANGUAGES CXX)\nfind_package(pybind11 CONFIG REQUIRED)\n"
        'pybind11_add_module(ops "pkg/ops.cc" "pkg/kernels.cc")\n')
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    assert '+  dict["seen"] = EncapsulateFunction(seen_ffi);' in done.stdout
    assert "+                       xla_legacy_call::CpuHandler<seen>," in done.stdout
    assert done.stderr.splitlines() == [
        "ccshim port: pkg/ops.cc:7: not ported: 'unseen': its kernel is defined in another "
        "file (pkg/kernels.cc:3), whose declaration the file with the dict does not include: "
        "not ported (include its header there)"]


@pytest.mark.once
def test_a_template_instance_kernel_gets_a_handler_of_its_own(tmp_path):
    """kepler_jax: `dict["cpu_kepler_f32"] = EncapsulateFunction(cpu_kepler<float>)`,
    one template's instances exported under two names, and its CMake target
    naming the source under ${CMAKE_CURRENT_LIST_DIR}."""
    tree = tmp_path / "tree"
    (tree / "lib").mkdir(parents=True)
    (tree / "lib" / "cpu_ops.cc").write_text(
        "#include <pybind11/pybind11.h>\n\nnamespace {\n"
        "template <typename T>\nvoid cpu_kepler(void *out_tuple, const void **in) {}\n\n"
        "pybind11::dict Registrations() {\n  pybind11::dict dict;\n"
        '  dict["cpu_kepler_f32"] = EncapsulateFunction(cpu_kepler<float>);\n'
        '  dict["cpu_kepler_f64"] = EncapsulateFunction(cpu_kepler<double>);\n'
        "  return dict;\n}\n"
        'PYBIND11_MODULE(cpu_ops, m) { m.def("registrations", &Registrations); }\n}\n')
    (tree / "CMakeLists.txt").write_text(
        "project(p LANGUAGES CXX)\nfind_package(pybind11 CONFIG REQUIRED)\n"
        "pybind11_add_module(cpu_ops ${CMAKE_CURRENT_LIST_DIR}/lib/cpu_ops.cc)\n")
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    for t, handler in (("float", "cpu_kepler_float_ffi"), ("double", "cpu_kepler_double_ffi")):
        assert f"+XLA_FFI_DEFINE_HANDLER({handler}," in done.stdout
        assert f"+                       xla_legacy_call::CpuHandler<cpu_kepler<{t}>>," \
            in done.stdout
    assert '+  dict["cpu_kepler_f32"] = EncapsulateFunction(cpu_kepler_float_ffi);' in done.stdout
    assert "+target_include_directories(cpu_ops SYSTEM PRIVATE ${XLA_DIR})" in done.stdout


@pytest.mark.once
def test_a_binding_fixes_the_counts_only_where_every_call_site_writes_them_out(tmp_path):
    """An Arg<AnyBuffer> per operand and a Ret<AnyBuffer> per result where
    every lowering of the target passes lists written out, of the same
    lengths, and no more than eight buffers; RemainingArgs and RemainingRets
    wherever else (_binding)."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    kernels = ("fixed", "two_counts", "run_time", "many")
    (tree / "pkg" / "cpu_ops.cc").write_text(
        "#include <pybind11/pybind11.h>\n\n" +
        "".join(f"void {k}(void* out, const void** in) {{}}\n" for k in kernels) +
        "\npybind11::dict Registrations() {\n  pybind11::dict dict;\n" +
        "".join(f'  dict["{k}"] = EncapsulateFunction({k});\n' for k in kernels) +
        '  return dict;\n}\nPYBIND11_MODULE(cpu_ops, m) { m.def("registrations", '
        "&Registrations); }\n")
    (tree / "CMakeLists.txt").write_text(
        "project(p LANGUAGES CXX)\nfind_package(pybind11 CONFIG REQUIRED)\n"
        'pybind11_add_module(cpu_ops "pkg/cpu_ops.cc")\n')

    def site(target, operands, results):
        return (f"    return mlir.custom_call({target!r}, operands={operands}, "
                f"result_types={results}).results\n")
    (tree / "pkg" / "ops.py").write_text(
        "from jax.interpreters import mlir\nfrom jax.lib import xla_client\n\n"
        "from pkg import cpu_ops\n\n"
        "for _name, _value in cpu_ops.registrations().items():\n"
        '    xla_client.register_custom_call_target(_name, _value, platform="cpu")\n\n\n'
        "def fixed(ctx, x, y):\n" + site("fixed", "[x, y]", "[t]") +
        "\n\ndef fixed_again(ctx, x, y):\n" + site("fixed", "(y, x)", "[t]") +
        "\n\ndef two_counts(ctx, x, y):\n" + site("two_counts", "[x, y]", "[t]") +
        "\n\ndef two_counts_one(ctx, x):\n" + site("two_counts", "[x]", "[t]") +
        "\n\ndef run_time(ctx, *xs):\n" +
        site("run_time", "[*xs]", "[mlir.aval_to_ir_type(a) for a in ctx.avals_out]") +
        "\n\ndef many(ctx, x):\n" + site("many", "[" + ", ".join(["x"] * 8) + "]", "[t]"))
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    handlers = {}
    for block in done.stdout.split("+XLA_FFI_DEFINE_HANDLER(")[1:]:
        lines = block.split(";")[0].splitlines()
        handlers[lines[0].rstrip(",")] = [ln.lstrip("+ ") for ln in lines[1:]]
    assert handlers["fixed_ffi"] == [
        "xla_legacy_call::CpuFixedHandler<fixed>,", "xla::ffi::Ffi::Bind()",
        ".Arg<xla::ffi::AnyBuffer>()", ".Arg<xla::ffi::AnyBuffer>()",
        ".Ret<xla::ffi::AnyBuffer>())"]
    assert "+// fixed, as a typed XLA FFI handler (2 operands and 1 result at every call\n" \
        "+// site).\n" in done.stdout
    generic = "xla::ffi::Ffi::Bind().RemainingArgs().RemainingRets())"
    for k in ("two_counts", "run_time", "many"):
        assert handlers[f"{k}_ffi"] == [f"xla_legacy_call::CpuHandler<{k}>,", generic]
    # A custom call whose target it cannot read, in a module that registers
    # nothing, may lower any target: then none is bound with fixed counts.
    (tree / "pkg" / "other.py").write_text(
        "from jax.interpreters import mlir\n\n\ndef custom_call(*args, **kwargs):\n"
        "    return mlir.custom_call(*args, **kwargs).results\n")
    done = _port(tree)
    assert done.returncode == 0, done.stderr
    assert "+                       xla_legacy_call::CpuHandler<fixed>," in done.stdout
    assert "xla_legacy_call::CpuFixedHandler<fixed>" not in done.stdout


VOID_KERNEL = r"""
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>

// A GPU kernel whose stream is a void* (sphericart-jax's form): it runs on
// the platform it is registered for.  As host code here, it records the
// stream it was given and copies its operand to its result.
static std::uint64_t seen_stream;
extern "C" std::uint64_t vext_seen_stream() { return seen_stream; }

void Echo(void* stream, void** buffers, const char* opaque, std::size_t opaque_len) {
  seen_stream = reinterpret_cast<std::uintptr_t>(stream);
  std::memcpy(buffers[1], buffers[0], opaque_len);
}

template <typename T>
pybind11::capsule EncapsulateFunction(T* fn) {
  return pybind11::capsule(reinterpret_cast<void*>(fn), "xla._CUSTOM_CALL_TARGET");
}

pybind11::dict Registrations() {
  pybind11::dict dict;
  dict["vext_echo"] = EncapsulateFunction(Echo);
  return dict;
}

PYBIND11_MODULE(vops, m) { m.def("registrations", &Registrations); }
"""

VOID_PYTHON = """\
from jax.interpreters import mlir
from jax.lib import xla_client

from vext import vops

for _name, _value in vops.registrations().items():
    xla_client.register_custom_call_target(_name, _value, platform="{platform}")


def _lowering(ctx, x):
    return mlir.custom_call("vext_echo", operands=[x], result_types=[x.type],
                            backend_config=b"\\\\x00" * 16, api_version=2).results
"""


def _void_tree(tmp_path: pathlib.Path, platform: str) -> pathlib.Path:
    tree = tmp_path / f"vext-{platform}"
    (tree / "src" / "vext").mkdir(parents=True)
    (tree / "src" / "vext" / "vops.cc").write_text(VOID_KERNEL)
    (tree / "src" / "vext" / "__init__.py").write_text(VOID_PYTHON.format(platform=platform))
    (tree / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.15)\nproject(vext LANGUAGES CXX)\n"
        "find_package(pybind11 CONFIG REQUIRED)\n"
        'pybind11_add_module(vops "src/vext/vops.cc")\n')
    return tree


@pytest.mark.once("newest")
def test_a_void_stream_kernel_runs_on_the_platform_it_is_registered_for(tmp_path):
    """sphericart-jax's CUDA kernels take their stream as a void*: ported
    where the Python registers their module for "gpu" (CUDA), bound to the
    platform's stream as a void* (PlatformStream<void*>), and run by ccshim's
    embedded runtime in a "cuda" context with the stream Stream_Get gives;
    where it registers them for another platform (SYCL), refused, saying
    so."""
    sycl = _port(_void_tree(tmp_path, "SYCL"))
    assert sycl.returncode == 0 and "PlatformStream" not in sycl.stdout
    assert "'vext_echo': Echo (src/vext/vops.cc:13) is a GPU kernel whose stream is a void*, " \
        "and its module vops is registered for sycl (its Python's loop over it), not CUDA or " \
        "ROCm alone: not ported" in sycl.stderr, sycl.stderr
    tree = _void_tree(tmp_path, "gpu")
    done = _port(tree, "--apply")
    assert done.returncode == 0 and "not ported" not in done.stderr, done.stderr
    src = tree / "src" / "vext"
    source = (src / "vops.cc").read_text()
    assert ".Ctx<xla::ffi::PlatformStream<void*>>()" in source, source
    assert 'platform="gpu")' in (src / "__init__.py").read_text()
    assert _port(tree).stdout == ""
    from ccshim import runtime
    vops, module = _pybind11_module(tmp_path, "vops", [src / "vops.cc"], src)
    handler = _capsule_address(vops.registrations()["vext_echo"])
    seen = ctypes.CDLL(str(module)).vext_seen_stream
    seen.restype = ctypes.c_uint64
    stream_of = _context_stream()
    context = runtime.Context(platform="cuda")
    x = np.arange(4, dtype=np.float32)
    (out,) = runtime.call(handler, [x], [jax.ShapeDtypeStruct((4,), np.float32)],
                          {"opaque": np.zeros(16, np.uint8)}, context=context)
    np.testing.assert_array_equal(out, x)
    assert seen() == stream_of(context._ptr) != 0
    context.close()
