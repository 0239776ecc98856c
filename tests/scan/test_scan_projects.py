"""`ccshim scan` on real legacy trees, each as its sdist on PyPI has it,
counted against the ground truth of the project's own built extension:

* mpi4jax 0.8.1.post2: the 12 CPU targets in the `custom_call_targets` dict
  of its Cython module as setup.py builds it (dev/setup.sh), each joined to
  the function the capsule really holds (its address looked up in the
  module's symbol table); its CUDA module's 12 as well, and its 12 SYCL
  kernels (not built here: their names are the CPU module's);
* celerite2 0.3.2: the 12 capsules its pybind11 module `xla_ops` (from the
  PyPI wheel) offers, under the names its `ops.py` registers them with (read
  with Python's own parser from the `_build_op` calls and the package's
  definitions.json: a `_rev` target only where `has_rev` is true); the wheel
  is stripped, so each definition is checked against the function its
  `m.def` line encapsulates;
* veros 1.7.0: the 2 CPU targets in the `cpu_custom_call_targets` dict of
  its built Cython module, each joined to the function its capsule holds;
  and the 2 names its `tdma_.py` registers for CUDA in a loop over literal
  names (its CUDA module is not built here), each with the kernel its .pyx
  declares, defined in its .cu.

Every target found with the right name, platform, form and definition, none
extra, and each wrap line run: executed with the module bound, it registers
the very capsule the project registers.  Run by ctest with the venv's Python:

    test_scan_projects.py CCSHIM

The projects are read from the per-user cache dev/setup.sh fills
(tests/python/project_modules.py says where).

Exits 77 when the set-up could not fetch or build the projects.
"""
import ast
import ctypes
import json
import os
import pathlib
import re
import subprocess
import sys

CCSHIM = pathlib.Path(sys.argv[1]).resolve()
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from project_modules import (CACHE, MPI4JAX_BUILD, load_package_module,  # noqa: E402
                             veros_build)
failures, ran = [], []


def missing(what):
    """A project the set-up should have put in the cache is absent: under
    make test (CCSHIM_FIXTURES_REQUIRED) a failure, by hand a skip."""
    if os.environ.get("CCSHIM_FIXTURES_REQUIRED"):
        check(False, f"{what} (dev/setup.sh test makes it in {CACHE})")
    else:
        print(f"skip: {what} (dev/setup.sh test makes it in {CACHE})")


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def scan(tree):
    p = subprocess.run([str(CCSHIM), "scan", str(tree), "--json"], capture_output=True,
                       text=True, timeout=300)
    check(p.returncode == 0 and p.stderr == "", f"scan {tree.name}: rc={p.returncode} "
          f"{p.stderr[:300]}")
    return json.loads(p.stdout)


def by_platform(report):
    """The targets per platform, {platform: {name: target}}: every one but
    the loops that register a module's whole mapping (whose entries are the
    targets), so that anything extra is counted."""
    out = {}
    for t in report["targets"]:
        if not is_mapping_loop(t):
            check(t["name"] not in out.get(t["platform"], {}), f"{t['name']} twice")
            out.setdefault(t["platform"], {})[t["name"]] = t
    return out


def is_mapping_loop(t):
    """A loop registering a module's whole mapping (its entries are the
    targets): `for name, fn in mod.custom_call_targets.items(): ...`."""
    return "registers every entry of" in t["note"]


_dladdr_info = None


def symbol_of(address):
    """The symbol (demangled) at a kernel's address, from its library's
    symbol table: static functions included."""
    global _dladdr_info

    class DlInfo(ctypes.Structure):
        _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                    ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]
    libc = ctypes.CDLL(None)
    info = DlInfo()
    if not libc.dladdr(ctypes.c_void_p(address), ctypes.byref(info)):
        return None
    offset = address - info.dli_fbase
    nm = subprocess.run(["nm", "-C", "--defined-only", info.dli_fname.decode()],
                        capture_output=True, text=True).stdout
    for line in nm.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] and int(parts[0], 16) == offset:
            return parts[2]
    return None


def capsule_address(capsule):
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get(capsule, b"xla._CUSTOM_CALL_TARGET")


def run_wrap(line, namespace):
    """Executes a wrap line as a user pastes it; returns the capsule it
    registered (register_legacy recorded instead of registered twice)."""
    import ccshim.jax as cj
    got = []
    real = cj.register_legacy
    cj.register_legacy = lambda name, kernel, **kw: got.append((name, kernel, kw))
    try:
        exec(line, {"ccshim": sys.modules["ccshim"], **namespace})
    finally:
        cj.register_legacy = real
    return got[0] if got else None


