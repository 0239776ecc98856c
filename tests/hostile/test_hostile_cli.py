"""The ccshim command under hostile and unusual input: conform's isolation
(library initialisers that exit or abort, kernels that block SIGALRM, stop
themselves, print, or fork), inputs past every fixed size (long signatures
and manifest lines, /dev/zero as a manifest), scan on odd trees (depth 1000,
paths past PATH_MAX, a symbolic link to a FIFO, non-UTF-8 names, a file of
unbalanced calls) and bench writing to a full disk.  Every case runs under a
timeout of its own, so a hang fails the case instead of the suite.
Standard library only; run by ctest:

    test_hostile_cli.py CCSHIM KERNELS INIT_EXIT_LIB INIT_ABORT_LIB
"""
import json
import os
import subprocess
import sys
import tempfile
import time

CCSHIM, KERNELS, INIT_EXIT, INIT_ABORT = (os.path.abspath(a) for a in sys.argv[1:5])
failures = []
cases = 0


def check(cond, what):
    global cases
    cases += 1
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def run(*args, timeout=30, stdin=subprocess.DEVNULL):
    """(rc, stdout, stderr, seconds); rc None when the command had to be killed."""
    start = time.monotonic()
    try:
        p = subprocess.run([CCSHIM, *args], capture_output=True, timeout=timeout, stdin=stdin)
        return (p.returncode, p.stdout.decode("utf-8", "replace"),
                p.stderr.decode("utf-8", "replace"), time.monotonic() - start)
    except subprocess.TimeoutExpired:
        return None, "", "", time.monotonic() - start


SIG4 = "(f32[4]) -> f32[4]"


def conform(symbol, *extra, lib=KERNELS, timeout=30):
    return run("conform", lib, symbol, "--api", "1", "--signature", SIG4, "--runs", "2",
               *extra, timeout=timeout)


# --- conform: only children load the library ----------------------------------
rc, out, err, _ = conform("copy4_v1", lib=INIT_EXIT)
check(rc == 2 and "exited with status 0 while loading the library" in err,
      f"initialiser exit(0) must not read as a pass: rc {rc}, {out!r} {err!r}")
rc, out, err, _ = conform("copy4_v1", "--json", lib=INIT_EXIT)
check(rc == 2 and json.loads(out)["targets"][0]["status"] == "error",
      f"initialiser exit(0), --json: rc {rc}, {out!r}")
rc, out, err, _ = conform("copy4_v1", lib=INIT_ABORT)
check(rc == 2 and "crashed: signal 6" in err and "while loading the library" in err,
      f"initialiser abort() must be reported, not kill conform: rc {rc}, {err!r}")

# --- conform: the deadline is the parent's ----------------------------------------
rc, out, err, secs = conform("block_alarm_v1", "--timeout", "1", "--json", timeout=30)
t = json.loads(out)["targets"][0] if rc is not None else {}
check(rc == 1 and "timed out after 1 s" in t.get("detail", "") and secs < 20,
      f"a kernel that blocks SIGALRM: rc {rc} in {secs:.1f}s, {out!r} {err!r}")
rc, out, err, secs = conform("stop_self_v1", "--timeout", "1", timeout=30)
check(rc == 1 and "timed out after 1 s" in out and secs < 20,
      f"a kernel that stops itself: rc {rc} in {secs:.1f}s, {out!r} {err!r}")

# --- conform: a kernel's output is captured, not mixed into the report -----------
rc, out, err, _ = conform("chatty_v1", "--json")
try:
    report = json.loads(out)
except json.JSONDecodeError:
    report = None
check(report is not None and rc == 0 and report["all_equal"] is True,
      f"a kernel that prints: the --json report must stay JSON: rc {rc}, {out!r}")
if report:
    shown = report["targets"][0].get("kernel_output", "")
    check("hello from chatty_v1" in shown and "a warning on stderr" in shown,
          f"a kernel's output is shown in the report: {shown!r}")
check("hello from chatty_v1" not in err, f"nor on conform's stderr: {err!r}")

# --- conform: a kernel that leaves a child behind cannot hold it up ---------------
rc, out, err, secs = conform("forks_v1", timeout=30)
check(rc == 0 and "1 of 1 targets equal" in out and secs < 20,
      f"a kernel that forks: rc {rc} in {secs:.1f}s, {out!r} {err!r}")

# --- conform: no fixed-size text ---------------------------------------------------
wide = "(" + ", ".join(["f32[1]"] * 300) + ") -> f32[1]"
check(len(wide) > 2048, "the 300-operand signature is longer than the old 2047-byte buffer")
rc, out, err, _ = run("conform", KERNELS, "first_v1", "--api", "1", "--signature", wide,
                      "--json")
