"""Artifacts of seven JAX releases on the running JAX: each program exported,
serialized and run by its own release (0.4.22, the first whose jax.export
serializes, to 0.7.2; made once by tests/fixtures/make_artifacts.sh with
tests/fixtures/jax_artifacts.py, one venv per release, and committed under
tests/fixtures/jax-artifacts/), read by ccshim,
written at the running JAX's serialization version with its legacy calls
rewritten, run here, and compared with what the exporting release computed.

Today's JAX refuses most of them unaided: from 0.11.2 it reads no
serialization version older than its window (1 and 2: everything up to
0.7.2), and their legacy LAPACK/BLAS targets left jaxlib long ago.  The
legacy kernels are jaxlib 0.4.30's (conftest's old_lapack), the typed ones
the running jaxlib's.
"""

import json
import os
import select
import signal
import subprocess
import sys

import jax
import numpy as np
import pytest

export = pytest.importorskip("jax.export", reason="jax.export does not import in this JAX "
                             f"({jax.__version__})")

import ccshim.export as ce  # noqa: E402
from conftest import BUILD, FIXTURES  # noqa: E402

pytestmark = pytest.mark.usefixtures("x64")

ARTIFACTS = FIXTURES / "jax-artifacts"
RELEASES = ["0.4.22", "0.4.23", "0.4.30", "0.4.35", "0.5.3", "0.6.2", "0.7.2"]
NAMES = ["lu_f32", "lu_c128", "cholesky_f64", "qr_c64", "trsm_f32", "fft_c64", "rfft2_f64",
         "lu_poly_batch_f32", "scan_cholesky_f64"]
# A typed call whose handler changed in jaxlib since: 0.5.3's lapack_strsm_ffi
# passed three buffers, today's handler takes two.  XLA says so; ccshim does
# not rewrite typed calls.
HANDLER_CHANGED = {("0.5.3", "trsm_f32"): "Wrong number of arguments"}


def _case(release, name):
    index = ARTIFACTS / release / "index.json"
    cases = {c["name"]: c for c in json.loads(index.read_text())["cases"]}
    path = ARTIFACTS / release / f"{name}.jax"
    try:
        ce.read(path)
    except ce.ArtifactError as e:
        pytest.skip(f"ccshim on JAX {jax.__version__} does not read JAX {release}'s artifacts "
                    f"({str(e).split(': ', 1)[-1][:160]})")
    return cases[name], path


def _runs(release, case):
    """Per run: (inputs, outputs) as the exporting release recorded them."""
    with np.load(ARTIFACTS / release / f"{case['name']}.npz") as z:
        out = []
        for r in range(case["runs"]):
            pre = f"run_{r}_" if case["runs"] > 1 else ""
            out.append(([z[f"{pre}arr_{i}"] for i in range(case["inputs"])],
                        [z[f"{pre}out_{i}"] for i in range(case["outputs"])]))
        return out


def _same(got, want, what):
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, g.shape, w.shape)
        if w.dtype.kind in "fc":
            rtol = 1e-5 if w.dtype in (np.float32, np.complex64) else 1e-11
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * max(1, np.abs(w).max()),
                                       err_msg=what)
        else:
            np.testing.assert_array_equal(g, w, err_msg=what)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("release", RELEASES)
