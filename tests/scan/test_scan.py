"""`ccshim scan` on the fixture codebase (tests/scan/fixture): what it must
find, what it must not, and its answers to bad input.  Standard library
only; run by ctest:

    test_scan.py CCSHIM FIXTURE_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types

CCSHIM, FIXTURE = (os.path.abspath(a) for a in sys.argv[1:3])
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def scan(*args):
    p = subprocess.run([CCSHIM, "scan", *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


# The fixture's .py files are read by ccshim.scan (libcst) in the command's
# Python: a build configured without one that has it (CCSHIM_PYTHON_DEFAULT)
# cannot run this test.
rc, out, err = scan(os.path.join(FIXTURE, "python", "ops.py"))
if "a Python file, not read" in err:
    print(f"SKIPPED: the command's Python cannot read .py files: {err.strip()}")
    sys.exit(77)

rc, out, err = scan(FIXTURE, "--json")
check(rc == 0 and err == "", f"scan --json: rc={rc} stderr={err!r}")
report = json.loads(out)
# A name registered by a CPU and a GPU module has a target per platform:
# the second under NAME@PLATFORM.
targets = {}
for t in report["targets"]:
    targets[t["name"] if t["name"] not in targets else f"{t['name']}@{t['platform']}"] = t

# --- What it finds ------------------------------------------------------------
expected = {
    # name: (platform, api_version, where the version comes from, anchor file:line)
    "cpu_add_v1": ("cpu", 1, "call site python/ops.py:25", "csrc/cpu_kernels.cc:17"),
    "scale_status": ("cpu", 2, "definition's parameters (CPU v2)", "csrc/cpu_kernels.cc:25"),
    "describe": ("cpu", 3, "definition's parameters (CPU v3)", "csrc/cpu_kernels.cc:36"),
    "mismatched": ("cpu", 3, "call site python/ops.py:44", "csrc/cpu_kernels.cc:48"),
    "lapack_sgetrf": ("cpu", 2, "definition's parameters (CPU v2)", "csrc/lapack_ext.cc:20"),
    # Defined out of class as Potrf<T>::Kernel, registered as Potrf<float>::Kernel.
    "lapack_spotrf": ("cpu", 2, "definition's parameters (CPU v2)", "csrc/solver_ext.cc:35"),
    "lapack_dpotrf": ("cpu", 2, "definition's parameters (CPU v2)", "csrc/solver_ext.cc:36"),
    # A function template registered by a snake_case helper, template arguments whole.
    "lapack_sgesv": ("cpu", 1, "definition's parameters (CPU v1)", "csrc/solver_ext.cc:38"),
    # The same name in the GPU module's registrations(), which python/solver.py
    # registers with platform="gpu": its own target, with the GPU definition.
    "lapack_sgesv@gpu": ("gpu", 1, "definition's parameters (GPU v1)",
                         "gpu/solver_gpu_ext.cu:22"),
    "blas_strsm": ("cpu", 1, "definition's parameters (CPU v1)", "cython/blas.pyx:15"),
    "gpu_axpy_v1": ("cuda", 1, "definition's parameters (GPU v1)", "gpu/kernels.cu:20"),
    "gpu_norm": ("cuda", 3, "call site python/ops.py:48", "gpu/kernels.cu:30"),
    "rocm_fill": ("rocm", 2, "GPU v2/v3", "gpu/rocm_kernels.hip:15"),
    "old_cpu": ("cpu", 2, "call site python/old_client.py:12", "python/old_client.py:8"),
    "py_capsule_v2": ("cpu", 0, "unknown", "python/ops.py:14"),
    "legacy_zero": ("cpu", 0, "unknown", "python/ops.py:16"),
    # mpi4jax's shape: void** outs, a capsule helper filling the module's
    # dict, a loop registering each module's dict for its platform; the call
    # site's default api_version (2) over the definition's v1 parameters.
    "allreduce": ("cpu", 2, "the default of custom_call at python/collective.py:16",
                  "cython/collective_cpu.pyx:21"),
    "barrier": ("cpu", 2, "the default of custom_call at python/collective.py:20",
                "cython/collective_cpu.pyx:22"),
    "allreduce@sycl": ("sycl", 2, "the default of custom_call at python/collective.py:16",
                       "cython/collective_xpu.pyx:17"),
    # veros's shape: a cdef helper named like xla_client's registration that
    # only fills the module's dict, and a Python loop over literal names
    # registering each entry for CUDA.
    "tridiag_f32": ("cuda", 2, "the default of custom_call at python/tridiag.py:19",
                    "cython/tridiag_gpu.pyx:19"),
    "tridiag_f64": ("cuda", 2, "the default of custom_call at python/tridiag.py:19",
                    "cython/tridiag_gpu.pyx:20"),
    # celerite2's shape: auto (and -> void) definitions, pybind11 module
    # functions returning capsules, names passed into a builder function.
    "gp_factor": ("cpu", 2, "the default of custom_call at python/gp_ops.py:10",
                  "python/gp_ops.py:14"),
    "gp_factor_rev": ("cpu", 2, "the default of custom_call at python/gp_ops.py:10",
                      "python/gp_ops.py:19"),
    "gp_solve": ("cpu", 2, "the default of custom_call at python/gp_ops.py:10",
                 "python/gp_ops.py:14"),
}
for name, (platform, version, how, where) in expected.items():
    t = targets.get(name)
    check(t is not None, f"{name} not found")
    if t is None:
        continue
    check(t["platform"] == platform, f"{name}: platform {t['platform']}, expected {platform}")
    check(t["api_version"] == version, f"{name}: version {t['api_version']}, expected {version}")
    check(how in t["api_version_from"], f"{name}: version from {t['api_version_from']!r}")
    check(f"{t['file']}:{t['line']}" == where, f"{name}: at {t['file']}:{t['line']}, not {where}")
    if platform != "sycl":
        check(t["wrap"].startswith(f'ccshim.jax.register_legacy("{name.split("@")[0]}", '),
              f"{name}: {t['wrap']}")

computed = [t for t in report["targets"] if "(" not in t["name"] and t["name"] not in targets
            or t["name"] in ("_name", "target", "name")]
# (no kernel_name: veros's loop over literal names; no fn_name: the body of
# blas.pyx's helper named as the registration it wraps, whose calls are)
check({t["name"] for t in computed} == {"_name", "target", "name"},
      f"computed names: {[t['name'] for t in computed]}")
check(targets["kname"]["wrap"] == 'ccshim.jax.register_legacy(collective_cpu.custom_call_targets, '
      'platform="cpu", api_version=<1, 2 or 3>)', targets["kname"]["wrap"])
check(targets["kname@sycl"]["wrap"].startswith("# not wrapped: ccshim has no SYCL platform"),
      targets["kname@sycl"]["wrap"])
check(targets["_name"]["wrap"].startswith("ccshim.jax.register_legacy(_ext.registrations(), "),
      targets["_name"]["wrap"])
# A loop over an extension's registrations(): the whole mapping in one line.
check(targets["target"]["wrap"] == 'ccshim.jax.register_legacy(_solver.registrations(), '
      'platform="cpu", api_version=<1, 2 or 3>)', targets["target"]["wrap"])
check("registers every entry of _solver.registrations()" in targets["target"]["note"],
      targets["target"]["note"])
check(targets["name"]["wrap"] == 'ccshim.jax.register_legacy(_solver_gpu.registrations(), '
      'platform="gpu", api_version=<1, 2 or 3>)', targets["name"]["wrap"])
t = targets["lapack_sgesv@gpu"]
check(t["wrap"] == 'ccshim.jax.register_legacy("lapack_sgesv", '
      '_solver_gpu.registrations()["lapack_sgesv"], platform="gpu", api_version=1)', t["wrap"])
check("(ccshim_legacy_fn)gesv, 1, CCSHIM_PLATFORM_CUDA" in t["wrap_c"], t["wrap_c"])
check(t["definition"]["file"] == "gpu/solver_gpu_ext.cu" and t["form"] == "GPU v1", t)
check("also in" not in targets["lapack_sgesv"]["note"], targets["lapack_sgesv"]["note"])
check(len(report["targets"]) == len(expected) + 8, f"{len(report['targets'])} targets")
# Offered by a module function, registered outside the tree, with CPU v3's
# parameters (GPU v2/v3's with a void* stream): the platform is not guessed.
t = targets["_record_event_capsule"]
check(t["platform"] == "unknown" and "the platform it is registered for says which" in t["note"]
      and t["wrap"].startswith('ccshim.jax.register_legacy("_record_event_capsule", '
                               "gp_xla_ops._record_event_capsule(), "), t)

# --- The shapes of real projects (issue 21) ----------------------------------------
for name, kernel, fn, form in [
        ("allreduce", 'collective_cpu.custom_call_targets["allreduce"]', "allreduce_cpu", "CPU v1"),
        ("barrier", 'collective_cpu.custom_call_targets["barrier"]', "barrier_cpu", "CPU v1"),
        ("gp_factor", "gp_xla_ops.factor()", "gp_factor", "CPU v1"),
        ("gp_factor_rev", "gp_xla_ops.factor_rev()", "gp_factor_rev", "CPU v1"),
        ("gp_solve", "gp_xla_ops.solve()", "gp_solve", "CPU v1")]:
    t = targets[name]
    check(t["wrap"] == f'ccshim.jax.register_legacy("{name}", {kernel}, platform="cpu", '
          'api_version=2)', t["wrap"])
    check(t["definition"]["function"] == fn and t["form"] == form, f"{name}: {t['definition']}")
    check("XLA calls by the call's version" in t["api_version_from"], t["api_version_from"])
    check("wrap it with api_version=2, as the call says" in t["note"], t["note"])
for name, fn, line in [("tridiag_f32", "TridiagF32", 11), ("tridiag_f64", "TridiagF64", 16)]:
    t = targets[name]
    check(t["wrap"] == f'ccshim.jax.register_legacy("{name}", '
          f'tridiag_gpu.gpu_custom_call_targets["{name}"], platform="cuda", api_version=2)',
          t["wrap"])
    check(t["definition"]["function"] == fn and t["definition"]["line"] == line and
          t["form"] == "GPU v1", f"{name}: {t['definition']}")
    check('named by the loop `for kernel_name in ("tridiag_f32", "tridiag_f64")` at '
          "python/tridiag.py:9" in t["note"] and "registered for" not in t["note"], t["note"])
    check(sorted(r["via"] for r in t["registrations"]) ==
          ["register_custom_call_target", "register_ffi_target"], t["registrations"])
t = targets["allreduce@sycl"]
check(t["definition"]["function"] == "allreduce_xpu" and t["form"] == "GPU v1", t)
check(t["wrap"].startswith("# not wrapped") and "SYCL (Intel XPU) kernel" in t["note"], t)
check('named by _build_op("gp_factor")' in targets["gp_factor_rev"]["note"],
      targets["gp_factor_rev"]["note"])
# No _rev for gp_solve: its spec says so at run time, and the module has no solve_rev().
for name in ("gp_solve_rev", "{{mod.name}}", "factor", "solve", "allreduce_cpu", "Kernel",
             "xla", "Syevd::Kernel", "BasisFunc::xla"):
    check(name not in targets, f"{name} must not be a target")
check([(c["name"], c["file"], c["line"]) for c in report["candidates"]] ==
      [("Syevd::Kernel", "csrc/templates_only.cc", 5),
       ("BasisFunc::xla", "csrc/templates_only.cc", 8)], report["candidates"])

# --- A capsule registered per object, under a name built from id() (issue 31) -----
for name, pattern, kernel, line, call_line in [
        ("self.target", "instance_filter_<id>", "self.compiled.capsule()", 14, 18),
        ('f"instance_smooth_{id(self)}"', "instance_smooth_<id>", "self.kernel.capsule()", 26,
         30)]:
    t = targets[name]
    check(t["name_pattern"] == pattern, f"{name}: pattern {t['name_pattern']}")
    check(t["definition"] and t["definition"]["function"] == "instance_filter" and
          t["form"] == "CPU v1", f"{name}: {t['definition']}")
    check((t["file"], t["line"]) == ("python/instance_ops.py", line), t)
    check([c["line"] for c in t["call_sites"]] == [call_line], t["call_sites"])
    check(t["wrap"] == f'ccshim.jax.register_legacy({name}, {kernel}, platform="cpu", '
          'api_version=2)', t["wrap"])
    check("registered once per object, under a name built from id()" in t["note"], t["note"])
    # The wrap line, where the registration was, registers every instance
    # under its own name with its own capsule.
    got, alive = [], []  # alive: two objects at once, so their ids differ
    stub = types.SimpleNamespace(jax=types.SimpleNamespace(
        register_legacy=lambda n, k, **kw: got.append((n, k, kw))))
    for order in (1, 2):
        self = types.SimpleNamespace(compiled=types.SimpleNamespace(capsule=lambda o=order: o),
                                     kernel=types.SimpleNamespace(capsule=lambda o=order: o))
        self.target = "instance_filter_" + str(id(self))
        alive.append(self)
        exec(t["wrap"], {"ccshim": stub, "self": self})
    prefix = pattern[:-len("<id>")]
    check(len({n for n, _, _ in got}) == 2 and all(n.startswith(prefix) for n, _, _ in got)
          and [k for _, k, _ in got] == [1, 2], f"{name}: {got}")
check(all(c["name"] != "instance_filter" for c in report["candidates"]), report["candidates"])

# --- What it must not find: comments, strings, docstrings, macro bodies, notes,
# and typed handlers (counted apart) ---------------------------------------------
for name in ("commented", "commented_out", "in_a_string", "doc_only", "md_only", "fn",
             "add_one_typed", "typed_one", "AddOne", "axpy_kernel"):
    check(name not in targets, f"{name} must not be a legacy target")
typed = sorted(t["name"] for t in report["typed"])
check(typed == ["AddOne", "add_one_typed", "add_one_typed", "lapack_spotrf_ffi", "typed_one"],
      f"typed: {typed}")

# --- Details per target ---------------------------------------------------------
t = targets["cpu_add_v1"]
check(t["definition"]["line"] == 12 and t["form"] == "CPU v1", f"cpu_add_v1 definition: {t}")
check(t["registrations"][0]["via"] == "XLA_CPU_REGISTER_CUSTOM_CALL_TARGET", t["registrations"])
check(t["call_site_change"] == 'ccshim.jax.legacy_call("cpu_add_v1", result_shape_dtypes)'
      "(*operands)", t["call_site_change"])
t = targets["scale_status"]
check('"scale_v2"' in t["wrap"] and t["call_sites"][0]["api_version_is_default"],
      f"scale_status: {t}")
check("opaque=descriptor" in t["call_site_change"], t["call_site_change"])
check("C++ linkage" in targets["describe"]["note"], targets["describe"]["note"])
check("reinterpret_cast" not in targets["describe"]["wrap_c"], targets["describe"]["wrap_c"])
check("wrong arguments" in targets["mismatched"]["note"], targets["mismatched"]["note"])
t = targets["lapack_sgetrf"]
check('registrations()["lapack_sgetrf"]' in t["wrap"], t["wrap"])
check("(ccshim_legacy_fn)Getrf<float>::Kernel, 2," in t["wrap_c"], t["wrap_c"])
t = targets["lapack_spotrf"]
check(t["definition"]["line"] == 17 and t["form"] == "CPU v2", f"lapack_spotrf definition: {t}")
check(t["wrap"] == 'ccshim.jax.register_legacy("lapack_spotrf", '
      '_solver.registrations()["lapack_spotrf"], platform="cpu", api_version=2)', t["wrap"])
check("(ccshim_legacy_fn)Potrf<double>::Kernel, 2," in targets["lapack_dpotrf"]["wrap_c"],
      targets["lapack_dpotrf"]["wrap_c"])
check("(ccshim_legacy_fn)gesv<1, float>, 1," in targets["lapack_sgesv"]["wrap_c"],
      targets["lapack_sgesv"]["wrap_c"])
check('_solver.registrations()["lapack_sgesv"]' in targets["lapack_sgesv"]["wrap"],
      targets["lapack_sgesv"]["wrap"])
check("<uintptr_t><void*>(blas_strsm)" in targets["blas_strsm"]["wrap"] and
      targets["blas_strsm"]["wrap_language"] == "cython", targets["blas_strsm"])
check("fn_name" not in targets, "a helper's body is not a registration of its own")
check(all(t["wrap_language"] == "python" for n, t in targets.items()
          if n != "blas_strsm"), "every other wrap line is Python")
check("CCSHIM_PLATFORM_ROCM" in targets["rocm_fill"]["wrap_c"], targets["rocm_fill"]["wrap_c"])
check('platform="cuda", api_version=3' in targets["gpu_norm"]["wrap"], targets["gpu_norm"]["wrap"])
check("jax.ShapeDtypeStruct(x.shape, x.dtype), opaque=descriptor" in
      targets["gpu_norm"]["call_site_change"], targets["gpu_norm"]["call_site_change"])
check(targets["legacy_zero"]["registrations"][0]["via"] == "register_ffi_target",
      targets["legacy_zero"]["registrations"])
check("_ext.old_cpu()" in targets["old_cpu"]["wrap"], targets["old_cpu"]["wrap"])

s = report["summary"]
check(s == {"files": 22, "lines": s["lines"], "legacy_targets": 32, "candidates": 2, "typed": 5,
            "unscanned_files": 0, "artifacts": 0, "artifact_legacy_calls": 0}, f"summary: {s}")
check(report["artifacts"] == [], "no exported programs in the fixture")

# --- The table: one block per target, then the summary; the same every run ------
rc, text, err = scan(FIXTURE)
check(rc == 0, f"scan: rc={rc}")
check("32 legacy targets in 22 files" in text and "15 legacy call sites" in text
      and "5 typed-FFI handlers or calls already" in text, text.splitlines()[-1])
for name in expected:
    head = name.replace("@", "  ") + " " if "@" in name else name + "  "
    check(any(line.startswith(head) for line in text.splitlines()), f"{name} in table")
check(scan(FIXTURE)[1] == text, "the same report twice")

# A single file is accepted too.
rc, one, err = scan(os.path.join(FIXTURE, "gpu", "kernels.cu"))
check(rc == 0 and "gpu_axpy_v1" in one and "2 legacy targets in 1 files" in one, one)

# --- Bad input: one line on stderr and a non-zero exit; nothing lost -------------
with tempfile.TemporaryDirectory() as tmp:
    tree = os.path.join(tmp, "tree")
    shutil.copytree(FIXTURE, tree)
    with open(os.path.join(tree, "csrc", "blob.cc"), "wb") as f:
        f.write(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    rc, out, err = scan(tree)
    lines = err.strip().splitlines()
    check(rc == 1 and len(lines) == 1 and "csrc/blob.cc" in lines[0] and "binary" in lines[0],
          f"binary file: rc={rc} stderr={err!r}")
    check("32 legacy targets in 22 files" in out, "the rest is still reported")
    rc, out, err = scan(tree, "--json")
    check(rc == 1 and json.loads(out)["summary"]["unscanned_files"] == 1, "binary file, JSON")

    not_source = os.path.join(tmp, "data.bin")
    with open(not_source, "wb") as f:
        f.write(b"\0\0")
    bad = [([os.path.join(tmp, "missing")], "No such file or directory"),
           ([not_source], "neither a directory, nor"),
           ([FIXTURE, "--bogus"], "unknown option --bogus"),
           ([FIXTURE, tmp], "one directory expected"),
           ([], "expected a directory")]
    for args, expect in bad:
        rc, out, err = scan(*args)
        lines = err.strip().splitlines()
        check(rc == 2 and len(lines) == 1 and expect in lines[0] and out == "",
              f"bad input {args}: rc={rc} stderr={err!r}")

# --- Names computed at run time from strings and values (the census: tfc 1.4.0's
# "BasisFunc" + str(obj.identifier), its capsule a C++ attribute; BrainPy's
# f-string of an address): the name's shape, and the call site naming it by
# the same expression joined, whose api_version is the target's -----------------
COMPUTED = """
from jax.ffi import register_ffi_target
from jax.interpreters import mlir
from jax.lib import xla_client