t = json.loads(out)["targets"][0] if rc == 0 else {}
check(rc == 0 and t.get("status") == "equal" and t.get("signature") == wide,
      f"a 300-operand signature: rc {rc}, {err!r} {str(t)[:300]}")

with tempfile.TemporaryDirectory() as tmp:
    longer = "(" + ", ".join(["f32[1]"] * 1400) + ") -> f32[1]"
    manifest = os.path.join(tmp, "long.manifest")
    with open(manifest, "w") as f:
        f.write(f"{KERNELS} first_v1 --api 1 --signature '{longer}'\n")
        f.write(f"{KERNELS} copy4_v1 --api 1 --signature '{SIG4}'\n")
    check(os.path.getsize(manifest) > 8192, "the manifest line is longer than 8191 bytes")
    rc, out, err, _ = run("conform", "--manifest", manifest, "--json")
    targets = json.loads(out)["targets"] if out.startswith("{") else []
    check(rc == 0 and len(targets) == 2 and all(x["status"] == "equal" for x in targets),
          f"a 10 KB manifest line is one target: rc {rc}, {len(targets)} targets, {err!r}")

    rc, out, err, secs = run("conform", "--manifest", "/dev/zero", timeout=20)
    check(rc == 2 and "NUL byte" in err and secs < 10,
          f"--manifest /dev/zero: rc {rc} in {secs:.1f}s, {err!r}")
    huge = os.path.join(tmp, "huge.manifest")
    with open(huge, "w") as f:
        f.write("x" * (2 << 20))
    rc, out, err, _ = run("conform", "--manifest", huge)
    check(rc == 2 and "longer than 1 MiB" in err, f"a 2 MiB line: rc {rc}, {err!r}")
    rc, out, err, _ = run("conform", "--manifest", tmp)
    check(rc == 2 and "is a directory" in err, f"a directory as manifest: rc {rc}, {err!r}")

# --- --help on every subcommand ------------------------------------------------------
for sub in ("conform", "scan", "bench"):
    rc, out, err, _ = run(sub, "--help")
    check(rc == 0 and "usage: ccshim " + sub in out and "example" in out,
          f"ccshim {sub} --help: rc {rc}, {out[:200]!r} {err!r}")

# --- scan: trees of unusual shape ----------------------------------------------------
KERNEL_SRC = b"void deep_k(void* out, const void** in) { }\nXLA_CPU_REGISTER_CUSTOM_CALL_TARGET(deep_k);\n"


def scan_json(root, timeout=60):
    rc, out, err, secs = run("scan", root, "--json", timeout=timeout)
    try:
        return rc, json.loads(out), err, secs
    except json.JSONDecodeError:
        return rc, None, err + out[:300], secs


