"""`ccshim port` of legacy GPU kernels (docs/port.md, GPU): no GPU is needed.

- The opaque bytes: the lowering the port writes for a GPU call site
  (ffi_lowering(...)(ctx, *ops, opaque=np.frombuffer(OPAQUE, dtype=np.uint8)))
  delivers them, in real XLA on the CPU, byte for byte (empty, NULs, "{}")
  to a typed handler running xla_legacy_call.h's GPU convention, with the
  buffer table operands then results.
- The handler and its stream: GpuHandler / GpuStatusHandler around a host
  kernel that takes a cudaStream_t, run by ccshim's embedded runtime in a
  "cuda" context: the stream, the table (a token's entry NULL), the bytes,
  and a status failure as INTERNAL "CustomCall failed: <message>".
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


def test_the_opaque_bytes_arrive_as_they_were_through_real_xla(tmp_path):
    lib = _compile(tmp_path, HERE / "opaque_echo.cc", "echo.so")
    done = subprocess.run([sys.executable, str(HERE / "opaque_program.py"), str(lib)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["jax"] == jax.__version__
    for sent, seen in zip(report["cases"], report["seen"]):
        assert seen["bytes"] == sent and seen["len"] == len(sent) // 2
        # operands 0 and 1, then results 0 and 1: one table, in that order
        assert seen["buffers"] == [0, 1, 100, 101]


def test_gpu_handlers_run_with_their_stream_in_the_embedded_runtime(tmp_path):
    if not (CUDA_INCLUDE / "cuda_runtime_api.h").exists():
        pytest.skip(f"no cuda_runtime_api.h in {CUDA_INCLUDE} (the CUDA toolkit's headers)")
    from ccshim import runtime
    lib = ctypes.CDLL(str(_compile(tmp_path, HERE / "host_kernel.cc", "host.so",
                                   CUDA_INCLUDE)))
    scale = ctypes.cast(lib.host_scale_ffi, ctypes.c_void_p).value
    fail = ctypes.cast(lib.host_fail_ffi, ctypes.c_void_p).value
    x = np.arange(4, dtype=np.float32)
    out, seen = np.zeros(4, np.float32), np.zeros(6, np.uint64)
    opaque = np.frombuffer(np.float32(2.5).tobytes(), np.uint8)
    token = (17, None, ())   # XLA_FFI_DataType_TOKEN, no data (as XLA gives a token)
    context = runtime.Context(platform="cuda")
    runtime.invoke_at(scale, [runtime._at(x), token], [runtime._at(out), runtime._at(seen)],
                      {"opaque": opaque}, context=context)
    np.testing.assert_array_equal(out, x * 2.5)
    stream_of = ctypes.CDLL(runtime.lib._name).ccshim_context_stream   # its own prototype
    stream_of.restype, stream_of.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    assert seen[0] == stream_of(context._ptr) != 0     # the stream Stream_Get gave
    assert seen[1] == 4
    assert list(seen[2:]) == [x.ctypes.data, 0, out.ctypes.data, seen.ctypes.data]
    with pytest.raises(runtime.HandlerError) as failed:
        runtime.call(fail, [x], jax.ShapeDtypeStruct((4,), np.float32),
                     {"opaque": np.frombuffer(b"it broke", np.uint8)}, context=context)
    assert (failed.value.code, failed.value.message) == ("INTERNAL",
                                                         "CustomCall failed: it broke")


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