def test_an_artifact_of_any_release_runs_on_this_jax(release, name, old_lapack, isolated):
    case, path = _case(release, name)
    art = ce.read(path)
    legacy = sorted({c.target for c in art.calls() if c.kind == "legacy"})
    assert legacy == sorted(t for t in case["targets"]
                            if not t.endswith("_ffi") and t != "shape_assertion")
    done = ce.rewrite(path)
    # written at this JAX's serialization version: JAX itself reads it back
    # (symbolic dimensions compare by their text: each read has its own scope)
    assert str(export.deserialize(bytearray(done.data)).in_avals) == str(art.exported.in_avals)
    # the calling convention kept, or raised to the oldest this JAX supports
    lowest = getattr(export, "minimum_supported_calling_convention_version", 0)
    assert done.calling_convention == (case["calling_convention"],
                                       max(case["calling_convention"], lowest))
    typed = sorted(c.target for c in art.calls() if c.kind == "typed")
    if legacy:
        ce.register(done.data, old_lapack.registrations())
    for r, (inputs, want) in enumerate(_runs(release, case)):
        what = f"JAX {release} {name} run {r}"
        try:
            got = (isolated.call(done.data, inputs, release, typed) if typed and not legacy
                   else jax.tree_util.tree_leaves(ce.load(done.data).call(*inputs)))
        except jax.errors.JaxRuntimeError as e:
            if (release, name) in HANDLER_CHANGED:
                assert HANDLER_CHANGED[release, name] in str(e), str(e)
                return
            raise
        except RuntimeError as e:
            if (release, name) in HANDLER_CHANGED and HANDLER_CHANGED[release, name] in str(e):
                return
            raise
        _same(got, want, what)


_CHILD = """
import json, sys, numpy as np, jax
jax.config.update("jax_enable_x64", True)
import ccshim.export as ce
print("ready", flush=True)
for line in sys.stdin:
    src, ins, outs = json.loads(line)
    data = open(src, "rb").read()
    with np.load(ins) as z:
        inputs = [z[f"arr_{i}"] for i in range(len(z.files))]
    try:
        out = jax.tree_util.tree_leaves(ce.load(data).call(*inputs))
    except Exception as e:
        print(json.dumps(f"{type(e).__name__}: {e}"), flush=True)
        continue
    np.savez(outs, *[np.asarray(o) for o in out])
    print(json.dumps(None), flush=True)
"""


class _Isolated:
    """One child Python, kept, that runs artifacts whose custom calls are
    all jaxlib's own typed ones: jaxlib may crash running them (jaxlib 0.6.2
    to 0.9.2 with SciPy 1.17 and NumPy 2.4, which they predate, segfault
    even on their own release's LAPACK artifacts without ccshim: JAX 0.7.2
    on its lu_f32), which is a skip with the signal named, not the end of
    the test run.  A child that died is replaced for the next artifact, so
    each crash is its own artifact's; one child for all of them saves a
    start of JAX per artifact.  Requests are one JSON line each on its
    stdin (the artifact, its inputs and where its outputs go, as files);
    each answer is one JSON line, null or the error's message."""

    def __init__(self, tmp):
        self.tmp, self.child = tmp, None

    def _start(self):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        self.child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True, env=env)
        assert self.child.stdout.readline() == "ready\n", "the artifacts' child did not start"

    def close(self):
        if self.child is not None:
            self.child.stdin.close()
            self.child.wait(timeout=60)

    def call(self, data, inputs, release, typed):
        if self.child is None or self.child.poll() is not None:
            self._start()
        src, ins, outs = (str(self.tmp / f) for f in ("a.jax", "in.npz", "out.npz"))
        with open(src, "wb") as f:
            f.write(data)
        np.savez(ins, *inputs)
        self.child.stdin.write(json.dumps([src, ins, outs]) + "\n")
        self.child.stdin.flush()
        # one line per request, so nothing waits in the pipe's buffer unread
        if not select.select([self.child.stdout], [], [], 300)[0]:
            self.child.kill()
            self.child.wait()
            raise RuntimeError(f"JAX {release}'s artifact ran past 300 s")
        answer = self.child.stdout.readline()
        if not answer:
            status = self.child.wait(timeout=60)
            if status < 0:
                import scipy
                pytest.skip(f"jaxlib {jax.__version__} (with SciPy {scipy.__version__}, NumPy "
                            f"{np.__version__}) dies by {signal.Signals(-status).name} running "
                            f"JAX {release}'s artifact, whose calls are jaxlib's own typed ones "
                            f"({', '.join(typed)}), which ccshim leaves as they are")
            raise RuntimeError(f"the artifacts' child exited with status {status}")
        error = json.loads(answer)
        if error is not None:
            raise RuntimeError(error)
        with np.load(outs) as z:
            return [z[f"arr_{i}"] for i in range(len(z.files))]


