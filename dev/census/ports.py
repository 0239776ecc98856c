"""The patches `ccshim port` makes of the census's projects, kept as data
(dev/census/ports/PROJECT-VERSION.patch, and .refused: what it said it could
not port), so that a reader sees exactly what a maintainer would get.

    python dev/census/ports.py [--check]

ports each project of PORTED from its sdist in the per-user cache (the
manifest's [suite] folder) and writes its two files; --check writes
nothing and exits 1 where a kept file differs from what `ccshim port`
prints now (tests/python/test_port.py checks the same).  Needs a Python
with the ccshim package and libcst (.venv).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import manifest  # noqa: E402

# The projects whose legacy form `ccshim port` ports today (docs/port.md).
PORTED = ("exoplanet-core-0.3.1", "veros-1.7.0", "mpi4jax-0.8.1.post2")
KEPT = HERE / "ports"
# Where a project's suite folder is not its source (veros: its tests come
# from its repository), the sdist dev/setup.sh unpacks into the cache.
SDIST = {"veros-1.7.0": "veros-1.7.0-src/veros-1.7.0"}


def cache() -> pathlib.Path:
    out = subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "fetch.py"),
                          "--where"], capture_output=True, text=True, check=True)
    return pathlib.Path(out.stdout.strip())


def source_tree(project: str) -> pathlib.Path:
    """The project's sdist, unpacked in the cache."""
    if project in SDIST:
        return cache() / SDIST[project]
    suite = manifest.projects()[project]["suite"]
    return cache() / suite["folder"] / suite.get("inner", "")


def port(tree: pathlib.Path) -> tuple[str, str]:
    """(the patch, what it refused) of `python -m ccshim.port tree`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "python"),
                                                      env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-m", "ccshim.port", str(tree)], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ccshim port {tree} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout, done.stderr


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        print(__doc__, file=sys.stderr)
        return 2
    differ = []
    for project in PORTED:
        tree = source_tree(project)
        if not tree.is_dir():
            print(f"{project}: no source tree at {tree} (dev/setup.sh test fetches it)",
                  file=sys.stderr)
            return 1
        patch, refused = port(tree)
        for path, text in ((KEPT / f"{project}.patch", patch),
                           (KEPT / f"{project}.refused", refused)):
            if check:
                if not path.is_file() or path.read_text() != text:
                    differ.append(path.relative_to(ROOT))
            else:
                path.write_text(text)
    for path in differ:
        print(f"{path} differs from what ccshim port prints now: "
              "run python dev/census/ports.py", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
