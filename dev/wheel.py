#!/usr/bin/env python3
"""`make wheel`: ccshim's portable wheels, one per architecture,

    dist/ccshim-VERSION-py3-none-manylinux_2_27_x86_64.whl
    dist/ccshim-VERSION-py3-none-manylinux_2_27_aarch64.whl

each holding libccshim, the ccshim command, the headers, the CMake package
and the Python package.  Nothing in it is a Python extension (the library is
loaded with ctypes), so one wheel serves every CPython (py3-none).

The C parts are built with zig's clang (PyPI's ziglang, cmake/zig-toolchain.cmake)
against glibc 2.27's symbol versions, with Debian's static libffi_pic.a
linked into libccshim.so and its symbols hidden (cmake/libffi.cmake): the
wheel needs glibc 2.27 or later and nothing else.  The aarch64 wheel is
cross-built the same way from Debian's libffi-dev:arm64.  The wheel's
files are laid out, dated and compressed the same way on every run, so the
same tree and tools give the same bytes.  Each wheel is then shown to
auditwheel (`auditwheel show`), whose verdict is printed.

usage: dev/wheel.py [--arch ARCH]... [--dist DIR] [--jobs N] [--tools VENV]
       dev/wheel.py --path ARCH [--dist DIR]
       dev/wheel.py --print-configure ARCH DIR

An architecture whose inputs are missing (its libffi_pic.a) is not built:
that is said, with what to install, and the exit status is 3 when no wheel
at all was made.  dev/setup.sh wheel installs the inputs.  --path prints
ARCH's wheel's path when it is there (the tests find it so), else says why
not and exits 3.  --print-configure prints, one argument a line, the cmake
command that configures ARCH's C parts in DIR as its wheel has them (make
bench builds build-bench-zig so, dev/bench.sh).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
GLIBC = "2.27"
# Debian's multiarch triplets, where its libffi-dev puts libffi_pic.a.
TRIPLETS = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}
# Every file of the wheel carries this date (SOURCE_DATE_EPOCH overrides it):
# ZIP's earliest, so that no build's clock reaches the bytes.
EPOCH = 315532800


def libffi_archive(arch: str) -> pathlib.Path:
    return pathlib.Path("/usr/lib") / TRIPLETS[arch] / "libffi_pic.a"


def missing_inputs(arch: str) -> str | None:
    """Why ARCH's wheel cannot be built here, or None."""
    archive = libffi_archive(arch)
    if not archive.is_file():
        package = "libffi-dev" if arch == "x86_64" else "libffi-dev:arm64"
        return (f"no {archive} (Debian's {package}, which dev/setup.sh wheel installs"
                f"{' through dpkg multiarch' if arch != 'x86_64' else ''})")
    return None


def configure_command(arch: str, build_dir: pathlib.Path) -> list[str]:
    """The cmake command that configures ARCH's C parts in BUILD_DIR as its
    wheel has them (make bench measures the same build)."""
    strip = "-Wl,--strip-debug"
    return [
        "cmake", "-S", str(ROOT), "-B", str(build_dir),
        "--toolchain", str(ROOT / "cmake" / "zig-toolchain.cmake"),
        f"-DCCSHIM_ZIG_TARGET={TRIPLETS[arch]}.{GLIBC}",
        f"-DCCSHIM_LIBFFI_STATIC={libffi_archive(arch)}",
        "-DCMAKE_BUILD_TYPE=Release", "-DCCSHIM_WERROR=ON", "-DCCSHIM_WHEEL_LAYOUT=ON",
        "-DCCSHIM_BUILD_TESTS=OFF", "-DCCSHIM_BUILD_EXAMPLES=OFF", "-DCCSHIM_BUILD_TOOLS=ON",
        "-DCMAKE_INSTALL_LIBDIR=lib", "-DCMAKE_INSTALL_BINDIR=bin",
        "-DCMAKE_INSTALL_INCLUDEDIR=include",
        f"-DCMAKE_SHARED_LINKER_FLAGS={strip}", f"-DCMAKE_EXE_LINKER_FLAGS={strip}",
        # Linked with the installed RPATH ($ORIGIN/../lib) from the start: an
        # RPATH rewritten at install keeps the build folder's length in the
        # file's layout, so another clone's path would change the bytes.
        "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON",
    ]


