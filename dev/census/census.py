"""The census of released legacy JAX extensions: each project's own test
suite through ccshim on today's JAX, against its reference on XLA's legacy
path (dev/census/README.md).

    census.py fetch [PROJECT...] [--git-from CLONE]
                                      its files from PyPI (checked), and a suite
                                      published only in its repository (its tree
                                      hash checked; from CLONE where given), into
                                      the cache
    census.py baseline PROJECT...     its suite on XLA's legacy path of the newest
                                      JAX it allows, into tests/fixtures/projects/
                                      (by hand, once; committed)
    census.py run [--quick] [PROJECT...]
                                      its suite through `ccshim legacy --strict
                                      --report` on each JAX of its [[runs]], what
                                      `ccshim scan` lists of its tree, and for a
                                      GPU-only project its GPU path lowered for
                                      cuda and rewritten: dev/census/results/
    census.py scan [PROJECT...]       `ccshim scan` of each tree anew, into its
                                      results (its suites' runs kept as they are)
    census.py port [PROJECT...]       `ccshim port` of each tree into its results:
                                      the files its patch edits and what it
                                      refused; for a port kept in
                                      dev/census/ports/, that port built by the
                                      project's own build and its suite run
                                      without ccshim on its newest JAX
    census.py doc                     docs/census.md and the README's table, from
                                      the results
    census.py all [--quick]           fetch, run, port, doc (make census)

A PROJECT is a name (dev/census/projects/NAME.toml).  --quick: the rows make
test runs (quick = true).  Exits 1 when a project that runs loses a test its
reference passed that no [[lost]] rule explains, or could not be run.
"""

from __future__ import annotations

import datetime
import fcntl
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.insert(0, str(ROOT / "python"))  # ccshim of this tree (its report's fields)
import manifest  # noqa: E402
import ports  # noqa: E402
import project_ports  # noqa: E402
import project_suites  # noqa: E402
from project_modules import CACHE, fetch as fetcher  # noqa: E402

RESULTS = HERE / "results"
BASELINES = ROOT / "tests" / "fixtures" / "projects"
BUILD = pathlib.Path(os.environ.get("CCSHIM_BUILD_DIR", ROOT / "build")).resolve()
MAKE_TEST_VENVS = {"pinned": ROOT / ".venv", "newest": ROOT / ".venv-newest"}



def scrub(text: str) -> str:
    """Text for the committed results and docs/census.md: this machine's
    places (the cache, the tree, the home folder, temporary folders) named,
    not spelled out."""
    for place, name in ((str(CACHE), "<cache>"), (str(ROOT), "<tree>"),
                        (str(pathlib.Path.home()), "~")):
        text = text.replace(place, name)
    return re.sub(r"/tmp/[^\s'\":]+", "<tmp>", text)


def say(*args) -> None:
    print("census:", *args, flush=True)


# --- what a project needs: its files, a venv, a build ----------------------

def git_source(p: dict) -> dict | None:
    """The git_sources.tsv-style entry of a suite published only in the
    project's repository: [suite] git, the name of a git_sources.tsv entry
    or a table of repository, commit, path and tree."""
    git = p.get("suite", {}).get("git")
    if not git:
        return None
    if isinstance(git, str):
        return fetcher.git_entry(git)
    return {"name": p["name"], "version": p["version"], "folder": p["suite"]["folder"], **git}


def fetch(p: dict, git_from: str | None = None) -> None:
    for f in p.get("files", []):
        entry = {"name": f.get("pypi", p.get("pypi", p["name"])), "version": p["version"],
                 "file": f["file"],
                 "sha256": f["sha256"], "folder": f["folder"], "members": f.get("members", [])}
        if not fetcher.complete(entry, CACHE):
            say(f"fetching {f['file']}")
            fetcher.fetch(entry, CACHE)
    entry = git_source(p)
    if entry is not None and not fetcher.complete(entry, CACHE):
        say(f"fetching {p['key']}'s {entry['path']} at {entry['commit'][:12]} from "
            f"{git_from or entry['repository']}")
        fetcher.fetch_git(entry, CACHE, git_from)
    for name in p.get("port", {}).get("git", []):   # what its kept port's build needs
        entry = fetcher.git_entry(name)
        if not fetcher.complete(entry, CACHE):
            say(f"fetching {name} ({entry['path']}) at {entry['commit'][:12]} from "
                f"{entry['repository']}")
            fetcher.fetch_git(entry, CACHE)


