"""``ccshim rewrite``: the command line over ccshim.export."""

from __future__ import annotations

import json
import os
import pathlib
import sys
from collections.abc import Sequence
from typing import Any

from ._check import check
from ._common import DEFAULT_PREFIX, ArtifactError, _first_line, file_kind
from ._read import read, read_file
from ._register import _kernel_for, runs_on
from ._rewrite import rewrite


USAGE = """\
usage: ccshim rewrite IN OUT [--platform P] [--to export|portable|bytecode|text]
                      [--prefix PFX] [--keep TARGET]... [--only TARGET]...
                      [--manifest FILE] [--json] [--upgrade]
                      [--check --kernels MODULE[:ATTR] [--init FUNC] [--inputs FILE.npz]
                       [--seed S]]
       ccshim rewrite --list FILE... [--json]

Rewrites a jax.export artifact (or a StableHLO module: portable artifact,
MLIR bytecode or text) so that each legacy custom call (api_version 1-3)
becomes a typed-FFI call on the target ccshim wraps it as, PFX vN.TARGET
(default ccshim.vN.TARGET), its backend_config bytes carried intact as the
uint8 attribute "opaque".  A jax.export artifact is written at the running
JAX's serialization version, whatever version it was read at (JAX reads
versions older than its compatibility window only through ccshim), and at
its calling convention, or the oldest the running JAX supports where the
upgrade is exact (8 -> 9 with no effects and the platform index, if any,
tagged as JAX 0.4.20 to 0.4.23 tagged it; otherwise refused, the
difference named).  IN is never modified; OUT is written whole or
not at all.

  --platform P     the platform of a plain module (cpu, cuda, rocm); an
                   exported artifact says its own
  --to KIND        the output kind (default: the input's); export wraps a
                   plain module as a jax.export artifact (needs --platform)
  --keep TARGET    leave this legacy target as it is
  --only TARGET    rewrite only this legacy target
  --manifest FILE  write the manifest (legacy target -> typed target, form,
                   signatures) as JSON
  --check          run IN with its legacy targets on XLA's legacy path and
                   OUT through ccshim on the same inputs; compare the bytes
  --kernels M[:A]  the kernels, for --check: a Python module (a name, or a
                   path to an extension) and its registrations() mapping, or
                   the attribute A (a mapping, or a function returning one)
  --init FUNC      call M.FUNC() first (jaxlib's LAPACK module: initialize)
  --inputs F.npz   the inputs for --check (arr_0, arr_1, ...); default:
                   drawn from --seed (0)
  --upgrade        rewrite no call: only write the artifact anew, at the
                   running JAX's serialization version (an old artifact with
                   no legacy call, or one whose legacy targets stay)
  --list           list every custom call in each FILE (legacy, typed,
                   builtin, ccshim) and change nothing

Exit status: 0 done (for --check: every output equal), 1 --check found a
difference, 2 bad input (the message says what was expected).

Examples:
  ccshim rewrite model.jax model.ccshim.jax --manifest model.targets.json
  ccshim rewrite lu_2023.mlirbc lu.jax --platform cpu --to export
  ccshim rewrite lu_2023.jax lu.jax --check --kernels jaxlib_old/_lapack.so --init initialize
  ccshim rewrite --upgrade fft_2024.jax fft.jax
  ccshim rewrite --list --json exported/*.jax
"""


def _load_python_kernels(spec: str, init: str | None):
    """A module's registrations() (or attribute) for --kernels MODULE[:ATTR]."""
    from .. import _modules
    try:
        return _modules.registrations(spec, init)
    except _modules.ModuleError as e:
        raise ArtifactError(f"--kernels: {e}") from None


def _parse(argv: Sequence[str]) -> dict:
    opts: dict[str, Any] = {"keep": [], "only": [], "files": [], "json": False,
                            "check": False, "list": False, "tsv": False, "upgrade": False}
    valued = {"--platform", "--to", "--prefix", "--keep", "--only", "--manifest",
              "--kernels", "--init", "--inputs", "--seed", "--paths-file"}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            opts["help"] = True
        elif arg in ("--json", "--check", "--list", "--tsv", "--upgrade"):
            opts[arg[2:]] = True
        elif arg in valued:
            if i + 1 >= len(argv):
                raise ArtifactError(f"{arg} needs a value")
            key = arg[2:]
            if key in ("keep", "only"):
                opts[key].append(argv[i + 1])
            else:
                opts[key] = argv[i + 1]
            i += 1
        elif arg.startswith("-"):
            raise ArtifactError(f"unknown option {arg}")
        else:
            opts["files"].append(arg)
        i += 1
    return opts


