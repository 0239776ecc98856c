"""Judges a portable wheel (dev/wheel.py) as PyPI and a user's machine will,
without installing it:

    check_wheel.py WHEEL AUDITWHEEL

1. its name, its WHEEL file's tag and its RECORD agree with its files;
2. it holds the library, the command, the headers, the CMake package, the
   Python package and the console script's entry point;
3. every ELF file in it is of the tag's architecture and needs nothing but
   glibc's libraries and the wheel's own libccshim.so (readelf -d), no
   symbol version but glibc's and none newer than the tag's glibc
   (readelf -V), and neither imports nor exports a libffi symbol, libffi
   being inside libccshim.so and hidden; libccshim.so exports ccshim's API
   and the two status setters, nothing else (readelf --dyn-syms);
4. `auditwheel show` finds it consistent with the tag, or an older one;
5. on a machine of the wheel's architecture, ldd finds everything each ELF
   file needs in glibc or in the wheel.

Prints what it checked; exits 1 with every failure said.
"""
import base64
import csv
import hashlib
import io
import pathlib
import platform
import re
import subprocess
import sys
import tempfile
import zipfile

GLIBC_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
              "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}
MACHINES = {"x86_64": "Advanced Micro Devices X86-64", "aarch64": "AArch64"}
EXPORTED = re.compile(r"^(ccshim_\w+|XlaCustomCallStatusSet(Success|Failure))$")
NAME = re.compile(r"^(?P<name>\w+)-(?P<version>[\w.]+)-(?P<tag>py3-none-manylinux_(?P<major>\d+)_"
                  r"(?P<minor>\d+)_(?P<arch>x86_64|aarch64))\.whl$")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def readelf(*args):
    return subprocess.run(["readelf", "-W", *args], check=True, capture_output=True,
                          text=True).stdout


def check_record(zf, info):
    names = set(zf.namelist())
    rows = list(csv.reader(io.StringIO(zf.read(f"{info}/RECORD").decode())))
    listed = {row[0] for row in rows}
    check(listed == names, f"RECORD lists {sorted(listed ^ names)} differently from the wheel")
    for name, digest, size in rows:
        if name == f"{info}/RECORD":
            continue
        data = zf.read(name)
        want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
            b"=").decode()
        check(digest == want and int(size) == len(data), f"RECORD: {name}: hash or size wrong")


def check_elf(path, rel, arch, glibc):
    header = readelf("-h", str(path))
    check(MACHINES[arch] in header, f"{rel}: not an {arch} ELF file")
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", readelf("-d", str(path)))
    outside = [n for n in needed if n not in GLIBC_LIBS and n != "libccshim.so"]
    check(not outside, f"{rel} needs {outside}, which are neither glibc's nor in the wheel")
    versions = re.findall(r"Name: (\S+)\s+Flags", readelf("-V", str(path)))
    newest = (0, 0)
    for v in versions:
        m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", v)
        if check(m is not None, f"{rel} needs the symbol version {v}, which is not glibc's"):
            newest = max(newest, (int(m[1]), int(m[2])))
    check(newest <= glibc, f"{rel} needs GLIBC_{newest[0]}.{newest[1]}, newer than the tag's "
          f"{glibc[0]}.{glibc[1]}")
    syms = [line.split() for line in readelf("--dyn-syms", str(path)).splitlines()
            if re.match(r"\s*\d+:", line)]
    names = [(s[7].split("@")[0], s[6], s[4], s[5]) for s in syms if len(s) >= 8]
    ffi = sorted({n for n, *_ in names if n.startswith("ffi_")})
    check(not ffi, f"{rel} imports or exports libffi's symbols: {ffi[:5]}")
    if rel.endswith("libccshim.so"):
        exported = [n for n, ndx, bind, vis in names
                    if ndx != "UND" and bind in ("GLOBAL", "WEAK") and vis == "DEFAULT"]
        stray = [n for n in exported if not EXPORTED.match(n)]
        check(not stray, f"{rel} exports more than ccshim's API: {stray[:5]}")
        check(len(exported) > 50, f"{rel} exports only {len(exported)} symbols")
    return needed, newest, ffi


