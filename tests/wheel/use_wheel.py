"""Runs in a fresh venv where ccshim was installed by pip (from the tree by
tests/wheel/test_wheel.sh, or the portable wheel by test_portable.sh),
outside the source tree, with no CCSHIM_* variable and no build folder: the
user's first steps.

    use_wheel.py REPO_ROOT [STEP...]       (default: every step)

where      import ccshim finds the library inside the installed package;
compile    a legacy kernel source (examples/legacy/add_cpu.cc, which includes
           XLA's legacy headers) compiles against ccshim.include_dirs();
readme     the README's call-site block runs as printed, on that library, and
           gives the kernel's result;
closure    a kernel wrapped with a libffi closure as its entry runs in the
           embedded runtime (the libffi the library carries, or links);
command    the `ccshim` console script runs the C command (version, scan,
           conform) and `rewrite` in this Python;
xla        conform --reference xla starts this Python for XLA's legacy side;
legacy     a small legacy extension's own tests (tests/wheel/legacy_ext)
           pass unchanged under `ccshim legacy --strict -- python -m pytest`,
           its kernel run through ccshim (--report);
rewrite    `ccshim rewrite`, from the console script, makes a program
           exported with a legacy call typed, and ccshim.export runs it;
consumer   find_package(ccshim) with ccshim.cmake_dir() builds and runs a
           consumer.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import time

import numpy as np

STEPS = ["where", "compile", "readme", "closure", "command", "xla", "legacy", "rewrite",
         "consumer"]
SIGNATURE = "(f32[128], f32[2048]) -> f32[2048]"
root = pathlib.Path(sys.argv[1]).resolve()
steps = sys.argv[2:] or STEPS
unknown = [s for s in steps if s not in STEPS]
if unknown:
    sys.exit(f"use_wheel.py: unknown step(s) {unknown}; expected some of {STEPS}")
work = pathlib.Path.cwd()
site = pathlib.Path(sysconfig.get_paths()["platlib"]).resolve()
script = pathlib.Path(sys.executable).parent / "ccshim"
B = np.arange(128, dtype=np.float32)
C = np.linspace(-1, 1, 2048, dtype=np.float32)
WANT = B[np.arange(2048) % 128] + C

import ccshim  # noqa: E402

KERNELS = work / "libmy_kernels.so"  # examples/legacy/add_cpu.cc, compiled here
INCLUDE_FLAGS = [f"-I{d}" for d in ccshim.include_dirs()]


def run(cmd, **kw):
    """cmd's CompletedProcess (text); a failure shows both streams."""
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert out.returncode == 0, (f"{' '.join(map(str, cmd))} exited {out.returncode}:\n"
                                 + out.stdout[-3000:] + out.stderr[-3000:])
    return out


def step_where():
    package = pathlib.Path(ccshim.__file__).resolve().parent
    assert package.parent == site, f"ccshim imported from {package}, not from {site}"
    lib = pathlib.Path(ccshim.library_path()).resolve()
    assert lib == package / "lib" / "libccshim.so", ccshim.library_path()
    inc = pathlib.Path(ccshim.include_dir())
    assert (inc / "ccshim" / "ccshim.h").is_file() and (inc / "ccshim" / "xla_ffi.h").is_file()
    assert (inc / "ccshim" / "compat" / "xla" / "service" / "custom_call_status.h").is_file()
    assert (pathlib.Path(ccshim.cmake_dir()) / "ccshimConfig.cmake").is_file()
    return f"ccshim {ccshim.version()} from {package}"


def step_compile():
    run(["c++", "-std=c++17", "-O2", "-shared", "-fPIC", *INCLUDE_FLAGS,
         root / "examples" / "legacy" / "add_cpu.cc", "-o", KERNELS])
    return "a legacy kernel compiled against ccshim.include_dirs()"


def kernels_so() -> pathlib.Path:
    """KERNELS, compiled first by a step that needs it when compile has not run."""
    if not KERNELS.exists():
        step_compile()
    return KERNELS


def step_readme():
    kernels_so()
    readme = (root / "README.md").read_text()
    block = re.search(r"### 1\. A call site.*?```python\n(.*?)```", readme, re.S).group(1)
    scope = {"b": B, "c": C}
    exec(compile(block, "README.md (A call site)", "exec"), scope)
    assert np.array_equal(np.asarray(scope["y"]), WANT), "the README's JAX lines gave a wrong result"
    return "the README's JAX lines ran as printed: y == b[i % 128] + c[i]"


def step_closure():
    """add_v2 wrapped with CCSHIM_ENTRY_CLOSURE (ccshim.h), run in the
    embedded runtime: libffi's closure code, wherever the library got it."""
    import ctypes

    from ccshim import _native, runtime
    kernels = ccshim.load_legacy_library(str(kernels_so()))
    opts = _native.WrapOptions()
    opts.entry = 2  # CCSHIM_ENTRY_CLOSURE
    adapter = ctypes.c_void_p()
    cpu = ctypes.c_int()
    assert _native.lib.ccshim_platform_parse(b"cpu", ctypes.byref(cpu)) == 0
    status = _native.lib.ccshim_wrap(ctypes.cast(kernels.add_v2, ctypes.c_void_p), 2, cpu.value,
                                     SIGNATURE.encode(), ctypes.byref(opts),
                                     ctypes.byref(adapter))
    assert status == 0, f"ccshim_wrap: {_native.status_name(status)}: {_native.last_error()}"
    try:
        assert _native.lib.ccshim_adapter_entry(adapter) == 2, "the adapter is not a closure"
        handler = _native.lib.ccshim_adapter_handler(adapter)
        y = runtime.call(handler, [B, C], np.zeros(2048, np.float32))
        assert np.array_equal(np.asarray(y), WANT), "the closure adapter gave a wrong result"
    finally:
        _native.lib.ccshim_adapter_free(adapter)
    return "a libffi closure adapter ran add_v2 in the embedded runtime"