def _tsv(*fields) -> str:
    return "\t".join(str(f).replace("\t", " ").replace("\n", " ") for f in fields)


def _report_list(files: Sequence[str], form: str, out) -> int:
    """Lists each file's custom calls; a file that does not read is reported
    as such (exit status 2) and the others still listed.  ``form``: text,
    json, or tsv (for ccshim scan: one record a line, files by index)."""
    listing, failed = [], 0
    for i, f in enumerate(files):
        try:
            art = read(f)
            listing.append({"file": f, "kind": art.kind, "platforms": list(art.platforms),
                            "calls": [c.as_json() for c in art.calls()]})
        except Exception as e:  # noqa: BLE001 - one file's failure is that file's line
            failed += 1
            listing.append({"file": f, "error": str(e) if isinstance(e, ArtifactError)
                            else f"{type(e).__name__}: {_first_line(e)}"})
        entry = listing[-1]
        if form == "tsv":
            if "error" in entry:
                print(_tsv("E", i, entry["error"]), file=out)
                continue
            count = {k: sum(c["kind"] == k for c in entry["calls"])
                     for k in ("typed", "builtin", "ccshim")}
            print(_tsv("F", i, entry["kind"], ",".join(entry["platforms"]), count["typed"],
                       count["builtin"], count["ccshim"]), file=out)
            for c in entry["calls"]:
                if c["kind"] == "legacy":
                    print(_tsv("C", i, c["target"], c["api_version"], c["opaque_bytes"],
                               c["signature"], c["location"]), file=out)
        elif form == "text":
            if "error" in entry:
                print(f"{f}: not read: {entry['error']}", file=out)
                continue
            legacy = [c for c in entry["calls"] if c["kind"] == "legacy"]
            where = " for " + ", ".join(entry["platforms"]) if entry["platforms"] else ""
            print(f"{f}: {entry['kind']}{where}, {len(entry['calls'])} custom call(s), "
                  f"{len(legacy)} legacy", file=out)
            for c in entry["calls"]:
                extra = f", opaque {c['opaque_bytes']} bytes" if c["kind"] == "legacy" else ""
                print(f"  {c['kind']:8} {c['target']} api_version {c['api_version']}{extra}: "
                      f"{c['signature']}", file=out)
    if form == "json":
        json.dump(listing, out, indent=2)
        out.write("\n")
    return 2 if failed else 0


def _x64() -> None:
    """JAX with 64-bit types on: an artifact with them runs only so (in the
    command's own process).  Not before the options are read, so that
    --help and a bad option cost no JAX."""
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
    except ImportError:
        pass