class Basis:
    def setup(self):
        obj = self.basisClass.xlaCapsule
        xlaName = "BasisFunc" + str(self.basisClass.identifier)
        register_ffi_target(xlaName, obj, platform="cpu", api_version=0)

        def lower(ctx, x):
            return mlir.custom_call(xlaName, result_types=[x.type], operands=[x],
                                    api_version=3).results
        return lower


def register(rule, capsule):
    target_name = f'numba_custom_call_{str(rule.address)}'
    xla_client.register_custom_call_target(target_name, capsule, "cpu")
"""
with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "computed.py"), "w") as f:
        f.write(COMPUTED)
    rc, out, err = scan(tmp, "--json")
    found = {t["name"]: t for t in json.loads(out)["targets"]} if rc == 0 else {}
    check(sorted(found) == ["target_name", "xlaName"], f"computed names: {sorted(found)} {err}")
    if found:
        t = found["xlaName"]
        check(t["name_pattern"] == "BasisFunc<...>" and t["api_version"] == 3 and
              [c["line"] for c in t["call_sites"]] == [14] and t["platform"] == "cpu",
              f"xlaName: {t}")
        check("computed at run time (BasisFunc<...>)" in t["note"], t["note"])
        check(found["target_name"]["name_pattern"] == "numba_custom_call_<...>",
              found["target_name"])
    rc, text, err = scan(tmp)
    check("xlaName (name computed: BasisFunc<...>)  cpu v3" in text, text)

# --- A registration through a function of the project's own, in version
# branches, called from another module with a name computed there (the census:
# brainevent 0.0.5's register_custom_call): a target at each call, its name's
# shape, platform and kernel from the call, joined to the call site ----------
WRAPPER = """
import jax
from jax.lib import xla_client


