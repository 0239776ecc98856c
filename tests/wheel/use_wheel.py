"""Runs in a fresh venv where ccshim was installed by pip, outside the source
tree, with no CCSHIM_* variable and no build folder: the user's first steps.

    use_wheel.py REPO_ROOT

1. import ccshim finds the library inside the installed package;
2. a legacy kernel source (examples/legacy/add_cpu.cc, which includes XLA's
   legacy headers) compiles against ccshim.include_dirs();
3. the README's JAX lines run as printed, on that library, and give the
   kernel's result;
4. the `ccshim` console script runs, and its subcommands that need Python
   (rewrite, conform --reference xla) run in this one;
5. find_package(ccshim) with ccshim.cmake_dir() builds and runs a consumer.
"""
import os
import pathlib
import re
import subprocess
import sys
import sysconfig

root = pathlib.Path(sys.argv[1]).resolve()
work = pathlib.Path.cwd()
site = pathlib.Path(sysconfig.get_paths()["platlib"]).resolve()

import ccshim  # noqa: E402

package = pathlib.Path(ccshim.__file__).resolve().parent
assert package.parent == site, f"ccshim imported from {package}, not from {site}"
assert pathlib.Path(ccshim.library_path()).resolve() == package / "lib" / "libccshim.so", \
    ccshim.library_path()
inc = pathlib.Path(ccshim.include_dir())
assert (inc / "ccshim" / "ccshim.h").is_file() and (inc / "ccshim" / "xla_ffi.h").is_file()
assert (inc / "ccshim" / "compat" / "xla" / "service" / "custom_call_status.h").is_file()
assert (pathlib.Path(ccshim.cmake_dir()) / "ccshimConfig.cmake").is_file()
print(f"1. ccshim {ccshim.version()} from {package}")

flags = [f"-I{d}" for d in ccshim.include_dirs()]
subprocess.run(["c++", "-std=c++17", "-O2", "-shared", "-fPIC", *flags,
                str(root / "examples" / "legacy" / "add_cpu.cc"), "-o",
                str(work / "libmy_kernels.so")], check=True)
print("2. a legacy kernel compiled against ccshim.include_dirs()")

readme = (root / "README.md").read_text()
block = re.search(r"### 1\. A call site.*?```python\n(.*?)```", readme, re.S).group(1)
import numpy as np  # noqa: E402

b = np.arange(128, dtype=np.float32)
c = np.linspace(-1, 1, 2048, dtype=np.float32)
scope = {"b": b, "c": c}
exec(compile(block, "README.md (A call site)", "exec"), scope)
y = np.asarray(scope["y"])
want = b[np.arange(2048) % 128] + c
assert np.array_equal(y, want), "the README's JAX lines gave a wrong result"
print("3. the README's JAX lines ran: y == b[i % 128] + c[i]")

script = pathlib.Path(sys.executable).parent / "ccshim"
out = subprocess.run([str(script), "version"], capture_output=True, text=True, check=True)
assert out.stdout.strip() == f"ccshim {ccshim.version()}", out.stdout
subprocess.run([str(script), "scan", "--help"], capture_output=True, check=True)
# rewrite runs in this Python, without the C command; conform with XLA as
# the reference starts this Python for its legacy side.
out = subprocess.run([str(script), "rewrite", "--help"], capture_output=True, text=True,
                     check=True)
assert "ccshim rewrite IN OUT" in out.stdout, out.stdout
out = subprocess.run([str(script), "conform", str(work / "libmy_kernels.so"), "add_v2", "--api",
                      "2", "--signature", "(f32[128], f32[2048]) -> f32[2048]", "--reference",
                      "xla", "--runs", "2"], capture_output=True, text=True)
assert out.returncode == 0 and "reference: XLA's legacy custom-call path" in out.stdout, (
    out.stdout + out.stderr)
# ccshim legacy: zero-change mode in a Python it starts, from the wheel's
# own boot folder, strict, with the restored plumbing.
probe = ("import jax, ccshim.legacy as cl; from jax.lib import xla_client; "
         "print(cl.enabled(), cl._state['strict'], callable(xla_client.register_custom_call_target))")
out = subprocess.run([str(script), "legacy", "--strict", "--", sys.executable, "-c", probe],
                     capture_output=True, text=True)
assert out.returncode == 0 and out.stdout.split() == ["True", "True", "True"], (
    out.stdout + out.stderr)
print(f"4. the console script: ccshim {ccshim.version()}; rewrite runs in this Python, "
      "conform --reference xla starts it for its legacy side; ccshim legacy --strict enables "
      "zero-change mode in the Python it starts")

build = work / "consumer"
subprocess.run(["cmake", "-S", str(root / "tests" / "consumer"), "-B", str(build),
                f"-Dccshim_DIR={ccshim.cmake_dir()}"], check=True, capture_output=True)
subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
subprocess.run([str(build / "consumer")], check=True)
print("5. find_package(ccshim) through ccshim.cmake_dir(): built and ran")