@pytest.fixture(scope="module")
def isolated(tmp_path_factory):
    runner = _Isolated(tmp_path_factory.mktemp("isolated"))
    yield runner
    runner.close()


def test_this_jax_alone_refuses_them():
    """What ccshim adds: from JAX 0.11.2, deserialize refuses every one of
    these releases' artifacts (serialization 1 and 2), named as such."""
    path = ARTIFACTS / "0.6.2" / "fft_c64.jax"
    if not path.exists():
        pytest.skip("JAX 0.6.2's artifacts were not made")
    try:
        export.deserialize(bytearray(path.read_bytes()))
    except ValueError as e:
        assert "compatibility window" in str(e)
    else:
        assert tuple(map(int, jax.__version__.split(".")[:3])) < (0, 11, 2), \
            f"JAX {jax.__version__} read a serialization-2 artifact unaided"


def _ccshim(*args):
    return subprocess.run([str(BUILD / "tools" / "ccshim"), *map(str, args)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CCSHIM_PYTHON": sys.executable})


@pytest.mark.parametrize("release, name, left", [("0.6.2", "rfft2_f64", 0),
                                                 ("0.4.23", "lu_f32", 1)])
def test_the_upgrade_command_writes_an_artifact_this_jax_reads(release, name, left, tmp_path):
    case, path = _case(release, name)
    out = tmp_path / "upgraded.jax"
    p = _ccshim("rewrite", "--upgrade", path, out)
    assert p.returncode == 0, p.stderr
    assert f"0 legacy call(s) to 0 target(s) rewritten; {left} custom call(s) left alone" \
        in p.stdout, p.stdout
    cc = case["calling_convention"]
    lowest = getattr(export, "minimum_supported_calling_convention_version", 0)
    assert (f"calling convention {cc} kept" if cc >= lowest else
            f"calling convention {cc} -> {lowest} (exact)") in p.stdout, p.stdout
    upgraded = export.deserialize(bytearray(out.read_bytes()))
    if not left:  # nothing to register: it runs as JAX wrote it
        (inputs, want), = _runs(release, case)
        _same(jax.tree_util.tree_leaves(upgraded.call(*inputs)), want, f"{release} {name}")
    p = _ccshim("rewrite", "--upgrade", path, out, "--only", "lapack_sgetrf")
    assert p.returncode == 2 and "--upgrade rewrites no call" in p.stderr, p.stderr


def test_a_calling_convention_upgrade_that_is_not_exact_is_refused():
    """8 -> 9 needs the platform index of a multi-platform module tagged
    (JAX 0.4.20 to 0.4.23 tagged it; test_export has such artifacts run):
    one whose main has no tagged platform index (here a one-platform module
    said to be for two) is refused with that named, not written wrong."""
    import dataclasses
    _, path = _case("0.4.22", "fft_c64")
    if getattr(export, "minimum_supported_calling_convention_version", 0) <= 8:
        pytest.skip(f"JAX {jax.__version__} still supports calling convention 8")
    art = ce.read(path)
    art.exported = dataclasses.replace(art.exported, platforms=("cpu", "cuda"))
    with pytest.raises(ce.ArtifactError, match=r"whose main does not tag its platform index "
                                               r"argument jax\.global_constant"):
        ce.rewrite(art.to_bytes("export"))


def test_the_committed_artifacts_name_no_path_of_the_machine_that_made_them():
    """JAX writes each operation's source file into a program's locations:
    the generator runs by a relative name, so that no absolute path of the
    machine that made the fixtures is committed."""
    import re
    absolute = re.compile(rb"(?<![A-Za-z0-9_.:/])/(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+\.py\b")
    found = {}
    for path in sorted(FIXTURES.rglob("*.jax")):
        hits = sorted(set(absolute.findall(path.read_bytes())))
        if hits:
            found[str(path.relative_to(FIXTURES))] = hits[:3]
    assert not found, found
