"""The generated port beside the maintainers' own (issue 42, item 3): a kept
port of a census project and the release in which its maintainers ported
the same kernels to the typed FFI by hand, each run on the project's suite
without ccshim and timed per call in a jitted function, in processes of
their own (the two builds' modules have the same names), interleaved.

    python dev/census/hand_ports.py          (writes dev/census/hand-ports.json)

celerite2: the kept port of 0.3.2 (dev/census/ports/) and 0.3.3, its
maintainers' typed-FFI release (its cp312 wheel from PyPI, checked by
SHA-256, in the per-user cache).  Its JAX tests did not change between the
two (python/test/jax at v0.3.2 and at its repository's head are the same
files), so the census's copy of them is its later suite too.  exoplanet-core
0.4 is not on PyPI, and mpi4jax 0.9's suite asks for its own 0.9 API: not
compared here.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT / "tests" / "python"), str(HERE)]
import project_ports  # noqa: E402
import project_suites  # noqa: E402
from project_modules import cached  # noqa: E402

HAND = {
    "celerite2-0.3.2": {
        "release": "celerite2 0.3.3",
        "file": "celerite2-0.3.3-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
        "sha256": "151aa79ed968c41105858d9e06914dbf37e9e77661ac056c68203dacaab97cd7",
        "index": "https://pypi.org/simple/celerite2/",
    },
}

# A jitted Gaussian-process log likelihood through celerite2's ops (factor
# and solve in each call), timed per call: the median of 9 rounds.
TIMING = r"""
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
f(x).block_until_ready()
rounds = []
for r in range(9):
    t0 = time.perf_counter()
    for _ in range(calls):
        v = f(x)
    v.block_until_ready()
    rounds.append((time.perf_counter() - t0) / calls * 1e6)
print(statistics.median(rounds), repr(float(v)))
"""


def wheel(spec: dict) -> pathlib.Path:
    """The hand port's wheel in the per-user cache, checked."""
    folder = cached("hand-ports")
    path = folder / spec["file"]
    if not path.exists() or hashlib.sha256(path.read_bytes()).hexdigest() != spec["sha256"]:
        folder.mkdir(parents=True, exist_ok=True)
        page = urllib.request.urlopen(spec["index"], timeout=60).read().decode()
        start = page.index(spec["file"])
        href = page.rfind('href="', 0, start) + 6
        url = page[href:page.index('"', href)].split("#")[0]
        data = urllib.request.urlopen(url, timeout=300).read()
        if hashlib.sha256(data).hexdigest() != spec["sha256"]:
            raise RuntimeError(f"{spec['file']}: SHA-256 is not the expected one")
        path.write_bytes(data)
    return path


def timed(site: pathlib.Path, n: int, calls: int) -> tuple[float, str]:
    env = project_ports.environment(site, project_ports.NEWEST, pathlib.Path(os.devnull))
    env.pop("XLA_FLAGS")
    done = subprocess.run([str(project_ports.NEWEST), "-S", "-c", TIMING, str(n), str(calls)],
                          env=env, capture_output=True, text=True, timeout=600, check=True)
    us, value = done.stdout.split()
    return float(us), value


def compare(project: str, spec: dict, tmp: pathlib.Path) -> dict:
    port = tmp / "port-site"
    project_ports.build(project_ports.patched(project, tmp), port, project=project)
    hand = tmp / "hand-site"
    subprocess.run([str(project_ports.NEWEST), "-m", "pip", "install", "-q", "--no-deps",
                    "--target", str(hand), str(wheel(spec))], check=True)
    out = {"release": spec["release"], "suite": {}, "us_per_call": {}}
    for name, site in (("generated", port), ("hand", hand)):
        ran = project_ports.run(project, site, project_ports.NEWEST)
        out["suite"][name] = {"counts": project_suites.counts(ran["found"]),
                              "calls": sum(ran["calls"].values()),
                              "untyped": len(ran["untyped"]), "ccshim": ran["ccshim"]}
    for n, calls in ((64, 2000), (4096, 200)):
        samples: dict[str, list] = {"generated": [], "hand": []}
        values = set()
        for _ in range(5):       # interleaved: a slow moment falls on both
            for name, site in (("generated", port), ("hand", hand)):
                us, value = timed(site, n, calls)
                samples[name].append(us)
                values.add(value)
        out["us_per_call"][str(n)] = {k: round(statistics.median(v), 3)
                                      for k, v in samples.items()}
        out["us_per_call"][str(n)]["same_value"] = len(values) == 1
    return out


def main() -> int:
    results = {}
    for project, spec in HAND.items():
        with tempfile.TemporaryDirectory() as tmp:
            results[project] = compare(project, spec, pathlib.Path(tmp))
        print(project, json.dumps(results[project]))
    (HERE / "hand-ports.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