def check_cython_cpu(project, found, truth, module_name, module):
    """Every CPU capsule of a built Cython module (truth: its dict) a CPU
    target of the scan's, none extra: the definition the function inside the
    capsule, in the module's .pyx, CPU v1 called as v2 (mlir.custom_call's
    default, as the project's lowerings call it), and its wrap line, run,
    registering that very capsule."""
    check(set(found.get("cpu", {})) == set(truth),
          f"{project} CPU: scan found {sorted(found.get('cpu', {}))}, truth {sorted(truth)}")
    for name, capsule in truth.items():
        t = found.get("cpu", {}).get(name)
        if t is None:
            continue
        symbol = symbol_of(capsule_address(capsule)) or ""
        d = t["definition"] or {}
        check(symbol.endswith("_" + d.get("function", "?")),
              f"{project} {name}: definition {d.get('function')}, the capsule holds {symbol}")
        check(d.get("file", "").endswith(f"{module_name}.pyx") and t["form"] == "CPU v1",
              f"{project} {name}: {d} {t.get('form')}")
        check(t["api_version"] == 2, f"{project} {name}: api_version {t['api_version']}")
        got = run_wrap(t["wrap"], {module_name: module})
        check(got is not None and got[0] == name and got[1] is capsule and
              got[2] == {"platform": "cpu", "api_version": 2},
              f"{project} {name}: the wrap line {t['wrap']!r} registered {got}")


# --- mpi4jax 0.8.1.post2 ------------------------------------------------------------
def test_mpi4jax():
    src = CACHE / "mpi4jax-0.8.1.post2-src" / "mpi4jax-0.8.1.post2"
    build = MPI4JAX_BUILD
    if not (build / ".complete").exists() or not src.is_dir():
        missing("mpi4jax 0.8.1.post2 was not fetched or not built")
        return
    ran.append("mpi4jax")
    cpu = load_package_module(build, "mpi4jax._src.xla_bridge.mpi_xla_bridge_cpu")
    truth = dict(cpu.custom_call_targets)
    check(len(truth) == 12, f"mpi4jax: {len(truth)} capsules in the CPU module, expected 12")
    report = scan(src)
    found = by_platform(report)
    check_cython_cpu("mpi4jax", found, truth, "mpi_xla_bridge_cpu", cpu)
    try:
        gpu = load_package_module(build, "mpi4jax._src.xla_bridge.mpi_xla_bridge_cuda")
        cuda_truth = set(gpu.custom_call_targets)
    except ImportError as e:  # no CUDA runtime to load it with
        print(f"mpi4jax CUDA module not loadable ({e}); its names are the CPU module's")
        cuda_truth = set(truth)
    check(set(found.get("cuda", {})) == cuda_truth,
          f"mpi4jax CUDA: scan found {sorted(found.get('cuda', {}))}, truth {sorted(cuda_truth)}")
    for name, t in found.get("cuda", {}).items():
        d = t["definition"] or {}
        check(d.get("function") == name + "_cuda" and t["form"] == "GPU v1",
              f"mpi4jax CUDA {name}: {d.get('function')} {t.get('form')}")
    check(set(found.get("sycl", {})) == set(truth),
          f"mpi4jax SYCL: scan found {sorted(found.get('sycl', {}))}")
    for name, t in found.get("sycl", {}).items():
        check((t["definition"] or {}).get("function") == name + "_xpu",
              f"mpi4jax SYCL {name}: {t['definition']}")
    extra = set(found) - {"cpu", "cuda", "sycl"}
    check(not extra, f"mpi4jax: targets of other platforms {extra}: "
          f"{[list(found[p]) for p in extra]}")
    print(f"mpi4jax 0.8.1.post2: {len(found.get('cpu', {}))}/{len(truth)} CPU, "
          f"{len(found.get('cuda', {}))} CUDA, {len(found.get('sycl', {}))} SYCL targets")