def python_of(version: str) -> str:
    """A Python of that version (3.12) that makes venvs: pyenv's, else on PATH."""
    candidates = []
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip() \
        if shutil.which("pyenv") else ""
    if root:
        candidates += sorted(pathlib.Path(root, "versions").glob(f"{version}*/bin/python{version}"))
    found = shutil.which(f"python{version}")
    if found:
        candidates.append(pathlib.Path(found))
    for c in candidates:
        if subprocess.run([str(c), "-c", "import venv, ensurepip"],
                          capture_output=True).returncode == 0:
            return str(c)
    raise RuntimeError(f"no Python {version} here (pyenv's or python{version} on PATH)")


def venv(python: str, jax: str, pins: list[str]) -> pathlib.Path:
    """A venv of the cache's with JAX ``jax`` and ``pins``, made once: shared
    by every project with the same set."""
    wanted = [f"jax=={jax}", f"jaxlib=={jax}", *pins]
    key = hashlib.sha256("\n".join([python, *wanted]).encode()).hexdigest()
    folder = CACHE / "census-venvs" / f"py{python}-jax{jax}-{key[:10]}"
    stamp = folder / ".ccshim-requirements"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once make it once
        if stamp.exists() and stamp.read_text() == "\n".join(wanted):
            return folder
        say(f"making {folder.name}: {' '.join(wanted)}")
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run([python_of(python), "-m", "venv", str(folder)], check=True)
        pip = subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "install", "-q",
                              "--disable-pip-version-check", *wanted], capture_output=True,
                             text=True)
        if pip.returncode:
            raise RuntimeError(f"pip could not make {folder.name}: {pip.stderr.strip()[-600:]}")
        stamp.write_text("\n".join(wanted))
    return folder


def run_python(p: dict, run: dict) -> pathlib.Path:
    """The Python one of a project's [[runs]] uses."""
    if "venv" in run:
        where = MAKE_TEST_VENVS.get(run["venv"])
        if where is None:
            raise RuntimeError(f"{p['key']}: venv {run['venv']!r}; expected pinned or newest "
                               "(make test's), or python and pip")
        return where / "bin" / "python"
    return venv(run["python"], run["jax"], run.get("pip", [])) / "bin" / "python"