def check_ldd(path, rel, top):
    out = subprocess.run(["ldd", str(path)], capture_output=True, text=True)
    check(out.returncode == 0, f"ldd {rel}: {out.stderr.strip()}")
    for line in out.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (.*?) \(", line)
        if "not found" in line:
            check(False, f"ldd {rel}: {line.strip()}")
        elif m:
            where = pathlib.Path(m[2]).resolve()
            inside = top in where.parents
            check(inside or m[1] in GLIBC_LIBS,
                  f"ldd {rel}: {m[1]} comes from {where}, outside the wheel and glibc")


def main(wheel, auditwheel):
    wheel = pathlib.Path(wheel)
    m = NAME.match(wheel.name)
    if not m:
        sys.exit(f"{wheel.name}: expected ccshim-V-py3-none-manylinux_2_N_ARCH.whl")
    arch, glibc = m["arch"], (int(m["major"]), int(m["minor"]))
    info = f"{m['name']}-{m['version']}.dist-info"
    with zipfile.ZipFile(wheel) as zf, tempfile.TemporaryDirectory() as tmp:
        check_record(zf, info)
        tag = re.search(r"^Tag: (\S+)$", zf.read(f"{info}/WHEEL").decode(), re.M)
        check(tag and tag[1] == m["tag"], f"WHEEL's tag {tag and tag[1]} is not the name's")
        for need in ("ccshim/lib/libccshim.so", "ccshim/bin/ccshim", "ccshim/__init__.py",
                     "ccshim/_native.py", "ccshim/legacy/_boot/sitecustomize.py",
                     "ccshim/include/ccshim/ccshim.h",
                     "ccshim/include/ccshim/compat/xla/service/custom_call_status.h",
                     "ccshim/lib/cmake/ccshim/ccshimConfig.cmake", f"{info}/entry_points.txt"):
            check(need in zf.namelist(), f"the wheel lacks {need}")
        check("ccshim = ccshim._cli:main" in zf.read(f"{info}/entry_points.txt").decode(),
              "entry_points.txt has no ccshim console script")
        zf.extractall(tmp)
        top = pathlib.Path(tmp).resolve()
        elves = sorted(p for p in top.rglob("*") if p.is_file() and p.read_bytes()[:4] == b"\x7fELF")
        check(len(elves) == 2, f"expected 2 ELF files (library, command), found {len(elves)}")
        for path in elves:
            rel = path.relative_to(top).as_posix()
            needed, newest, ffi = check_elf(path, rel, arch, glibc)
            print(f"{rel}: needs {', '.join(needed)}; newest symbol version "
                  f"GLIBC_{newest[0]}.{newest[1]}; {len(ffi) or 'no'} libffi symbol(s)")
            if platform.machine() == arch:
                check_ldd(path, rel, top)
        if platform.machine() == arch and not any(f.startswith("ldd") for f in failures):
            print("ldd: everything found in glibc or in the wheel")
    out = subprocess.run([auditwheel, "show", str(wheel)], capture_output=True, text=True)
    text = " ".join(out.stdout.split())
    said = re.search(r'consistent with the following platform tag: "manylinux_(\d+)_(\d+)_(\w+)"',
                     text)
    if check(out.returncode == 0 and said, f"auditwheel show: {text or out.stderr}"):
        verdict = (int(said[1]), int(said[2]))
        check(said[3] == arch and verdict <= glibc,
              f"auditwheel show: consistent with manylinux_{said[1]}_{said[2]}_{said[3]}, "
              f"not with the wheel's {m['tag']}")
        print(f"auditwheel show: consistent with manylinux_{said[1]}_{said[2]}_{said[3]}")
    for f in failures:
        print(f"FAIL: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: check_wheel.py WHEEL AUDITWHEEL")
    sys.exit(main(*sys.argv[1:]))