# --- celerite2 0.3.2 ----------------------------------------------------------------
def celerite2_truth(src, wheel):
    """{registered name: xla_ops attribute}, as ops.py registers them: a
    _build_op(NAME, definitions[KEY]) call registers NAME with the module
    function KEY, and NAME + "_rev" with KEY_rev where definitions.json says
    has_rev."""
    ops = src / "python" / "celerite2" / "jax" / "ops.py"
    definitions = {d["name"]: d for d in json.loads(
        (wheel / "celerite2" / "definitions.json").read_text())}
    truth = {}
    for node in ast.walk(ast.parse(ops.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_build_op":
            name = node.args[0].value
            key = node.args[1].slice.value
            truth[name] = key
            if definitions[key]["has_rev"]:
                truth[name + "_rev"] = key + "_rev"
    return truth


def test_celerite2():
    src = CACHE / "celerite2-0.3.2-src" / "celerite2-0.3.2"
    wheel = CACHE / "celerite2-0.3.2"
    so = next(iter((wheel / "celerite2" / "jax").glob("xla_ops.*.so")), None)
    if not src.is_dir() or so is None:
        missing("celerite2 0.3.2 was not fetched")
        return
    if sys.version_info[:2] != (3, 11):
        print("skip celerite2: its fetched wheel is for CPython 3.11")
        return
    ran.append("celerite2")
    from ccshim import _modules
    xla_ops = _modules.load_module(str(so))
    truth = celerite2_truth(src, wheel)
    offered = {a for a in dir(xla_ops) if not a.startswith("_")}
    check(len(truth) == 12 and set(truth.values()) == offered,
          f"celerite2: {len(truth)} registrations, module offers {sorted(offered)}")
    cpp = (src / "python" / "celerite2" / "jax" / "xla_ops.cpp").read_text()
    encapsulated = dict(re.findall(
        r'm\.def\("(\w+)",\s*\[\]\(\)\s*\{\s*return\s+encapsulate_function\((\w+)\)', cpp))
    found = by_platform(scan(src))
    check(set(found) == {"cpu"} and set(found["cpu"]) == set(truth),
          f"celerite2: scan found {[(p, sorted(v)) for p, v in found.items()]}, "
          f"truth {sorted(truth)}")
    for name, attr in truth.items():
        t = found.get("cpu", {}).get(name)
        if t is None:
            continue
        capsule = getattr(xla_ops, attr)()
        # The wheel's module is stripped: the function each module function
        # encapsulates, read from xla_ops.cpp's m.def lines with a regex.
        d = t["definition"] or {}
        check(d.get("function") == encapsulated.get(attr),
              f"celerite2 {name}: definition {d.get('function')}, xla_ops.{attr}() "
              f"encapsulates {encapsulated.get(attr)}")
        check(d.get("file", "").endswith("xla_ops.cpp") and t["form"] == "CPU v1",
              f"celerite2 {name}: {d} {t.get('form')}")
        check(t["api_version"] == 2, f"celerite2 {name}: api_version {t['api_version']}")
        got = run_wrap(t["wrap"], {"xla_ops": xla_ops})
        check(got is not None and got[0] == name and
              capsule_address(got[1]) == capsule_address(capsule) and
              got[2] == {"platform": "cpu", "api_version": 2},
              f"celerite2 {name}: the wrap line {t['wrap']!r} registered {got}")
    print(f"celerite2 0.3.2: {len(found.get('cpu', {}))}/{len(truth)} CPU targets")


# --- veros 1.7.0 ----------------------------------------------------------------------
def veros_gpu_truth(src):
    """The names tdma_.py registers for CUDA: its loop over a tuple of
    literals, read with Python's own parser."""
    tdma = src / "veros" / "core" / "special" / "tdma_.py"
    for node in ast.walk(ast.parse(tdma.read_text())):
        if isinstance(node, ast.For) and "gpu_custom_call_targets" in ast.unparse(node.body[0]):
            return {e.value for e in node.iter.elts}
    return set()


def test_veros():
    src = CACHE / "veros-1.7.0-src" / "veros-1.7.0"
    build = veros_build(f"cp{sys.version_info[0]}{sys.version_info[1]}")
    if not src.is_dir() or not build.is_dir():
        missing("veros 1.7.0 was not fetched or not built")
        return
    ran.append("veros")
    cpu = load_package_module(build, "veros.core.special.tdma_cython_")
    truth = dict(cpu.cpu_custom_call_targets)
    check(len(truth) == 2, f"veros: {len(truth)} capsules in the CPU module, expected 2")
    found = by_platform(scan(src))
    check_cython_cpu("veros", found, truth, "tdma_cython_", cpu)
    # Its CUDA module is not built here: the names its tdma_.py registers
    # for CUDA, each the kernel its .pyx puts in the dict under that name.
    gpu_truth = veros_gpu_truth(src)
    check(len(gpu_truth) == 2 and set(found.get("cuda", {})) == gpu_truth,
          f"veros CUDA: scan found {sorted(found.get('cuda', {}))}, truth {sorted(gpu_truth)}")
    for name, t in found.get("cuda", {}).items():
        d = t["definition"] or {}
        check(d.get("file", "").endswith("cuda_tdma_kernels.cu") and t["form"] == "GPU v1" and
              d.get("function") == {"tdma_cuda_float": "CudaTridiagFloat",
                                    "tdma_cuda_double": "CudaTridiagDouble"}.get(name),
              f"veros CUDA {name}: {d} {t.get('form')}")
        check(f'tdma_cuda_.gpu_custom_call_targets["{name}"], platform="cuda", api_version=2)'
              in t["wrap"], f"veros CUDA {name}: {t['wrap']}")
    extra = set(found) - {"cpu", "cuda"}
    check(not extra, f"veros: targets of other platforms {extra}")
    print(f"veros 1.7.0: {len(found.get('cpu', {}))}/{len(truth)} CPU, "
          f"{len(found.get('cuda', {}))}/{len(gpu_truth)} CUDA targets")


test_mpi4jax()
test_celerite2()
test_veros()
if not ran and not failures:
    print("skipped: no project was fetched or built (dev/setup.sh)")
    sys.exit(77)
print(f"scan on real projects: {', '.join(ran)}; {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