def build(arch: str, build_dir: pathlib.Path, jobs: int) -> pathlib.Path:
    """Configures, builds and installs ARCH's C parts; returns the staging
    folder whose ccshim/ is the package's folder in the wheel."""
    configure = configure_command(arch, build_dir)
    stage = build_dir / "stage"
    build_dir.mkdir(parents=True, exist_ok=True)
    log = build_dir / "wheel-build.log"
    log.unlink(missing_ok=True)
    for cmd in (configure, ["cmake", "--build", str(build_dir), "-j", str(jobs)],
                ["cmake", "--install", str(build_dir), "--prefix", str(stage / "ccshim")]):
        with open(log, "a") as out:
            if subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode:
                tail = log.read_text(errors="replace").splitlines()[-25:]
                raise SystemExit(f"wheel: {' '.join(cmd[:3])} failed for {arch}; the end of "
                                 f"{log}:\n" + "\n".join(tail))
    return stage


def package_files() -> list[str]:
    """The Python package's files, relative to python/: git's list in a
    checkout (no stray file gets in), else every file but bytecode."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "python/ccshim"],
                             check=True, capture_output=True).stdout
        names = [n.decode() for n in out.split(b"\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = [str(p.relative_to(ROOT)) for p in (ROOT / "python" / "ccshim").rglob("*")
                 if p.is_file() and "__pycache__" not in p.parts]
    return sorted(n[len("python/"):] for n in names)


def metadata() -> dict:
    """Name, version and the core metadata, read from pyproject.toml (and
    the version from CMakeLists.txt by pyproject's own regex), so the wheel
    says what `pip install .` says."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    rule = pyproject["tool"]["scikit-build"]["metadata"]["version"]
    match = re.search(rule["regex"], (ROOT / rule["input"]).read_text())
    if not match:
        raise SystemExit(f"wheel: no version in {rule['input']} by pyproject's regex")
    version = match.group("value")
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {version}",
             f"Summary: {project['description']}",
             f"Requires-Python: {project['requires-python']}"]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    lines.append("Description-Content-Type: text/markdown")
    readme = (ROOT / project["readme"]).read_text()
    scripts = "".join(f"{k} = {v}\n" for k, v in project.get("scripts", {}).items())
    return {"name": project["name"], "version": version,
            "METADATA": "\n".join(lines) + "\n\n" + readme,
            "entry_points.txt": "[console_scripts]\n" + scripts}


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def wheel_tag(arch: str) -> str:
    return f"py3-none-manylinux_{GLIBC.replace('.', '_')}_{arch}"


def wheel_name(meta: dict, arch: str) -> str:
    return f"{meta['name']}-{meta['version']}-{wheel_tag(arch)}.whl"


