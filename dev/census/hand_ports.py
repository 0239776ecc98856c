"""The generated port beside the maintainers' own (issue 42, item 3): a kept
port of a census project and the release in which its maintainers ported
the same kernels to the typed FFI by hand, each run on the project's later
suite without ccshim and timed per call in a jitted function, in processes
of their own (the two builds' modules have the same names), interleaved.

    python dev/census/hand_ports.py [PROJECT...]   (writes dev/census/hand-ports.json)

celerite2: the kept port of 0.3.2 (dev/census/ports/) and 0.3.3, its
maintainers' typed-FFI release (its cp312 wheel from PyPI, checked by
SHA-256, in the per-user cache).  Its JAX tests did not change between the
two (python/test/jax at v0.3.2 and at its repository's head are the same
files), so the census's copy of them is its later suite too.

mpi4jax: the kept port of 0.8.1.post2 and 0.9.1.post2, whose nanobind C++
bridge replaced the Cython one (its sdist, built by its own setup.py as the
census builds 0.8.1, with nanobind and the setuptools it asks for put on
the build's path); its suite is 0.9.1.post2's, on 1 and 2 ranks.  A test
of it that reaches for 0.9's own modules (its MPI ABI check, the logging
switch's new module) cannot pass on 0.8.1's API: each test that differs is
listed with pytest's message.

exoplanet-core: the kept port of 0.3.1 and 0.4.0, whose ffi.h handlers
replaced the legacy ones: not on PyPI (its newest release there is 0.3.1),
so from its repository's v0.4.0 tag (tests/fixtures/git_sources.tsv, its
tree hash checked; --git-from CLONE reads a clone or mirror of it), built
by its own build (scikit-build-core) with the version its tag gives; its
suite is 0.4.0's tests/.

    python dev/census/hand_ports.py exoplanet-core-0.3.1 --git-from CLONE
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT / "tests" / "python"), str(HERE)]
import project_ports  # noqa: E402
import project_suites  # noqa: E402
from project_modules import CACHE, cached, fetch as fetcher  # noqa: E402

GIT_FROM: dict[str, str] = {}     # git entry -> the clone --git-from gave

CELERITE_TIMING = r"""
import sys, time, statistics
import numpy as np
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
import celerite2.jax as cj
from celerite2.jax import terms
N, calls = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
t = np.sort(rng.uniform(0, 10, N)); y = np.sin(t) + 0.1 * rng.normal(size=N)
def ll(log_sigma):
    gp = cj.GaussianProcess(terms.SHOTerm(sigma=jnp.exp(log_sigma), rho=1.0, Q=0.5), t=t,
                            diag=0.1)
    return gp.log_likelihood(y)
f = jax.jit(ll)
x = jnp.float64(0.1)
"""

# A jitted allreduce of N float32 (1 rank: MPI's own call, then the copy).
MPI_TIMING = r"""
import sys, time, statistics
import numpy as np
import jax, jax.numpy as jnp
from mpi4py import MPI
import mpi4jax
N, calls = int(sys.argv[1]), int(sys.argv[2])
f = jax.jit(lambda a: mpi4jax.allreduce(a, op=MPI.SUM))
x = jnp.arange(N, dtype=jnp.float32)
"""

# A jitted Kepler solve of N orbits (exoplanet_core.jax.ops.kepler).
KEPLER_TIMING = r"""
import sys, time, statistics
import numpy as np
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
from exoplanet_core.jax import ops
N, calls = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
M = jnp.asarray(rng.uniform(-np.pi, np.pi, N)); ecc = jnp.asarray(rng.uniform(0, 0.9, N))
f = jax.jit(lambda m: ops.kepler(m, ecc))
x = M
"""

# Processes per build and size, interleaved.  Their times on this shared
# machine spread by up to 2x from one process to the next: the median and
# the range are kept, the range's low end being the least disturbed.
SAMPLES = 11

# Per call, the median of 9 rounds; the value printed so that the two
# builds' results are compared.
LOOP = r"""
r = f(x); jax.block_until_ready(r)
rounds = []
for _ in range(9):
    t0 = time.perf_counter()
    for _ in range(calls):
        r = f(x)
    jax.block_until_ready(r)
    rounds.append((time.perf_counter() - t0) / calls * 1e6)