def step_command():
    out = run([script, "version"])
    assert out.stdout.strip() == f"ccshim {ccshim.version()}", out.stdout
    run([script, "scan", "--help"])
    # scan reads a .py file with libcst, and a .pyx with Cython's parser, in
    # this Python (both dependencies of ccshim).
    tree = pathlib.Path(os.getcwd(), "scan-tree")
    tree.mkdir(exist_ok=True)
    (tree / "ops.py").write_text(
        "from jax.lib import xla_client\n"
        "xla_client.register_custom_call_target('my_add', ext.add(), platform='cpu')\n")
    (tree / "k.pyx").write_text(
        "from cpython.pycapsule cimport PyCapsule_New\n"
        "targets = {}\n"
        "cdef put(name, void* fn):\n"
        "    targets[name] = PyCapsule_New(fn, 'xla._CUSTOM_CALL_TARGET', NULL)\n"
        "cdef void my_kernel(void* out, const void** ins) nogil:\n"
        "    pass\n"
        "put('my_pyx', <void*>(my_kernel))\n")
    out = run([script, "scan", str(tree)])
    assert "\nmy_add  cpu" in out.stdout and "ops.py:2" in out.stdout, out.stdout
    assert out.stdout.startswith("my_pyx  cpu v1  ") and "defined    " in out.stdout and \
        "k.pyx:5 (CPU v1 parameters)" in out.stdout, out.stdout
    # rewrite runs in this Python, without the C command.
    out = run([script, "rewrite", "--help"])
    assert "ccshim rewrite IN OUT" in out.stdout, out.stdout
    out = run([script, "conform", kernels_so(), "add_v2", "--api", "2",
               "--signature", SIGNATURE, "--runs", "2"])
    assert "1 of 1 targets equal" in out.stdout, out.stdout
    return (f"the console script: ccshim {ccshim.version()}; scan reads a .py and a .pyx file "
            "and rewrite runs in this Python; the C command's conform runs add_v2 through its "
            "legacy invoker and an adapter")


def step_xla():
    """conform with XLA as the reference: the command starts this Python for
    the legacy side (docs/contracts.md)."""
    out = run([script, "conform", kernels_so(), "add_v2", "--api", "2",
               "--signature", SIGNATURE, "--reference", "xla", "--runs", "2"])
    assert "reference: XLA's legacy custom-call path" in out.stdout, out.stdout
    return "conform --reference xla started this Python for XLA's legacy side"


def step_legacy():
    ext = work / "legacy_ext"
    shutil.rmtree(ext, ignore_errors=True)
    shutil.copytree(root / "tests" / "wheel" / "legacy_ext", ext)
    run(["cc", "-std=c11", "-O2", "-shared", "-fPIC", *INCLUDE_FLAGS, ext / "my_legacy_ext" / "kernels.c",
         "-o", ext / "my_legacy_ext" / "libmy_legacy_kernels.so"])
    report = work / "legacy-report.tsv"
    report.unlink(missing_ok=True)
    # `python` is this venv's, as it is for a user whose venv is active.
    env = {**os.environ, "PATH": f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = run([script, "legacy", "--strict", "--report", report, "--", "python", "-m", "pytest",
               "-q", "-p", "no:cacheprovider", "test_my_legacy_ext.py"], cwd=ext, env=env)
    assert re.search(r"\b3 passed\b", out.stdout), out.stdout
    rows = [line.split("\t") for line in report.read_text().splitlines()]
    assert any(r[3] == "my_affine" and r[4] == "2" for r in rows), rows
    return ("a legacy extension's own tests: 3 passed under ccshim legacy --strict, "
            "its kernel my_affine (api_version 2) through ccshim")


def step_rewrite():
    import jax
    from jax import export

    import ccshim.export as ce
    f32 = jax.ShapeDtypeStruct
    call = jax.ffi.ffi_call("my_add", f32((2048,), np.float32), custom_call_api_version=2)
    exported = export.export(jax.jit(call), disabled_checks=[
        export.DisabledSafetyCheck.custom_call("my_add")])(
        f32((128,), np.float32), f32((2048,), np.float32))
    legacy, typed = work / "legacy.jax", work / "typed.jax"
    legacy.write_bytes(exported.serialize())
    typed.unlink(missing_ok=True)
    run([script, "rewrite", legacy, typed])
    calls = [(c.kind, c.legacy_target) for c in ce.read(typed).calls()]
    assert calls == [("ccshim", "my_add")], calls
    kernels = ccshim.load_legacy_library(str(kernels_so()))
    ce.register(typed, {"my_add": (kernels, "add_v2")})
    y = ce.load(typed).call(B, C)
    assert np.array_equal(np.asarray(y), WANT), "the rewritten program gave a wrong result"
    return "ccshim rewrite made an exported legacy call typed; ccshim.export ran it"


def step_consumer():
    build = work / "consumer"
    run(["cmake", "-S", root / "tests" / "consumer", "-B", build,
         f"-Dccshim_DIR={ccshim.cmake_dir()}"])
    run(["cmake", "--build", build])
    run([build / "consumer"])
    return "find_package(ccshim) through ccshim.cmake_dir(): built and ran"


for number, name in enumerate(steps, 1):
    start = time.monotonic()
    said = globals()["step_" + name]()
    print(f"{number}. {name} ({time.monotonic() - start:.1f} s): {said}", flush=True)