def register_custom_call(target_name, capsule, backend: str):
    if jax.__version_info__ < (0, 4, 35):
        xla_client.register_custom_call_target(target_name, capsule, backend)
    else:
        jax.ffi.register_ffi_target(target_name, capsule, backend, api_version=0)
"""
CALLER = """
from jax.interpreters import mlir
from .compat import register_custom_call


def lower(rule, capsule, x):
    target_name = f'numba_call_{str(rule.address)}'
    register_custom_call(target_name, capsule, "cpu")
    register_custom_call("fixed_gpu_kernel", capsule, backend="gpu")
    return mlir.custom_call(call_target_name=target_name, result_types=[x.type],
                            operands=[x]).results
"""
with tempfile.TemporaryDirectory() as tmp:
    os.mkdir(os.path.join(tmp, "pkg"))
    for name, text in (("compat.py", WRAPPER), ("ops.py", CALLER)):
        with open(os.path.join(tmp, "pkg", name), "w") as f:
            f.write(text)
    rc, out, err = scan(tmp, "--json")
    found = {t["name"]: t for t in json.loads(out)["targets"]} if rc == 0 else {}
    check(sorted(found) == ["fixed_gpu_kernel", "target_name"],
          f"names through a wrapper: {sorted(found)} {err}")
    if sorted(found) == ["fixed_gpu_kernel", "target_name"]:
        t = found["target_name"]
        check(t["name_pattern"] == "numba_call_<...>" and t["platform"] == "cpu" and
              t["api_version"] == 2 and (t["file"], t["line"]) == ("pkg/ops.py", 8) and
              [c["line"] for c in t["call_sites"]] == [10], f"through a wrapper: {t}")
        check(t["wrap"] == 'ccshim.jax.register_legacy(target_name, capsule, platform="cpu", '
              'api_version=2)', t["wrap"])
        check("named by register_custom_call (pkg/compat.py:8)" in t["note"], t["note"])
        check(found["fixed_gpu_kernel"]["platform"] == "gpu", found["fixed_gpu_kernel"])
    # In the wrapper's own file, a call passing a literal and one passing a
    # computed name: each a target, neither lost to the other.
    with open(os.path.join(tmp, "pkg", "compat.py"), "a") as f:
        f.write("register_custom_call('compat_kernel', capsule, 'cpu')\n"
                "register_custom_call(f'compat_{kind}', capsule, 'cpu')\n")
    rc, out, err = scan(tmp, "--json")
    found = {t["name"]: t for t in json.loads(out)["targets"]} if rc == 0 else {}
    check(sorted(found) == ["compat_kernel", "f'compat_{kind}'", "fixed_gpu_kernel",
                            "target_name"], f"literal and computed in one file: {sorted(found)}")
    check(found.get("f'compat_{kind}'", {}).get("name_pattern") == "compat_<...>", found)

# The registration spellings zero-change mode restores (docs/legacy-surface.md),
# each on the module extensions of its years called it on: found, and named.
with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "spellings.py"), "w") as f:
        f.write("import jax, jax.extend.ffi\n"
                "from jaxlib import xla_client\n"
                "from jax.lib import xla_client as jax_client\n"
                "xla_client.register_cpu_custom_call_target(b'sp_jaxlib_cpu', ops.a())\n"
                "jax_client.register_cpu_custom_call_target(b'sp_jax_lib_cpu', ops.b())\n"
                "jax.extend.ffi.register_ffi_target('sp_extend_ffi', ops.c(), platform='cpu',\n"
                "                                   api_version=0)\n"
                "jax.extend.ffi.register_ffi_target('sp_extend_typed', ops.d(), platform='cpu')\n")
    rc, out, err = scan(tmp, "--json")
    got = json.loads(out) if rc == 0 else {"targets": [], "typed": []}
    via = {t["name"]: (t["platform"], [r["via"] for r in t["registrations"]])
           for t in got["targets"]}
    check(via == {"sp_jaxlib_cpu": ("cpu", ["register_cpu_custom_call_target"]),
                  "sp_jax_lib_cpu": ("cpu", ["register_cpu_custom_call_target"]),
                  "sp_extend_ffi": ("cpu", ["register_ffi_target"])},
          f"restored spellings: rc={rc} {via}")
    check([t.get("name") for t in got["typed"]] == ["sp_extend_typed"],
          f"jax.extend.ffi's typed registration: {got['typed']}")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("ccshim scan: every check passed")