v = np.asarray(r)
print(statistics.median(rounds), v.dtype.str + ":" + v.tobytes().hex()[:4096])
"""

MPI4JAX_09 = "hand-ports/mpi4jax-0.9.1.post2-src"

# Each maintainers' release: a downloads.tsv-style entry of PyPI's (fetched
# and unpacked by tests/fixtures/fetch.py, its SHA-256 checked), or a
# git_sources.tsv entry's name.
HAND = {
    "celerite2-0.3.2": {
        "release": "celerite2 0.3.3",
        "pypi": {"name": "celerite2", "version": "0.3.3", "file":
                 "celerite2-0.3.3-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
                 "sha256": "151aa79ed968c41105858d9e06914dbf37e9e77661ac056c68203dacaab97cd7",
                 "folder": "hand-ports/celerite2-0.3.3-cp312", "members": []},
        "timing": CELERITE_TIMING, "sizes": ((64, 2000), (4096, 200)), "ranks": (1,),
    },
    "exoplanet-core-0.3.1": {
        "release": "exoplanet-core 0.4.0",
        "git": "exoplanet-core",
        "build_env": {"SETUPTOOLS_SCM_PRETEND_VERSION": "0.4.0"},
        "suite": ("hand-ports/exoplanet-core-0.4.0-src", "", ["tests"]),
        "timing": KEPLER_TIMING, "sizes": ((64, 5000), (65536, 200)), "ranks": (1,),
    },
    "mpi4jax-0.8.1.post2": {
        "release": "mpi4jax 0.9.1.post2",
        "pypi": {"name": "mpi4jax", "version": "0.9.1.post2", "file": "mpi4jax-0.9.1.post2.tar.gz",
                 "sha256": "1089ab81b22edf7273e5c94cfac4dadb4fc4b2d691af87d6eff85479c8f15a0a",
                 "folder": MPI4JAX_09, "members": []},
        "build_with": ["nanobind==2.9.2", "setuptools==82.0.1"],
        "suite": (MPI4JAX_09, "mpi4jax-0.9.1.post2", ["pyproject.toml", "tests", "examples"]),
        "timing": MPI_TIMING, "sizes": ((16, 5000), (1 << 20, 200)), "ranks": (1, 2),
    },
}


def hand_site(spec: dict, tmp: pathlib.Path) -> pathlib.Path:
    """Where the maintainers' release is importable from: its wheel
    unpacked in the cache (as the census's packages are), or its sdist or
    tagged tree built by its own build into tmp."""
    if "git" in spec:
        entry = fetcher.git_entry(spec["git"])
        fetcher.fetch_git(entry, CACHE, GIT_FROM.get(spec["git"]))
        source = cached(entry["folder"])
    else:
        fetcher.fetch(spec["pypi"], CACHE)
        source = cached(spec["pypi"]["folder"])
        if spec["pypi"]["file"].endswith(".whl"):
            return source
        source = source / spec["suite"][1]
    site = tmp / "hand-site"
    build(spec, source, site, tmp)
    return site


def build(spec: dict, source: pathlib.Path, site: pathlib.Path, tmp: pathlib.Path) -> None:
    """A copy of the maintainers' tree built by its own build into site,
    without build isolation (the build venv has its requirements, and
    spec's build_with are put on its path), as project_ports.build builds a
    port."""
    python = str(project_ports.NEWEST)
    env = {**os.environ, **spec.get("build_env", {}),
           "PATH": os.pathsep.join([str(project_ports.NEWEST.parent), os.environ["PATH"]])}
    if spec.get("build_with"):
        tools = tmp / "build-tools"
        subprocess.run([python, "-m", "pip", "install", "-q", "--target", str(tools),
                        *spec["build_with"]], check=True)
        env["PYTHONPATH"] = str(tools)
    tree = tmp / "hand-tree"
    shutil.copytree(source, tree)
    done = subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps",
                           "--no-build-isolation", "--target", str(site), str(tree)],
                          env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise RuntimeError(f"{spec['release']}: its build failed:\n" +
                           (done.stdout + done.stderr)[-3000:])


def timed(spec: dict, site: pathlib.Path, n: int, calls: int) -> tuple[float, str]:
    env = project_ports.environment(site, project_ports.NEWEST, pathlib.Path(os.devnull))
    env.pop("XLA_FLAGS")
    done = subprocess.run([str(project_ports.NEWEST), "-S", "-c", spec["timing"] + LOOP,
                           str(n), str(calls)],
                          env=env, capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise RuntimeError(f"timing {site.name} failed:\n{done.stderr[-2000:]}")
    us, value = done.stdout.split()
    return float(us), value


def suites(project: str, spec: dict, sites: dict) -> dict:
    """The later suite on each build, on each of its rank counts: counts,
    calls, and each test whose outcome differs between the two builds."""
    out: dict = {}
    for ranks in spec["ranks"]:
        runs, why = {}, {}
        for name, site in sites.items():
            why[name] = {}
            ran = project_ports.run(project, site, project_ports.NEWEST, ranks=ranks,
                                    suite=spec.get("suite"), why=why[name])
            runs[name] = ran
            out.setdefault(name, {})[f"{ranks} rank{'s' if ranks > 1 else ''}"] = {
                "counts": project_suites.counts(ran["found"]),
                "calls": sum(ran["calls"].values()), "untyped": len(ran["untyped"]),
                "ccshim": ran["ccshim"]}
        tests = set(runs["generated"]["found"]) | set(runs["hand"]["found"])
        # pytest's messages name the builds' temporary folders: by their role
        shown = {name: {t: m.replace(str(site), f"<{name} build>") for t, m in why[name].items()}
                 for name, site in sites.items()}
        differ = {t: {name: [runs[name]["found"].get(t, "absent"), shown[name].get(t, "")]
                      for name in sites}
                  for t in sorted(tests)
                  if runs["generated"]["found"].get(t) != runs["hand"]["found"].get(t)}
        out.setdefault("differ", {})[str(ranks)] = differ
    return out


def compare(project: str, spec: dict, tmp: pathlib.Path) -> dict:
    port = tmp / "port-site"
    project_ports.build(project_ports.patched(project, tmp), port, project=project)
    hand = hand_site(spec, tmp)
    sites = {"generated": port, "hand": hand}
    out = {"release": spec["release"], "suite": suites(project, spec, sites),
           "us_per_call": {}}
    for n, calls in spec["sizes"]:
        samples: dict[str, list] = {"generated": [], "hand": []}
        values = set()
        for _ in range(SAMPLES):  # interleaved: a slow moment falls on both
            for name, site in sites.items():
                us, value = timed(spec, site, n, calls)
                samples[name].append(us)
                values.add(value)
        out["us_per_call"][str(n)] = {k: round(statistics.median(v), 3)
                                      for k, v in samples.items()}
        out["us_per_call"][str(n)]["range"] = {k: [round(min(v), 3), round(max(v), 3)]
                                               for k, v in samples.items()}
        out["us_per_call"][str(n)]["same_value"] = len(values) == 1
    return out


def main(argv: list[str]) -> int:
    if "--git-from" in argv:       # a clone or mirror of the git entries' repository
        i = argv.index("--git-from")
        if i + 1 >= len(argv):
            print("hand_ports: --git-from needs a folder", file=sys.stderr)
            return 2
        GIT_FROM.update({spec["git"]: argv[i + 1] for spec in HAND.values() if "git" in spec})
        argv = argv[:i] + argv[i + 2:]
    unknown = [a for a in argv if a not in HAND]
    if unknown:
        print(f"hand_ports: no hand port of {', '.join(unknown)}; there are "
              f"{', '.join(HAND)}", file=sys.stderr)
        return 2
    path = HERE / "hand-ports.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    for project in argv or list(HAND):
        with tempfile.TemporaryDirectory() as tmp:
            results[project] = compare(project, HAND[project], pathlib.Path(tmp))
        print(project, json.dumps(results[project]))
        path.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
