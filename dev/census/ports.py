"""The patches `ccshim port` makes of the census's projects, kept as data
(dev/census/ports/PROJECT-VERSION.patch, and .refused: what it said it could
not port), so that a reader sees exactly what a maintainer would get.

    python dev/census/ports.py [--check]

ports each project of PORTED from its sdist in the per-user cache (the
manifest's [suite] folder) and writes its two files; --check writes
nothing and exits 1 where a kept file differs from what `ccshim port`
prints now (tests/python/test_port.py checks the same), or where `ccshim port`
of the ported tree prints anything.  Needs a Python
with the ccshim package and libcst (.venv).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "python"))
from project_ports import TREES, side_by_side, source_tree  # noqa: E402

# The projects whose legacy form `ccshim port` ports today (docs/port.md).
PORTED = ("celerite2-0.3.2", "exoplanet-core-0.3.1", "jax-finufft-0.1.0", "jaxbind-1.2.1",
          "kepler-jax-371dca9", "mpi4jax-0.8.1.post2", "planet-harmonica-0.1.1",
          "pybamm-26.10.1.1", "sphericart-jax-1.0.5", "tfc-1.4.0", "veros-1.7.0")
# Kept ports not built here, and why.
NOT_BUILT: dict[str, str] = {
    "jax-finufft-0.1.0": "its build fetches CPM.cmake and findFFTW from GitHub as it "
                         "configures, which the census's machines cannot reach, and its suite "
                         "cannot pass without ccshim on a JAX the port targets (its tests call "
                         "jax.experimental.enable_x64, gone from JAX 0.9.0); built and run by "
                         "hand once, with both given from copies (docs/port.md, Proof)",
}
KEPT = HERE / "ports"


def port(*trees: pathlib.Path) -> tuple[str, str]:
    """(the patch, what it refused) of `python -m ccshim.port TREE...`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "python"),
                                                      env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-m", "ccshim.port", *map(str, trees)], env=env,
                          capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"ccshim port {' '.join(map(str, trees))} failed ({done.returncode}):\n"
                         f"{done.stderr.decode(errors='replace')}")
    # bytes as printed: a CRLF source's lines keep their CR (tfc's)
    return done.stdout.decode(), done.stderr.decode()


def ported(project: str) -> tuple[str, str]:
    """(the patch, what it refused) of `ccshim port` on the project's
    tree(s), each a copy under its name where it has several."""
    if project not in TREES:
        return port(source_tree(project))
    with tempfile.TemporaryDirectory() as tmp:
        return port(*side_by_side(project, pathlib.Path(tmp)))


def kept(path: pathlib.Path) -> str | None:
    """A kept file's text, its line ends as they are."""
    return path.read_bytes().decode() if path.is_file() else None


# The page that shows one project's port whole (docs/port-example.md).
EXAMPLE = "celerite2-0.3.2"
EXAMPLE_DOC = ROOT / "docs" / "port-example.md"
EXAMPLE_TEXT = """\
# One project's port, whole: celerite2 0.3.2

*Written by `python dev/census/ports.py` from `dev/census/ports/{key}.patch`, what `ccshim
port` prints for celerite2 0.3.2's sdist, unedited (less the header it adds,
`xla_legacy_call.h`, which is `python/ccshim/port/legacy_call.h`). Do not edit by hand.*

celerite2 0.3.2 (2023-02) is a census project: twelve CPU kernels in a pybind11 module whose
functions return capsules (`xla_ops.factor()`), registered with
`jax.lib.xla_client.register_custom_call_target` under names its `_build_op(name, spec)`
is called with, lowered with `mlir.custom_call`. `ccshim port` refused nothing. Built by its
own build from the patched tree, its suite passes in a Python where ccshim cannot be
imported, on JAX 0.12.0.1: 31 passed, as on its reference, and XLA's dump shows all 436 of
its custom calls typed (docs/port.md, Proof).

What the patch leaves to a person:

- Its xla_ops.cpp says it is generated from a template ("NOTE: Changes
  should be made to the template"): the handlers and the changed `m.def` lines belong in
  that template too, or the next generation undoes them.
- `jax` joins the build requirements unpinned: pin it to the oldest JAX the project
  supports, whose headers then set the oldest jaxlib that loads the handlers.
- The registration is `jax.ffi.register_ffi_target`, which JAX has since 0.4.31: the
  project's own lower bound on JAX moves there.
- The JVP rule's `None` tangents become `ad.Zero(...)` through one generator expression;
  a maintainer may prefer to write the zeros where they are made.
- Nothing of ccshim remains; the kernels' bodies are not touched.

```diff
{patch}```
"""


def example(patch: str) -> str:
    """docs/port-example.md's text: the example's patch less the header it
    adds."""
    files = patch.split("diff --git ")
    kept = [f for f in files[1:] if not f.split(" ", 1)[0].endswith("/xla_legacy_call.h")]
    return EXAMPLE_TEXT.format(key=EXAMPLE, patch="".join("diff --git " + f for f in kept))


def again(project: str, patch: str) -> str:
    """What `ccshim port` prints on the project's tree(s) with patch
    applied: nothing, on a port that is whole."""
    with tempfile.TemporaryDirectory() as tmp:
        trees = side_by_side(project, pathlib.Path(tmp) / "tree")
        base = trees[0].parent if project in TREES else trees[0]
        (pathlib.Path(tmp) / "port.patch").write_text(patch)
        subprocess.run(["git", "apply", str(pathlib.Path(tmp) / "port.patch")], cwd=base,
                       check=True)
        return port(*trees)[0]


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        print(__doc__, file=sys.stderr)
        return 2
    differ, whole = [], True
    for project in PORTED:
        try:
            patch, refused = ported(project)
        except FileNotFoundError as e:
            print(f"{project}: no source tree ({e.filename}): census.py fetch gets it",
                  file=sys.stderr)
            return 1
        outputs = [(KEPT / f"{project}.patch", patch), (KEPT / f"{project}.refused", refused)]
        if project == EXAMPLE:
            outputs.append((EXAMPLE_DOC, example(patch)))
        for path, text in outputs:
            if check:
                if kept(path) != text:
                    differ.append(path.relative_to(ROOT))
            else:
                path.write_bytes(text.encode())
        if check and again(project, patch):
            print(f"{project}: ccshim port of its ported tree prints a patch, not nothing",
                  file=sys.stderr)
            whole = False
    for path in differ:
        print(f"{path} differs from what ccshim port prints now: "
              "run python dev/census/ports.py", file=sys.stderr)
    return 1 if differ or not whole else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
