"""make test-gpu's census step: the GPU-only projects whose [gpu.suite]
(their manifests) says how their own suite runs on one GPU.

    gpu_suite.py list                       the projects, one key a line
    gpu_suite.py carry KEY DEST             (where PyPI is reachable) the files
                                            the step needs, checked by SHA-256,
                                            into DEST (.carry/census/KEY)
    gpu_suite.py sizes [CARRY...]           the bytes that travel to the GPU
                                            machine for each step (the tree and
                                            what that step carries); exit 1
                                            over the device tool's 64 MiB
    gpu_suite.py get KEY FIELD              a field of its [gpu.suite] (lists
                                            one item a line)
    gpu_suite.py outputs KEY OUT.npz        (on the GPU) its [gpu] CASES run
                                            with fixed inputs, the outputs saved
    gpu_suite.py record LOGS                each census-KEY/summary.json of a
                                            make test-gpu run into the census's
                                            results (then census.py doc)
    gpu_suite.py compare KEY DIR            legacy.xml / ccshim.xml (its suite's
                                            JUnit reports on XLA's legacy path
                                            and through ccshim), legacy.npz /
                                            ccshim.npz and report.tsv, compared

compare prints one line a test that differs and a summary line (for a
project with no legacy path on the machine's JAX, ``legacy = false``: its
run through ccshim alone, its CASES' outputs finite); exit 1
when a test that passed on the legacy path does not pass through ccshim,
when the two runs ran different tests or another number than the
selection's, when a forward case's outputs differ by a byte, or when the
report lists none of the project's kernels as ccshim's typed targets on
cuda.  Outputs of cases named grad* are compared and said, not judged:
flash-attn-jax's backward kernel accumulates in no fixed order, and two
runs of one path differ (its own tests judge them with tolerances).
Standard library only, but for ``outputs`` (JAX, NumPy) and ``compare``'s
reading of the .npz files (NumPy).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import manifest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE_RESULTS = pathlib.Path(__file__).resolve().parent / "results"
LIMIT = 64 * 1024 * 1024  # the device tool's limit on the tree plus what is carried


def suites() -> dict[str, dict]:
    """The projects with a [gpu.suite], by key."""
    return {key: p for key, p in manifest.projects().items() if "suite" in p.get("gpu", {})}


def _suite(key: str) -> dict:
    found = suites()
    if key not in found:
        raise SystemExit(f"gpu_suite: no [gpu.suite] for {key!r}; expected one of "
                         f"{', '.join(found)}")
    return found[key]["gpu"]["suite"]


def _fetch_module():
    sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
    import fetch
    return fetch


def carry(key: str, dest: pathlib.Path) -> None:
    """The files of its [gpu.suite] carry (from PyPI, checked), and its
    tests where they come from the repository (a git_sources.tsv entry,
    fetched into the per-user cache with tests/fixtures/fetch.py --git)."""
    fetch = _fetch_module()
    suite = _suite(key)
    dest.mkdir(parents=True, exist_ok=True)
    for f in suite["carry"]:
        target = dest / f["file"]
        if target.is_file() and target.stat().st_size == f["size"]:
            continue
        name = f["file"].split("-")[0].replace("_", "-")
        target.write_bytes(fetch._download({"name": name, **f}))
    if suite["tests"] != "sdist":
        tests = fetch.cache_dir() / suite["tests"] / "tests"
        if not tests.is_dir():
            entry = [e for e in fetch.git_entries() if e["folder"] == suite["tests"]][0]
            raise SystemExit(f"gpu_suite: {tests} is missing: python3 tests/fixtures/fetch.py "
                             f"--git {entry['name']} [A CLONE OF {entry['repository']}]")
        subprocess.run(["rm", "-rf", str(dest / "tests")], check=True)
        subprocess.run(["cp", "-r", str(tests), str(dest / "tests")], check=True)


def tree_bytes() -> int:
    """What of the working tree travels: the files git tracks or does not
    ignore."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=ROOT, capture_output=True,
                           check=True).stdout.split(b"\0")
    return sum((ROOT / n.decode()).stat().st_size for n in names
               if n and (ROOT / n.decode()).is_file())


def declared_bytes(key: str) -> int:
    """What a project's census step carries, by its manifest (its tests are
    a few kB more)."""
    return sum(f["size"] for f in _suite(key)["carry"])


