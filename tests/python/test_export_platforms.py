"""Multi-platform artifacts ask each platform only for what its branch runs.

A program exported for several platforms picks each platform's lowering
with stablehlo.case ops on its platform index, and JAX and XLA specialize it
for the platform that runs it: a legacy call in the CPU branch never runs
on a GPU.  ``needed``, ``register``, ``load`` and ``rewrite --check`` follow
the index (ccshim._branches) and ask a platform only for the targets of its
own branch.  Checked on the CPU, no GPU needed: what a cuda machine would be
asked for is what ``platform="cuda"`` asks for.
"""

import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

export = pytest.importorskip("jax.export", reason="jax.export does not import in this JAX "
                             "(JAX 0.5 needs absl-py for it, which it does not install)")

import ccshim.export as ce
from conftest import BUILD, FIXTURES, ROOT

S = jax.ShapeDtypeStruct
CASES_2023 = FIXTURES / "jax-2023"
KERNELS = BUILD / "tests" / "libccshim_pytest_kernels.so"


def _ccshim(*args, cwd=None):
    """The ccshim command of this build, its Python this one."""
    return subprocess.run([str(BUILD / "tools" / "ccshim"), *map(str, args)], capture_output=True,
                          text=True, timeout=300, cwd=cwd,
                          env={**os.environ, "CCSHIM_PYTHON": sys.executable})


def _readable_2023(name):
    try:
        ce.read(CASES_2023 / f"{name}.jax")
    except ce.ArtifactError as e:
        pytest.skip(f"ccshim on JAX {jax.__version__} does not read JAX 0.4.23's artifacts "
                    f"({str(e).split(': ', 1)[-1][:160]})")


@pytest.mark.parametrize("name, target, other", [("trsm_f32_cpu_cuda", "blas_strsm", "cuda"),
                                                 ("lu_f32_cpu_tpu", "lapack_sgetrf", "tpu")])
def test_a_2023_artifact_asks_its_gpu_or_tpu_for_nothing(name, target, other):
    """JAX 0.4.23's (cpu, cuda) triangular solve and (cpu, tpu) LU: the
    legacy call is in the CPU branch only (the other platform's branch is
    XLA's own op), so the other platform needs nothing registered and
    loads it; the CPU still names its target."""
    _readable_2023(name)
    prefix = f"plat{other}."
    done = ce.rewrite(CASES_2023 / f"{name}.jax", prefix=prefix)
    typed = f"{prefix}v2.{target}"
    assert done.platforms == ("cpu", other)
    assert [(t["typed"], t["platforms"]) for t in done.targets] == [(typed, ["cpu"])]
    assert ce.needed(done.data, prefix=prefix) == [
        {"typed": typed, "legacy": target, "api_version": 2, "platforms": ["cpu"]}]
    if other == "cuda":  # (ccshim runs no kernels on a TPU: there it is never asked)
        assert ce.needed(done.data, prefix=prefix, platform=other) == []
        assert ce.load(done.data, prefix=prefix, platform=other).platforms == ("cpu", other)
        assert dict(ce.register(done.data, {}, prefix=prefix, platform=other)) == {}
    with pytest.raises(ce.ArtifactError, match=rf"{typed} on cpu \(the legacy {target}"):
        ce.load(done.data, prefix=prefix, platform="cpu")
    # What the legacy artifact's calls say, before any rewrite (the TPU
    # branch calls XLA's own LuDecomposition).
    calls = ce.read(CASES_2023 / f"{name}.jax").calls()
    assert [(c.target, c.platforms) for c in calls if c.kind == "legacy"] == [
        (target, ("cpu",))]


def _legacy(name, shape, api, **kw):
    return jax.ffi.ffi_call(name, S(shape, np.float32), custom_call_api_version=api, **kw)


@jax.jit
def _per_platform(x):
    # jitted apart, so that the platform index reaches it through a call
    return jax.lax.platform_dependent(x, cpu=_legacy("bp_scale_v2", (256,), 2),
                                      cuda=_legacy("bp_gpu_only", (256,), 2,
                                                   legacy_backend_config=b"\x01\x02"))


def _program(x):
    return _per_platform(x) + _legacy("bp_scale_v1", (256,), 1)(x)


TARGETS = ("bp_scale_v2", "bp_gpu_only", "bp_scale_v1")


@pytest.fixture(scope="module")
def per_branch(tmp_path_factory):
    """A (cpu, cuda) program whose legacy calls differ per branch: one in
    the CPU branch, one in the CUDA branch (reached through a call to a
    private function that takes the platform index), one on both."""
    exp = export.export(jax.jit(_program), platforms=("cpu", "cuda"), disabled_checks=[
        export.DisabledSafetyCheck.custom_call(t) for t in TARGETS])(S((256,), np.float32))
    path = tmp_path_factory.mktemp("branches") / "per_branch.jax"
    path.write_bytes(exp.serialize())
    return path


def test_each_call_knows_the_platforms_that_reach_it(per_branch):
    calls = {c.target: c.platforms for c in ce.read(per_branch).calls()}
    assert calls == {"bp_scale_v2": ("cpu",), "bp_gpu_only": ("cuda",),
                     "bp_scale_v1": ("cpu", "cuda")}
    # one platform asked for: the calls of the others say so
    calls = {c.target: c.platforms for c in ce.read(per_branch, platform="cuda").calls()}
    assert calls == {"bp_scale_v2": (), "bp_gpu_only": ("cuda",), "bp_scale_v1": ("cuda",)}