def chain_with_kernel(root, name, levels):
    """root/name/name/.../k.cc, levels deep, made through directory fds so
    that no path is ever longer than one name."""
    os.mkdir(root)
    fd = os.open(root, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir(name, dir_fd=fd)
        nfd = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    with open(os.open("k.cc", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as f:
        f.write(KERNEL_SRC)
    os.close(fd)


def remove_tree(path):
    # Python's own rmtree recurses once a level: rm walks any depth.
    subprocess.run(["rm", "-rf", path], check=False)


tmp = tempfile.mkdtemp()
try:
    # Depth 1000.
    deep = os.path.join(tmp, "deep")
    chain_with_kernel(deep, "d", 1000)
    rc, rep, err, _ = scan_json(deep)
    check(rc == 0 and rep and len(rep["targets"]) == 1 and
          rep["targets"][0]["file"] == "d/" * 1000 + "k.cc",
          f"a tree 1000 directories deep: rc {rc}, {err[-300:]!r}")

    # Paths past PATH_MAX (4096): 30 levels of 200-byte names.
    long_root = os.path.join(tmp, "long")
    name = "n" * 200
    chain_with_kernel(long_root, name, 30)
    rc, rep, err, _ = scan_json(long_root)
    want = (name + "/") * 30 + "k.cc"
    check(rc == 0 and rep and len(rep["targets"]) == 1 and rep["targets"][0]["file"] == want,
          f"a path of {len(want)} bytes: rc {rc}, "
          f"{[t['file'][-40:] for t in rep['targets']] if rep else None}, {err[-300:]!r}")

    # A symbolic link to a FIFO, and a FIFO, with source extensions.
    odd = os.path.join(tmp, "odd")
    os.mkdir(odd)
    os.mkfifo(os.path.join(odd, "pipe.cc"))
    os.symlink(os.path.join(odd, "pipe.cc"), os.path.join(odd, "link.cc"))
    with open(os.path.join(odd, "real.cc"), "wb") as f:
        f.write(KERNEL_SRC)
    rc, rep, err, secs = scan_json(odd, timeout=20)
    check(rc == 1 and rep and len(rep["targets"]) == 1 and "link.cc: not a regular file (a FIFO)"
          in err and "pipe.cc: not a regular file (a FIFO)" in err and secs < 10,
          f"a FIFO and a link to it: rc {rc} in {secs:.1f}s, {err!r}")

    # Names in UTF-8 and names that are not UTF-8.
    names = os.path.join(tmp, "names")
    os.makedirs(os.path.join(names, "données"))
    with open(os.path.join(names, "données", "k.cc"), "wb") as f:
        f.write(KERNEL_SRC)
    os.makedirs(os.fsencode(os.path.join(names, "")) + b"caf\xe9")
    with open(os.fsencode(os.path.join(names, "")) + b"caf\xe9/k2.cc", "wb") as f:
        f.write(KERNEL_SRC.replace(b"deep_k", b"latin_k"))
    p = subprocess.run([CCSHIM, "scan", names, "--json"], capture_output=True, timeout=30)
    try:
        rep = json.loads(p.stdout.decode("utf-8"))
        files = sorted(t["file"] for t in rep["targets"])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        files = [f"not UTF-8 JSON: {e}"]
    check(p.returncode == 0 and "données/k.cc" in files,
          f"a UTF-8 name comes out as itself: {files}")
    latin = [f for f in files if f.startswith("caf")]
    check(len(latin) == 1 and latin[0].encode("utf-8", "surrogateescape") == b"caf\xe9/k2.cc",
          f"a Latin-1 name comes back byte for byte through surrogateescape: {latin}")

    # 2 MB of unbalanced calls: linear, not quadratic.
    flood = os.path.join(tmp, "flood")
    os.mkdir(flood)
    with open(os.path.join(flood, "f.py"), "w") as f:
        f.write("custom_call(" * 170000)
    with open(os.path.join(flood, "g.cc"), "w") as f:
        f.write("CustomCall(" * 90000 + ")" * 90000)
    rc, rep, err, secs = scan_json(flood, timeout=60)
    # The C file is read (no target in it); the .py, which no Python parser
    # takes (170000 nested calls), is said not scanned, and the scan goes on.
    # (A command whose Python cannot read .py files at all, a plain CMake
    # build's, says it not read: asked of a good file first.)
    probe = os.path.join(tmp, "probe")
    os.mkdir(probe)
    with open(os.path.join(probe, "ok.py"), "w") as f:
        f.write('custom_call("k")\n')
    reads_py = "a Python file, not read" not in scan_json(probe, timeout=60)[2]
    said = "nested too deeply for a Python parser" if reads_py else "a Python file, not read"
    check(rc == 1 and rep is not None and secs < 10 and f"f.py: {said}" in err and
          rep.get("summary", {}).get("files") == 1,
          f"2 MB of unbalanced and deeply nested calls: rc {rc} in {secs:.1f}s, {err[-200:]!r}, "
          f"{rep and rep.get('summary')}")
    # Cython: a registration whose kernel is 170000 nested calls, beside a
    # good .py file.  Cython's parser takes it; the argument, which no
    # Python parser takes, is kept as written, and nothing crashes (a crash
    # of the reader would lose every Python and Cython file's findings).
    deep = os.path.join(tmp, "deep_pyx")
    os.mkdir(deep)
    with open(os.path.join(deep, "k.pyx"), "w") as f:
        f.write('register_custom_call_target(b"deep", ' + "f(" * 170000 + "k" +
                ")" * 170000 + ")\n")
    with open(os.path.join(deep, "ok.py"), "w") as f:
        f.write('custom_call("k")\n')
    rc, rep, err, secs = scan_json(deep, timeout=60)
    names = sorted(t["name"] for t in (rep or {}).get("targets", []))
    check(not reads_py or (rc == 0 and names == ["deep", "k"] and secs < 30),
          f"a .pyx of 170000 nested calls: rc {rc} in {secs:.1f}s, {names}, {err[-200:]!r}")
finally:
    remove_tree(tmp)

# --- bench: a write that fails is an error ------------------------------------------------
if os.path.exists("/dev/full"):
    rc, out, err, _ = run("bench", "--quick", "--no-instructions", "--json", "/dev/full",
                          timeout=300)
    check(rc == 2 and "cannot write /dev/full" in err,
          f"bench --json /dev/full: rc {rc}, {err!r}")

print(f"hostile CLI: {cases} cases, {len(failures)} failed")
sys.exit(1 if failures else 0)