def folder_bytes(path: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# Each step of make test-gpu as it is carried: what it needs of .carry/.
STEPS = {
    "census": [".carry/libffi", ".carry/census"],
    "the rest (build, embedded, jax, mpi4jax, bench, memcheck)":
        [".carry/libffi", ".carry/wheels", ".carry/mpi4jax-0.8.1.post2"],
}


def sizes(out=sys.stdout) -> bool:
    tree = tree_bytes()
    ok = True
    print(f"the tree: {tree / 2**20:.1f} MiB", file=out)
    declared = sum(declared_bytes(k) for k in suites())
    for step, paths in STEPS.items():
        here = sum(folder_bytes(ROOT / p) for p in paths if (ROOT / p).exists())
        if step == "census":
            here = max(here, declared)
        total = tree + here
        fits = total <= LIMIT
        ok &= fits
        print(f"{step}: carry {' '.join(paths)}: {here / 2**20:.1f} MiB, with the tree "
              f"{total / 2**20:.1f} MiB of 64: {'fits' if fits else 'TOO BIG'}", file=out)
    return ok


def _inputs(args, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    for a in args:
        dtype = np.dtype(a.dtype)
        if dtype.kind == "f" or str(a.dtype) == "bfloat16":
            out.append(rng.uniform(1.0, 2.0, a.shape).astype(a.dtype))
        else:
            out.append(rng.integers(0, 4, a.shape).astype(a.dtype))
    return out


def outputs(key: str, out: pathlib.Path) -> None:
    """Runs its [gpu] program's CASES on the GPU with fixed inputs and
    saves each case's outputs (as bytes, whatever their dtype)."""
    project = suites()[key]
    scope: dict = {}
    exec(compile(project["gpu"]["program"], f"{key}'s [gpu] program", "exec"), scope)
    import jax
    import numpy as np
    saved = {}
    for name, (fn, args) in scope["CASES"].items():
        result = jax.block_until_ready(jax.jit(fn)(*_inputs(args)))
        for i, leaf in enumerate(jax.tree_util.tree_leaves(result)):
            a = np.asarray(leaf)
            saved[f"{name}/{i}"] = np.frombuffer(a.tobytes(), np.uint8)
            saved[f"{name}/{i}/shape"] = np.array(a.shape + (a.dtype.itemsize,))
            saved[f"{name}/{i}/dtype"] = np.array(str(a.dtype))
    np.savez(out, **saved)
    out.with_suffix(".json").write_text(json.dumps({
        "device": jax.devices()[0].device_kind, "jax": jax.__version__}) + "\n")
    print(f"{key}: {len(scope['CASES'])} case(s) on {jax.devices()[0].device_kind}")


def junit(path: pathlib.Path) -> dict[str, str]:
    found = {}
    for case in ET.parse(path).iter("testcase"):
        kinds = {child.tag for child in case}
        found[f"{case.get('classname')}::{case.get('name')}"] = (
            "failed" if "failure" in kinds else "error" if "error" in kinds
            else "skipped" if "skipped" in kinds else "passed")
    return found


def _count(found: dict) -> str:
    return ", ".join(f"{sum(v == k for v in found.values())} {k}"
                     for k in ("passed", "failed", "error", "skipped")
                     if any(v == k for v in found.values()))


def _finite(folder: pathlib.Path) -> tuple[int, int]:
    """Of ccshim.npz's float outputs, how many are finite throughout."""
    import numpy as np
    b = np.load(folder / "ccshim.npz")
    finite = total = 0
    for name in b.files:
        if name.endswith(("/shape", "/dtype")) or str(b[name + "/dtype"]) not in (
                "float32", "float64"):
            continue
        total += 1
        finite += bool(np.isfinite(b[name].view(str(b[name + "/dtype"]))).all())
    return finite, total


def compare_alone(key: str, folder: pathlib.Path, out=sys.stdout) -> bool:
    """A project with no legacy path on the machine's JAX ([gpu.suite]
    legacy = false): its suite through ccshim must have run (no collection
    error), its CASES' float outputs must be finite, and the report must
    list its kernels on cuda."""
    suite = _suite(key)
    problems = []
    ours = junit(folder / "ccshim.xml") if (folder / "ccshim.xml").exists() else {}
    if not ours or "error" in ours.values():
        problems.append("its suite did not run through ccshim (no report or an error)")
    cases = ""
    if (folder / "ccshim.npz").exists():
        finite, total = _finite(folder)
        cases = f"; CASES through ccshim: {finite} of {total} float outputs finite"
        if finite != total or not total:
            problems.append("a case's outputs are not finite")
    else:
        problems.append("its CASES did not run through ccshim")
    return _conclude(folder, out, f"{key}: legacy path not run "
                     f"({suite.get('legacy_why', '')}); ccshim {_count(ours)}{cases}",
                     problems, {}, ours, suite)


def _conclude(folder, out, head, problems, legacy, ours, suite) -> bool:
    """The run's verdict: its kernels must be in the report as typed cuda
    targets; its line (HEAD, those targets, the problems) printed, and
    summary.json written beside the run, which `record` puts in the
    census's results.  True when there is no problem."""
    import datetime
    typed = _typed(folder)
    if not typed:
        problems.append("the report lists no typed target of its on cuda")
    line = (f"{head}; through ccshim on cuda: {', '.join(typed) or 'none'}"
            f"{'; ' + '; '.join(problems) if problems else ''}")
    print(line, file=out)
    ran = folder / "ccshim.json"
    where = json.loads(ran.read_text()) if ran.exists() else {}
    (folder / "summary.json").write_text(json.dumps({
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "device": where.get("device"), "jax": where.get("jax"),
        "selection": suite.get("selection"), "ok": not problems, "summary": line,
        "legacy": _count(legacy), "ccshim": _count(ours)}, indent=1) + "\n")
    return not problems


def record(logs: pathlib.Path, results: pathlib.Path = HERE_RESULTS) -> list[str]:
    """Each census-*/summary.json of a make test-gpu run's LOGS into its
    project's results file (dev/census/results/KEY.json) as ``gpu_run``,
    from which docs/census.md's rows are written (census.py doc)."""
    done = []
    for key in suites():
        summary = logs / f"census-{key}" / "summary.json"
        target = results / f"{key}.json"
        if not summary.exists() or not target.exists():
            continue
        data = json.loads(target.read_text())
        data["gpu_run"] = json.loads(summary.read_text())
        target.write_text(json.dumps(data, indent=1) + "\n")
        done.append(key)
    return done


def _typed(folder: pathlib.Path) -> list[str]:
    report = folder / "report.tsv"
    lines = [line.split("\t") for line in report.read_text().splitlines()] \
        if report.exists() else []
    return sorted({f[2] for f in lines if len(f) > 2 and f[1] == "cuda"})


def compare(key: str, folder: pathlib.Path, out=sys.stdout) -> bool:
    suite = _suite(key)
    if suite.get("legacy", True) is False:
        return compare_alone(key, folder, out)
    problems = [f"no {name} (pytest did not finish: over its time?)"
                for name in ("legacy.xml", "ccshim.xml") if not (folder / name).exists()]
    legacy, ours = (junit(folder / name) if (folder / name).exists() else {}
                    for name in ("legacy.xml", "ccshim.xml"))
    if set(legacy) != set(ours):
        problems.append(f"different tests ran: {len(set(legacy) ^ set(ours))} in one run only")
    if "expect_tests" in suite and len(legacy) != suite["expect_tests"]:
        problems.append(f"the selection ran {len(legacy)} tests, expected "
                        f"{suite['expect_tests']}")
    lost = [t for t, v in legacy.items() if v == "passed" and ours.get(t) != "passed"]
    for t in sorted(set(legacy) | set(ours)):
        if legacy.get(t) != ours.get(t):
            print(f"  {t}: legacy {legacy.get(t)}, ccshim {ours.get(t)}", file=out)
    if lost:
        problems.append(f"{len(lost)} test(s) that pass on the legacy path do not through ccshim")
    same = f"{sum(legacy.get(t) == v for t, v in ours.items())} of {len(ours)} alike"
    cases = ""
    if (folder / "legacy.npz").exists() and (folder / "ccshim.npz").exists():
        import numpy as np
        a, b = np.load(folder / "legacy.npz"), np.load(folder / "ccshim.npz")
        fwd_same = fwd = grad_same = grad = 0
        for name in sorted(a.files):
            if name.endswith(("/shape", "/dtype")):
                continue
            alike = name in b.files and a[name].tobytes() == b[name].tobytes()
            if name.split("/")[0].startswith("grad"):
                grad, grad_same = grad + 1, grad_same + alike
            else:
                fwd, fwd_same = fwd + 1, fwd_same + alike
                if not alike:
                    problems.append(f"case output {name} differs between the paths")
        cases = (f"; CASES: forward outputs byte-identical {fwd_same} of {fwd}" +
                 (f", gradients {grad_same} of {grad} (not judged: its backward kernel is not"
                  " deterministic)" if grad else ""))
    return _conclude(folder, out, f"{key}: legacy {_count(legacy)}; ccshim {_count(ours)}; "
                     f"{same}{cases}", problems, legacy, ours, suite)


def main(argv: list[str]) -> int:
    if argv[:1] == ["list"] and len(argv) == 1:
        print("\n".join(suites()))
        return 0
    if argv[:1] == ["carry"] and len(argv) == 3:
        carry(argv[1], pathlib.Path(argv[2]))
        return 0
    if argv[:1] == ["sizes"] and len(argv) == 1:
        return 0 if sizes() else 1
    if argv[:1] == ["get"] and len(argv) == 3:
        value = _suite(argv[1]).get(argv[2])
        if value is None:
            return 1
        print("\n".join(map(str, value)) if isinstance(value, list) else value)
        return 0
    if argv[:1] == ["outputs"] and len(argv) == 3:
        outputs(argv[1], pathlib.Path(argv[2]))
        return 0
    if argv[:1] == ["record"] and len(argv) == 2:
        done = record(pathlib.Path(argv[1]))
        print(f"recorded the GPU runs of {', '.join(done) or 'no project'}; now: "
              "python3 dev/census/census.py doc")
        return 0 if done else 1
    if argv[:1] == ["compare"] and len(argv) == 3:
        return 0 if compare(argv[1], pathlib.Path(argv[2])) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