def test_needed_register_and_load_ask_each_platform_for_its_own_branch(per_branch, kernels):
    done = ce.rewrite(per_branch, prefix="bp.")
    assert {t["legacy"]: t["platforms"] for t in done.targets} == {
        "bp_scale_v2": ["cpu"], "bp_gpu_only": ["cuda"], "bp_scale_v1": ["cpu", "cuda"]}
    on = {p: sorted(t["legacy"] for t in ce.needed(done.data, prefix="bp.", platform=p))
          for p in ("cpu", "cuda")}
    assert on == {"cpu": ["bp_scale_v1", "bp_scale_v2"], "cuda": ["bp_gpu_only", "bp_scale_v1"]}
    for p, missing, absent in (("cpu", "bp.v2.bp_scale_v2", "bp_gpu_only"),
                               ("cuda", "bp.v2.bp_gpu_only", "bp_scale_v2")):
        with pytest.raises(ce.ArtifactError) as e:
            ce.load(done.data, prefix="bp.", platform=p)
        assert f"{missing} on {p}" in str(e.value) and absent not in str(e.value), str(e.value)
    # The CPU's kernels alone serve the CPU; the GPU-only target is never asked for.
    reg = ce.register(done.data, {"bp_scale_v2": kernels.scale_v2,
                                  "bp_scale_v1": kernels.scale_v1}, prefix="bp.")
    assert sorted(reg) == ["bp.v1.bp_scale_v1", "bp.v2.bp_scale_v2"] and reg.platforms == ["cpu"]
    x = np.arange(256, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(ce.load(done.data, prefix="bp.").call(x)), 4 * x)


def test_check_runs_the_cpu_branch_with_the_cpu_kernels_alone(per_branch, kernels, tmp_path):
    """rewrite --check on the CPU: the CUDA branch's target needs no kernel,
    here (ce.check) and from the command line (a kernel module without it)."""
    cpu_kernels = {"bp_scale_v2": kernels.scale_v2, "bp_scale_v1": kernels.scale_v1}
    out = tmp_path / "typed.jax"
    out.write_bytes(ce.rewrite(per_branch, prefix="bpc.").data)
    report = ce.check(per_branch, out, cpu_kernels, prefix="bpc.", platform="cpu")
    assert report["equal"] and report["legacy_targets"] == ["bp_scale_v1", "bp_scale_v2"], report
    module = tmp_path / "cpu_kernels.py"
    module.write_text(
        "import ccshim\n"
        f"_lib = ccshim.load_legacy_library({str(KERNELS)!r})\n"
        "KERNELS = {'bp_scale_v2': _lib.scale_v2, 'bp_scale_v1': _lib.scale_v1}\n")
    p = _ccshim("rewrite", per_branch, tmp_path / "cli.jax", "--platform", "cpu", "--check",
                "--kernels", f"{module}:KERNELS", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    said = json.loads(p.stdout)
    assert said["check"]["equal"] and said["check"]["legacy_targets"] == [
        "bp_scale_v1", "bp_scale_v2"], said
    assert {t["legacy"]: t["platforms"] for t in said["targets"]} == {
        "bp_scale_v2": ["cpu"], "bp_gpu_only": [], "bp_scale_v1": ["cpu"]}


def test_the_list_says_which_platforms_reach_each_call(per_branch):
    p = _ccshim("rewrite", "--list", "--json", per_branch)
    assert p.returncode == 0, p.stderr
    (entry,) = json.loads(p.stdout)
    assert {c["target"]: c["platforms"] for c in entry["calls"]} == {
        "bp_scale_v2": ["cpu"], "bp_gpu_only": ["cuda"], "bp_scale_v1": ["cpu", "cuda"]}


def test_zero_change_mode_is_not_strict_about_another_platforms_branch(per_branch):
    """In strict zero-change mode, the (cpu, cuda) artifact called on the CPU:
    its CPU branch's legacy call runs through ccshim; the CUDA branch's,
    whose target nothing registered, is not held against the program (JAX
    drops that branch when it calls the artifact for one platform, before
    the module reaches the compiler that zero-change mode rewrites)."""
    code = f"""
import json, sys
import jax, numpy as np, ccshim
import ccshim.legacy as cl
lib = ccshim.load_legacy_library({str(KERNELS)!r})
for name in ("scale_v2", "scale_v1"):
    jax.ffi.register_ffi_target("bp_" + name, jax.ffi.pycapsule(getattr(lib, name)),
                                platform="cpu", api_version=0)
exp = jax.export.deserialize(bytearray(open({str(per_branch)!r}, "rb").read()))
x = np.arange(256, dtype=np.float32)
got = np.asarray(jax.jit(exp.call)(x))
print(json.dumps({{"equal": bool((got == 4 * x).all()), "wrapped": cl.wrapped()}}))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    env.pop("CCSHIM_LEGACY", None)
    p = subprocess.run([sys.executable, "-m", "ccshim.legacy", "--strict", "-c", code],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    said = json.loads(p.stdout.strip().splitlines()[-1])
    assert said == {"equal": True, "wrapped": [["host", "ccshim.v1.bp_scale_v1"],
                                               ["host", "ccshim.v2.bp_scale_v2"]]}, said