def main(argv: Sequence[str] | None = None, out=None) -> int:
    """``ccshim rewrite``: exit 0 done, 1 --check found a difference, 2 bad input."""
    out = out or sys.stdout
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        opts = _parse(argv)
        if opts.get("help"):
            out.write(USAGE)
            return 0
        _x64()
        if opts["list"]:
            files = list(opts["files"])
            if opts.get("paths-file"):  # NUL-separated, as ccshim scan passes them
                raw = read_file(pathlib.Path(opts["paths-file"]))
                files += [os.fsdecode(p) for p in raw.split(b"\0") if p]
            if not files:
                raise ArtifactError("--list needs at least one FILE")
            return _report_list(files, "tsv" if opts["tsv"] else
                                "json" if opts["json"] else "text", out)
        if len(opts["files"]) != 2:
            raise ArtifactError(f"expected IN and OUT, got {len(opts['files'])} path(s)")
        src, dst = (pathlib.Path(p) for p in opts["files"])
        if dst.exists() and src.exists() and dst.resolve() == src.resolve():
            raise ArtifactError(f"OUT is IN ({src}); the input is never overwritten")
        if opts["check"] and not opts.get("kernels"):
            raise ArtifactError("--check needs --kernels MODULE[:ATTR]")
        _check_output(dst)
        if opts.get("manifest"):
            _check_output(pathlib.Path(opts["manifest"]))
        keep = opts["keep"]
        if opts["upgrade"]:  # every legacy call left as it is: only written anew
            if opts["keep"] or opts["only"] or opts["check"]:
                raise ArtifactError("--upgrade rewrites no call: leave out --keep, --only "
                                    "and --check")
            keep = sorted({c.target for c in read(src, platform=opts.get("platform")).calls()
                           if c.kind == "legacy"})
        done = rewrite(src, prefix=opts.get("prefix", DEFAULT_PREFIX),
                       platform=opts.get("platform"), to=opts.get("to"),
                       keep=keep, only=opts["only"] or None)
        kernels = None
        if opts["check"]:  # every kernel found before anything is written
            kernels = _load_python_kernels(opts["kernels"], opts.get("init"))
            where = opts.get("platform") or (done.platforms[0] if done.platforms else "cpu")
            missing = [t["legacy"] for t in done.targets if runs_on(t, where, done.platforms)
                       and _kernel_for(kernels, t["legacy"], where) is None]
            if missing:
                raise ArtifactError(f"--kernels {opts['kernels']}: no kernel for the legacy "
                                    f"target(s) {', '.join(missing)} of {src}")
        _write_whole(dst, done.data)
        manifest = dict(done.manifest(), input=str(src), output=str(dst))
        if opts.get("manifest"):
            _write_whole(pathlib.Path(opts["manifest"]),
                         (json.dumps(manifest, indent=2) + "\n").encode())
        report = None
        if opts["check"]:
            inputs = None
            if opts.get("inputs"):
                import numpy as np
                with np.load(opts["inputs"]) as z:
                    inputs = [z[f"arr_{i}"] for i in range(len(z.files))]
            seed = int(opts.get("seed", 0))
            # (a plain module runs as the exported artifact it makes: as_exported)
            report = check(src, dst, kernels, inputs=inputs, seed=seed,
                           prefix=opts.get("prefix", DEFAULT_PREFIX),
                           platform=opts.get("platform"))
        if opts["json"]:
            json.dump(dict(manifest, check=report), out, indent=2)
            out.write("\n")
        else:
            _print_done(dst, done, report, out)
        return 0 if report is None or report["equal"] else 1
    except ArtifactError as e:
        print(f"ccshim rewrite: {e}", file=sys.stderr)
        return 2
    except (TypeError, ValueError, OSError) as e:
        print(f"ccshim rewrite: {_first_line(e)}", file=sys.stderr)
        return 2
    except Exception as e:  # JAX's or XLA's own errors, e.g. from --check's runs
        print(f"ccshim rewrite: {type(e).__name__}: {_first_line(e)}", file=sys.stderr)
        return 2


def _print_done(dst, done, report, out) -> None:
    """What a rewrite did, as text: the calls rewritten, the versions
    written, and --check's outputs."""
    n = sum(t["calls"] for t in done.targets)
    print(f"{dst}: {n} legacy call(s) to {len(done.targets)} target(s) rewritten; "
          f"{len(done.kept)} custom call(s) left alone", file=out)
    read_v, written_v = done.serialization
    cc_read, cc_written = done.calling_convention
    if read_v is not None and written_v is not None:
        cc = (f"calling convention {cc_read} kept" if cc_read == cc_written else
              f"calling convention {cc_read} -> {cc_written} (exact)")
        print(f"  serialization version {read_v} -> {written_v} (the running JAX's); {cc}",
              file=out)
    for t in done.targets:
        print(f"  {t['legacy']} (api_version {t['api_version']}) -> {t['typed']}, "
              f"{t['calls']} call(s)", file=out)
    if report is not None:
        print(f"check against {report['reference']}:", file=out)
        for r in report["outputs"]:
            state = "equal" if r["equal"] else f"DIFFERENT ({r['differing_bytes']} bytes)"
            print(f"  output {r['output']} {r['dtype']}{r['shape']}: {state}", file=out)


def _check_output(path: pathlib.Path) -> None:
    """OUT is a regular file or absent: a device, FIFO or directory would be
    replaced by the rename (or, as root, the system's /dev/full)."""
    import stat
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise ArtifactError(f"{path}: cannot write it: {e.strerror}") from None
    if not stat.S_ISREG(mode):
        raise ArtifactError(f"{path}: is {file_kind(mode)}; OUT must be a regular file or "
                            "not exist (it is replaced whole)")


def _write_whole(path: pathlib.Path, data: bytes) -> None:
    """Writes a file whole or not at all (a temporary beside it, renamed)."""
    _check_output(path)
    tmp = path.with_name(f".{path.name}.ccshim-tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise ArtifactError(f"{path}: cannot write it: {e.strerror}") from None