def build(p: dict, abi: str, python: pathlib.Path) -> None:
    """A project built in place in the cache (its [build]: the command its
    own setup runs, e.g. setup.py build_ext --inplace), once per ABI."""
    recipe = p.get("build")
    if not recipe:
        return
    dest = project_suites.cached(p["package"][abi])
    if (dest / ".complete").exists():
        return
    source = project_suites.cached(recipe["from"]) / recipe.get("inner", "")
    work = dest.with_name(dest.name + f".{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work)
    say(f"building {p['key']} for {abi}")
    done = subprocess.run([str(python), *recipe["command"]], cwd=work, capture_output=True,
                          text=True, env={**os.environ, "PATH": f"{python.parent}:"
                                          f"{os.environ['PATH']}"})
    (dest.parent / f"{dest.name}.log").write_text(done.stdout + done.stderr)
    if done.returncode or not list(work.glob(recipe["product"])):
        shutil.rmtree(work, ignore_errors=True)
        raise RuntimeError(f"{p['key']}'s build failed: {(done.stdout + done.stderr)[-800:]}")
    (work / ".complete").write_text(str(python))
    shutil.rmtree(dest, ignore_errors=True)
    work.rename(dest)


# --- running ----------------------------------------------------------------

def _report(path: pathlib.Path) -> dict:
    return {f["target"]: {"typed": f["typed"], "platform": f["platform"]}
            for f in project_suites.report_lines(path)}


def _cause(p: dict, jax: str, message: str) -> dict | None:
    """The [[lost]] rule that explains a test lost on that JAX, if any."""
    for rule in p.get("lost", []):
        if manifest.jax_version(jax) >= manifest.jax_version(rule["since"]) and \
                rule["message"] in message:
            return rule
    return None


def run_suite(p: dict, run: dict, baseline: dict) -> dict:
    python = run_python(p, run)
    abi = project_suites.abi(python)
    build(p, abi, python)
    out = {"jax": run["jax"], "python": abi, "ranks": {}}
    for ranks in p.get("ranks", [1]):
        with tempfile.TemporaryDirectory() as tmp:
            report = pathlib.Path(tmp) / "report.tsv"
            why = {}
            found, tail = project_suites.run(
                p["key"], **project_suites.through_ccshim(report, python, BUILD), ranks=ranks,
                why=why, timeout=p["suite"].get("timeout", 1800))
            kernels = _report(report)
        there = baseline["runs"][str(ranks)]["tests"]
        lost = {}
        for test, outcome in there.items():
            if outcome == "passed" and found.get(test) != "passed":
                message = why.get(test) or ("not run: " + _collection_error(test, tail)
                                            if test not in found else "")
                rule = _cause(p, run["jax"], message)
                lost[test] = {"outcome": found.get(test, "not run"), "message": message,
                              "cause": rule["cause"] if rule else None,
                              "since": rule["since"] if rule else None}
        out["ranks"][str(ranks)] = {
            "counts": project_suites.counts(found), "lost": lost, "kernels": kernels,
            "new_tests": sorted(set(found) - set(there)),
            "missing_targets": sorted(set(p.get("targets", [])) - set(kernels)),
            "tail": tail[-1500:] if lost or not found else ""}
    return out


def _collection_error(test: str, tail: str) -> str:
    """For a test that did not run: the error pytest gave collecting its
    module (the last "E   " line of its "ERROR collecting" section in the
    output's tail), else the tail's last "E" line."""
    parts = test.split("::")[0].split(".")
    paths = {"/".join(parts[:n]) + ".py" for n in range(1, len(parts) + 1)}
    lines = tail.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("_") and any(f"ERROR collecting {path} " in line for path in paths):
            errors = []
            for later in lines[i + 1:]:
                if later.startswith(("_", "=")):
                    break
                if later.startswith("E   "):
                    errors.append(later[4:].strip())
            if errors:
                return f"collection error: {errors[-1]}"[:300]
    others = [line.strip() for line in lines if line.startswith("E ")]
    return (others[-1] if others else "pytest did not collect it")[:300]


def scan(p: dict) -> list:
    """What ccshim scan lists of the project's source tree (its [scan]
    folder of the cache, else its suite's sdist)."""
    folder = p.get("scan") or p.get("suite", {}).get("folder")
    if not folder or not (CACHE / folder).is_dir():
        return []
    done = subprocess.run([str(BUILD / "tools" / "ccshim"), "scan", str(CACHE / folder),
                           "--json"], capture_output=True, text=True, timeout=600)
    try:
        found = json.loads(done.stdout)
    except json.JSONDecodeError:
        return [{"error": (done.stderr or done.stdout).strip()[-300:]}]
    return [{"name": t["name"], "pattern": t.get("name_pattern"), "platform": t["platform"],
             "api_version": t.get("api_version"),
             "defined": (t.get("definition") or {}).get("file"),
             # how it is registered: not a capsule's maker (veros's own helper
             # named register_custom_call_target, pybind11's m.def)
             "via": sorted({r["via"] for r in t.get("registrations", []) if not r.get("offered")})}
            for t in found.get("targets", [])]


def gpu_checks(p: dict) -> dict | None:
    """A GPU-only project's GPU path lowered for cuda on this machine (its
    [gpu] program, in zero-change mode) and rewritten: every typed target
    the kernel its CUDA registration recorded."""
    spec = p.get("gpu")
    if not spec:
        return None
    run = spec.get("run") or p["runs"][0]
    python = run_python(p, run)
    abi = project_suites.abi(python)
    build(p, abi, python)
    package = project_suites.cached(p["package"][abi]) if abi in p.get("package", {}) else None
    env = project_suites.through_ccshim(None, python, BUILD)["env"]
    if package is not None:
        env["PYTHONPATH"] += os.pathsep + str(package)
    done = subprocess.run([str(python), "-m", "ccshim.legacy", "--strict",
                           str(HERE / "gpu_export.py"), p["key"]], capture_output=True,
                          text=True, env=env, timeout=900)
    if done.returncode:
        return {"error": (done.stderr or done.stdout).strip()[-800:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def census_run(p: dict) -> dict:
    result = {"project": p["key"], "status": p["status"], "made": _today(), "runs": [],
              "scan": scan(p)}
    if p["status"] == "runs":
        path = BASELINES / f"{p['key']}.json"
        if not path.exists():
            result["error"] = f"no reference: census.py baseline {p['name']} makes it"
        else:
            baseline = json.loads(path.read_text())
            result["reference"] = {"jax": baseline["jax"], "python": baseline["python"],
                                   "counts": {r: v["counts"] for r, v in
                                              baseline["runs"].items()}}
            for run in p["runs"]:
                try:
                    result["runs"].append(run_suite(p, run, baseline))
                except Exception as e:  # said in the results and the doc
                    result["runs"].append({"jax": run["jax"], "error": f"{type(e).__name__}: "
                                           f"{str(e)[-600:]}"})
    gpu = gpu_checks(p)
    if gpu is not None:
        result["gpu"] = gpu
    return result


def port_tree(p: dict) -> pathlib.Path | None:
    """The project's source tree `ccshim port` reads: its kept port's, else
    its [scan] (or suite) folder's one sdist."""
    if p["key"] in ports.PORTED:
        return project_ports.source_tree(p["key"])
    folder = p.get("scan") or p.get("suite", {}).get("folder")
    if not folder or not (CACHE / folder).is_dir():
        return None
    # an sdist unpacked: its one folder; a repository's tree (klujax's, whose
    # one folder is .github): the folder.  Dot names are the cache's (.complete).
    inside = [d for d in (CACHE / folder).iterdir() if not d.name.startswith(".")]
    return inside[0] if len(inside) == 1 and inside[0].is_dir() else CACHE / folder


def port_build_python(p: dict, run: dict) -> pathlib.Path:
    """The Python a kept port is built with: make test's newest venv, or
    for a project whose build needs more ([port] build_pip: PyBaMM's casadi
    and build backends, pinned), a venv of the run's Python and JAX with
    those."""
    pins = p.get("port", {}).get("build_pip")
    if not pins:
        return project_ports.NEWEST
    return venv(run.get("python", "3.12"), run["jax"], pins) / "bin" / "python"


def port_check(p: dict) -> dict | None:
    """What `ccshim port` makes of the project's tree (the files its patch
    edits, what it refused); for a project whose port is kept
    (dev/census/ports.py), that port built by the project's own build and
    its suite run without ccshim on the newest JAX of its runs."""
    tree = port_tree(p)
    if tree is None:
        return None
    patch, refused = ports.ported(p["key"]) if p["key"] in ports.PORTED else ports.port(tree)
    out = {"files": re.findall(r"^diff --git a/(\S+) ", patch, re.M),
           "refused": [line.split(": not ported: ", 1)[-1] for line in refused.splitlines()
                       if ": not ported: " in line],
           "kept": p["key"] in ports.PORTED}
    if p["key"] in ports.NOT_BUILT:
        out["not_built"] = ports.NOT_BUILT[p["key"]]
    if not out["kept"] or p["status"] != "runs" or "not_built" in out:
        return out
    run = max(p["runs"], key=lambda r: manifest.jax_version(r["jax"]))
    baseline = json.loads((BASELINES / f"{p['key']}.json").read_text())
    out["run"] = {"jax": run["jax"]}
    try:
        if patch != ports.kept(ports.KEPT / f"{p['key']}.patch"):
            raise RuntimeError("its kept patch is stale: python dev/census/ports.py")
        with tempfile.TemporaryDirectory() as tmp:
            site = pathlib.Path(tmp) / "site"
            project_ports.build(project_ports.patched(p["key"], pathlib.Path(tmp)), site,
                                port_build_python(p, run), project=p["key"])
            ran = project_ports.run(p["key"], site, run_python(p, run),
                                    timeout=p["suite"].get("timeout", 1800))
            # on its other rank counts too (mpi4jax on 2), as its reference ran
            more = {n: project_ports.run(p["key"], site, run_python(p, run), ranks=n,
                                         timeout=p["suite"].get("timeout", 1800))
                    for n in p.get("ranks", [1]) if n != 1}
            # each ported kernel named beside the legacy one run by XLA's path
            sides = project_ports.conform(
                p["key"], site, port_build_python(p, run), BUILD / "tools" / "ccshim",
                p.get("port", {}).get("conform", []), pathlib.Path(tmp),
                runs_in=run_python(p, run)) \
                if p.get("port", {}).get("conform") else None
    except Exception as e:  # said in the results and the doc
        out["run"]["error"] = f"{type(e).__name__}: {str(e)[-600:]}"
        return out

    def lost(found: dict, ranks: int) -> list[str]:
        passed = baseline["runs"][str(ranks)]["tests"]
        return sorted(t for t, o in passed.items() if o == "passed" and found.get(t) != "passed")
    found = ran["found"]
    out["run"].update({
        "counts": project_suites.counts(found), "ccshim": ran["ccshim"],
        "lost": lost(found, 1), "calls": ran["calls"], "untyped": ran["untyped"][:5],
        "tail": ran["tail"][-1500:] if not found else ""})
    if sides is not None:
        out["run"]["conform"] = sides
    if more:
        out["run"]["ranks"] = {str(n): {"counts": project_suites.counts(r["found"]),
                                        "lost": lost(r["found"], n), "untyped": r["untyped"][:5]}
                               for n, r in more.items()}
    return out


def port_unexplained(port: dict | None) -> list[str]:
    """What is wrong with a kept port's run: it failed, lost a test its
    reference passed, could import ccshim, or left a call untyped."""
    run = (port or {}).get("run")
    if not run:
        return []
    if run.get("error"):
        return [run["error"]]
    bad = [f"lost {t}" for t in run["lost"]] + [f"untyped: {c}" for c in run["untyped"]]
    bad += [f"conform {name}: {c['status']} {c.get('detail') or ''}".strip()
            for name, c in run.get("conform", {}).items() if c["status"] != "equal"]
    for ranks, r in run.get("ranks", {}).items():
        bad += [f"lost {t} on {ranks} ranks" for t in r["lost"]] + \
            [f"untyped on {ranks} ranks: {c}" for c in r["untyped"]]
    if "No module named 'ccshim'" not in run["ccshim"]:
        bad.append(f"ccshim importable there ({run['ccshim']})")
    return bad


def update(chosen: list, field: str, make, wrong=lambda value: []) -> int:
    """Each chosen project's results with one field made anew by make(p)
    (its suites' runs kept as they are); how many failed, said."""
    failed = 0
    for p in chosen:
        path = RESULTS / f"{p['key']}.json"
        if not path.exists():
            say(f"{p['key']}: no results yet: census.py run {p['name']} makes them")
            failed += 1
            continue
        say(f"{p['key']}: {field}")
        result = json.loads(path.read_text())
        result[field] = json.loads(scrub(json.dumps(make(p))))
        path.write_text(json.dumps(result, indent=1) + "\n")
        for line in wrong(result[field]):
            say(f"  {p['key']}: {field}: {line}")
            failed += 1
    return failed


def _today() -> str:
    return datetime.date.today().isoformat()


def baseline(p: dict) -> None:
    ref = p["reference"]
    python = venv(ref["python"], ref["jax"], ref.get("pip", [])) / "bin" / "python"
    build(p, project_suites.abi(python), python)
    out = BASELINES / f"{p['key']}.json"
    say(f"{p['key']} on XLA's legacy path of JAX {ref['jax']}")
    subprocess.run([str(python), str(ROOT / "tests" / "python" / "project_suites.py"),
                    "baseline", p["key"], str(out)], check=True,
                   env={**os.environ, "CCSHIM_SUITE_TIMEOUT": str(p["suite"].get("timeout", 1800))})


def unexplained(result: dict) -> list[str]:
    bad = []
    if result.get("error"):
        bad.append(result["error"])
    for run in result["runs"]:
        if run.get("error"):
            bad.append(f"JAX {run['jax']}: {run['error']}")
            continue
        for ranks, r in run["ranks"].items():
            bad += [f"JAX {run['jax']}, {ranks} rank(s): {t} ({v['outcome']}: "
                    f"{v['message'][:160]})" for t, v in r["lost"].items() if not v["cause"]]
    return bad


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    verb, rest = argv[0], argv[1:]
    quick = "--quick" in rest
    git_from = None
    if "--git-from" in rest:  # a clone (or a mirror) of the one project named
        i = rest.index("--git-from")
        git_from = rest[i + 1] if i + 1 < len(rest) else None
        rest = rest[:i] + rest[i + 2:]
        if git_from is None:
            print("census: --git-from needs a folder", file=sys.stderr)
            return 2
    names = [a for a in rest if a != "--quick"]
    everything = manifest.projects()
    chosen = [p for p in everything.values()
              if (not names or p["name"] in names) and (not quick or p.get("quick"))]
    unknown = set(names) - {p["name"] for p in everything.values()}
    if unknown:
        print(f"census: no project {', '.join(sorted(unknown))} in {manifest.PROJECTS}",
              file=sys.stderr)
        return 2
    if verb not in ("fetch", "baseline", "run", "scan", "port", "doc", "all"):
        print(f"census: unknown verb {verb!r}\n{__doc__}", file=sys.stderr)
        return 2
    failed = 0
    if verb in ("fetch", "all"):
        for p in chosen:
            try:
                fetch(p, git_from)
            except Exception as e:
                say(f"{p['key']}: could not fetch: {type(e).__name__}: {e}")
                failed += verb == "fetch"
    if verb == "baseline":
        for p in chosen:
            baseline(p)
    if verb in ("run", "all"):
        RESULTS.mkdir(exist_ok=True)
        for p in chosen:
            say(f"{p['key']} ({p['status']})")
            result = json.loads(scrub(json.dumps(census_run(p))))
            old = RESULTS / f"{p['key']}.json"
            kept = json.loads(old.read_text()).get("port") if old.exists() else None
            if kept is not None:
                result["port"] = kept   # census.py port's, made apart from the runs
            (RESULTS / f"{p['key']}.json").write_text(json.dumps(result, indent=1) + "\n")
            for line in unexplained(result):
                say(f"  {p['key']}: {line}")
                failed += 1
    if verb in ("port", "all"):
        failed += update(chosen, "port", port_check, port_unexplained)
    if verb == "scan":
        failed += update(chosen, "scan", scan)
    if verb in ("doc", "all"):
        import report
        report.write(everything, RESULTS)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