def write_wheel(stage: pathlib.Path, meta: dict, arch: str, dist: pathlib.Path) -> pathlib.Path:
    """Zips the staged C parts, the Python package and the dist-info into
    dist/; entries sorted, dated EPOCH, modes 0755 for executables and
    0644 for the rest."""
    tag = wheel_tag(arch)
    entries = {}  # name in the wheel -> (bytes, executable)
    for path in sorted((stage / "ccshim").rglob("*")):
        if path.is_file():
            name = path.relative_to(stage).as_posix()
            entries[name] = (path.read_bytes(), os.access(path, os.X_OK))
    for name in package_files():
        entries[name] = ((ROOT / "python" / name).read_bytes(), False)
    info = f"{meta['name']}-{meta['version']}.dist-info"
    wheel = (f"Wheel-Version: 1.0\nGenerator: ccshim dev/wheel.py\nRoot-Is-Purelib: false\n"
             f"Tag: {tag}\n")
    for name, text in (("METADATA", meta["METADATA"]), ("WHEEL", wheel),
                       ("entry_points.txt", meta["entry_points.txt"])):
        entries[f"{info}/{name}"] = (text.encode(), False)
    record = "".join(f"{n},{_record_hash(d)},{len(d)}\n" for n, (d, _) in entries.items())
    entries[f"{info}/RECORD"] = ((record + f"{info}/RECORD,,\n").encode(), False)

    stamp = time.gmtime(max(int(os.environ.get("SOURCE_DATE_EPOCH", EPOCH)), EPOCH))[:6]
    dist.mkdir(parents=True, exist_ok=True)
    out = dist / wheel_name(meta, arch)
    tmp = out.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        # The package's files first, the dist-info last, RECORD at the end.
        for name in sorted(n for n in entries if not n.startswith(info)) + \
                [f"{info}/{n}" for n in ("METADATA", "WHEEL", "entry_points.txt", "RECORD")]:
            data, executable = entries[name]
            zi = zipfile.ZipInfo(name, date_time=stamp)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = (0o100755 if executable else 0o100644) << 16
            zi.create_system = 3  # Unix, so that the modes are read
            zf.writestr(zi, data)
    tmp.replace(out)
    return out


def show(wheel: pathlib.Path, tools: pathlib.Path) -> None:
    """Prints auditwheel's verdict on WHEEL."""
    auditwheel = tools / "bin" / "auditwheel"
    out = subprocess.run([str(auditwheel), "show", str(wheel)], capture_output=True, text=True)
    print(f"== auditwheel show {wheel.relative_to(ROOT) if wheel.is_relative_to(ROOT) else wheel}")
    print((out.stdout + out.stderr).strip())
    if out.returncode:
        raise SystemExit(f"wheel: auditwheel show failed on {wheel} (exit {out.returncode})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Builds ccshim's portable wheels.")
    ap.add_argument("--arch", action="append", choices=sorted(TRIPLETS),
                    help="an architecture to build (default: both)")
    ap.add_argument("--dist", type=pathlib.Path, default=ROOT / "dist")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--tools", type=pathlib.Path, default=ROOT / ".venv-wheel",
                    help="the venv with auditwheel (dev/setup.sh wheel)")
    ap.add_argument("--path", choices=sorted(TRIPLETS), help="print ARCH's wheel's path")
    ap.add_argument("--print-configure", nargs=2, metavar=("ARCH", "DIR"),
                    help="print, one argument a line, the cmake command that configures "
                         "ARCH's wheel's C parts in DIR (make bench uses it)")
    args = ap.parse_args(argv)
    if args.print_configure:
        arch, build_dir = args.print_configure
        if arch not in TRIPLETS:
            ap.error(f"--print-configure: expected an architecture of {sorted(TRIPLETS)}, "
                     f"got {arch!r}")
        print("\n".join(configure_command(arch, pathlib.Path(build_dir).resolve())))
        return 0
    meta = metadata()
    if args.path:
        wheel = args.dist / wheel_name(meta, args.path)
        if wheel.is_file():
            print(wheel)
            return 0
        why = missing_inputs(args.path) or "make wheel has not made it"
        print(f"no {wheel}: {why}", file=sys.stderr)
        return 3
    made = []
    for arch in args.arch or ["x86_64", "aarch64"]:
        why = missing_inputs(arch)
        if why:
            print(f"wheel: the {arch} wheel is not built: {why}")
            continue
        build_dir = ROOT / f"build-wheel-{arch}"
        if (build_dir / "stage").exists():
            shutil.rmtree(build_dir / "stage")
        wheel = write_wheel(build(arch, build_dir, args.jobs), meta, arch, args.dist)
        print(f"wheel: {wheel.relative_to(ROOT) if wheel.is_relative_to(ROOT) else wheel}")
        show(wheel, args.tools)
        made.append(wheel)
    return 0 if made else 3


if __name__ == "__main__":
    sys.exit(main())
