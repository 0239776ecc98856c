"""ccshim rewrite: exported JAX programs whose custom calls use the legacy
convention, made typed-FFI calls on ccshim's targets, and run again.

* Artifacts exported here by JAX with legacy calls of every form and shape
  class (v1, v2 with a tuple of results, v3 with a binary opaque, aliasing,
  column-major layouts, a side effect): rewritten, deserialized and run
  through ccshim, byte for byte against the original on XLA's own legacy
  path (ccshim.export.check).
* Artifacts of 2023: serialized by JAX 0.4.23 (made once with that JAX by
  tests/fixtures/make_artifacts.sh, committed under tests/fixtures/jax-2023/)
  with its legacy CPU LAPACK/BLAS calls, which
  today's JAX can no longer run; rewritten, with jaxlib 0.4.30's kernels
  wrapped by ccshim, they give the outputs JAX 0.4.23 recorded.
* Typed calls (JAX writes them as api_version 1 plus a dictionary) and XLA's
  built-in targets left alone; bad input refused with exit 2, the input
  never touched.
"""

import hashlib
import json
import os
import pathlib
import subprocess
import sys

import jax
import numpy as np
import pytest

export = pytest.importorskip("jax.export", reason="jax.export does not import in this JAX "
                             "(JAX 0.5 needs absl-py for it, which it does not install)")

import ccshim
import ccshim.export as ce
import ccshim.jax as cj
from conftest import BUILD, FIXTURES, ROOT, cached, fixture_missing

S = jax.ShapeDtypeStruct
pytestmark = pytest.mark.usefixtures("x64")

CASES_2023 = FIXTURES / "jax-2023"
BLOB = b"\x00\x01opaque\x00\xff\xfe\n"


def _export(fn, *args, targets):
    return export.export(jax.jit(fn), disabled_checks=[
        export.DisabledSafetyCheck.custom_call(t) for t in targets])(*args)


def _legacy(name, out, api, **kw):
    return jax.ffi.ffi_call(name, out, custom_call_api_version=api, **kw)


@pytest.fixture(scope="module")
def kernel_map(kernels):
    return {name: getattr(kernels, name) for name in (
        "scale_v1", "sumdiff_v2", "echo_v3", "accumulate_v1", "copy48_v1", "fail_v3")}


def _program(x, y, a, b, m):
    """One call of each form and shape class, as JAX lowers a legacy call."""
    echo = _legacy("echo_v3", (S((64,), np.uint8), S((), np.int64)), 3,
                   legacy_backend_config=BLOB)()
    scaled = _legacy("scale_v1", S((256,), np.float32), 1)(x)
    sum_diff = _legacy("sumdiff_v2", (S((64,), np.float32), S((64,), np.float32)), 2)(y, 3 * y)
    acc = _legacy("accumulate_v1", S((8,), np.float32), 1, input_output_aliases={0: 0})(a, b)
    col = _legacy("copy48_v1", S((12,), np.float32), 1, input_layouts=[(1, 0)])(m)
    return echo, scaled, sum_diff, acc, col


ARGS = (S((256,), np.float32), S((64,), np.float32), S((8,), np.float32), S((8,), np.float32),
        S((3, 4), np.float32))
TARGETS = ["echo_v3", "scale_v1", "sumdiff_v2", "accumulate_v1", "copy48_v1"]


@pytest.fixture(scope="module")
def legacy_artifact(tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "legacy.jax"
    path.write_bytes(_export(_program, *ARGS, targets=TARGETS).serialize())
    return path


def _inputs(seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(a.shape).astype(a.dtype) for a in ARGS]


def _custom_calls(data):
    art = ce.read(data)
    return {c.target: (op, c) for op, c in art.custom_calls()}, art


def test_every_form_and_shape_class_gives_the_legacy_paths_bytes(legacy_artifact, tmp_path,
                                                                  kernel_map):
    done = ce.rewrite(legacy_artifact)
    assert done.kind == "export"
    assert {t["legacy"]: (t["typed"], t["api_version"]) for t in done.targets} == {
        "echo_v3": ("ccshim.v3.echo_v3", 3), "scale_v1": ("ccshim.v1.scale_v1", 1),
        "sumdiff_v2": ("ccshim.v2.sumdiff_v2", 2),
        "accumulate_v1": ("ccshim.v1.accumulate_v1", 1),
        "copy48_v1": ("ccshim.v1.copy48_v1", 1)}
    out = tmp_path / "typed.jax"
    out.write_bytes(done.data)
    report = ce.check(legacy_artifact, out, kernel_map, inputs=_inputs())
    assert report["equal"], report
    assert len(report["outputs"]) == 7
    assert "legacy custom-call path" in report["reference"]
    # and not by accident: the kernels' results, as the kernels define them
    x, y, a, b, m = _inputs()
    res = jax.tree_util.tree_leaves(ce.load(out).call(x, y, a, b, m))
    assert bytes(np.asarray(res[0])[:len(BLOB)]) == BLOB and int(res[1]) == len(BLOB)
    np.testing.assert_array_equal(res[2], 2 * x)
    np.testing.assert_array_equal(res[3], y + 3 * y)
    np.testing.assert_array_equal(res[5], a + b + 1000)  # aliased: out is in[0]
    np.testing.assert_array_equal(res[6], m.T.reshape(12))  # column-major operand


def test_the_rewritten_calls_keep_everything_but_target_form_and_opaque(legacy_artifact):
    before, _ = _custom_calls(legacy_artifact.read_bytes())
    after, art = _custom_calls(ce.rewrite(legacy_artifact).data)
    from jax._src.lib.mlir import ir
    with art.context:
        for legacy, (old_op, old) in before.items():
            op, call = after[ce.typed_name(legacy, old.api_version)]
            assert call.kind == "ccshim" and call.api_version == 4
            assert call.signature == old.signature and call.location == old.location
            assert call.aliases == old.aliases and call.has_side_effect == old.has_side_effect
            # an empty dictionary is the default, which serialization leaves out
            config = (ir.DictAttr(op.attributes["backend_config"])
                      if "backend_config" in op.attributes else {})
            if legacy == "echo_v3":
                opaque = np.array(ir.DenseElementsAttr(config["opaque"]), dtype=np.uint8)
                assert opaque.tobytes() == BLOB  # NULs and 0xff intact
            else:
                assert len(config) == 0
            for name in ("operand_layouts", "result_layouts", "output_operand_aliases"):
                had = name in old_op.attributes
                assert had == (name in op.attributes)
                if had:
                    assert str(op.attributes[name]) == str(old_op.attributes[name])


def test_a_side_effect_flag_is_kept(tmp_path, kernels):
    def fn(x):
        return _legacy("scale_v1", S((256,), np.float32), 1, has_side_effect=True)(x)

    exp = _export(fn, S((256,), np.float32), targets=["scale_v1"])
    before = ce.read(bytes(exp.serialize())).calls()
    after = ce.read(ce.rewrite(exp).data).calls()
    assert before[0].has_side_effect and after[0].has_side_effect


def test_rewriting_is_deterministic_and_names_are_a_function_of_target_and_form(
        legacy_artifact):
    assert ce.rewrite(legacy_artifact).data == ce.rewrite(legacy_artifact).data
    assert ce.typed_name("lapack_sgetrf", 2) == "ccshim.v2.lapack_sgetrf"
    assert ce.typed_name("k", 3, prefix="mine.") == "mine.v3.k"
    # a rewritten artifact has nothing left to rewrite
    again = ce.rewrite(ce.rewrite(legacy_artifact).data)
    assert again.targets == [] and {c.kind for c in again.kept} == {"ccshim"}


def test_typed_calls_and_xla_builtins_are_left_alone(kernels):
    def fn(x):
        typed = jax.ffi.ffi_call("some_typed_target", S((256,), np.float32))(x, flag=3)
        legacy = _legacy("scale_v1", S((256,), np.float32), 1)(x)
        return typed, legacy

    exp = _export(fn, S((256,), np.float32), targets=["some_typed_target", "scale_v1"])
    calls = {c.target: c for c in ce.read(bytes(exp.serialize())).calls()}
    # JAX writes its typed calls as api_version 1 with a dictionary: the
    # version alone would call it legacy
    assert calls["some_typed_target"].api_version == 1
    assert calls["some_typed_target"].kind == "typed"
    assert calls["scale_v1"].kind == "legacy" and calls["scale_v1"].api_version == 1
    done = ce.rewrite(exp)
    assert [t["legacy"] for t in done.targets] == ["scale_v1"]
    assert [c.target for c in done.kept] == ["some_typed_target"]

    text = """
    module @m {
      func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
        %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
        %1 = stablehlo.custom_call @user_kernel(%0) {api_version = 2 : i32, backend_config = "x"} : (tensor<4xf32>) -> tensor<4xf32>
        return %1 : tensor<4xf32>
      }
    }"""
    kinds = {c.target: c.kind for c in ce.read(text.encode()).calls()}
    assert kinds == {"Sharding": "builtin", "user_kernel": "legacy"}


TUPLE_MODULE = """
module @tuples {
  func.func public @main(%arg0: tensor<64xf32>, %arg1: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
    %0 = stablehlo.custom_call @sumdiff_v2(%arg0, %arg1) {api_version = 2 : i32} : (tensor<64xf32>, tensor<64xf32>) -> tuple<tensor<64xf32>, tensor<64xf32>>
    %1 = stablehlo.get_tuple_element %0[1] : (tuple<tensor<64xf32>, tensor<64xf32>>) -> tensor<64xf32>
    %2 = stablehlo.get_tuple_element %0[0] : (tuple<tensor<64xf32>, tensor<64xf32>>) -> tensor<64xf32>
    return %1, %2 : tensor<64xf32>, tensor<64xf32>
  }
}
"""


def test_a_tuple_typed_result_is_flattened_to_the_same_buffers(tmp_path, kernel_map):
    """Older lowerings returned several results as one tuple, read with
    get_tuple_element; XLA hands the legacy kernel that tuple's table of
    pointers, as it does for a call with several results."""
    src = tmp_path / "tuples.mlir"
    src.write_text(TUPLE_MODULE)
    done = ce.rewrite(src, platform="cpu")
    assert done.kind == "text"
    text = done.data.decode()
    assert "tuple<" not in text and "get_tuple_element" not in text
    out = tmp_path / "tuples.jax"
    out.write_bytes(ce.rewrite(src, platform="cpu", to="export").data)
    original = ce.read(src, platform="cpu").to_bytes("export")
    report = ce.check(original, out, kernel_map)
    assert report["equal"], report
    y, z = _inputs(3)[1], _inputs(4)[1]
    got = ce.load(out).call(y, z)
    np.testing.assert_array_equal(got[0], y - z)
    np.testing.assert_array_equal(got[1], y + z)


def test_loading_names_the_targets_that_are_not_registered(legacy_artifact):
    data = ce.rewrite(legacy_artifact, prefix="unregistered.").data
    with pytest.raises(ce.ArtifactError, match=r"unregistered\.v3\.echo_v3 on cpu \(the legacy "
                       r"echo_v3, api_version 3\)"):
        ce.load(data, prefix="unregistered.")


def test_register_looks_every_kernel_up_before_registering_any(legacy_artifact, kernel_map):
    data = ce.rewrite(legacy_artifact, prefix="partial.").data
    given = {k: v for k, v in kernel_map.items() if k != "copy48_v1"}
    with pytest.raises(ce.ArtifactError, match=r"copy48_v1 on cpu \(api_version 1, as "
                       r"partial\.v1\.copy48_v1\)"):
        ce.register(data, given, prefix="partial.")
    assert cj.registered("partial.v1.scale_v1") is None


# --- Artifacts of 2023 --------------------------------------------------------------


def _cases_2023():
    return json.loads((CASES_2023 / "index.json").read_text())["cases"]


@pytest.fixture(scope="module")
def jax2023():
    cases = _cases_2023()
    try:
        ce.read(CASES_2023 / f"{cases[0]['name']}.jax")
    except ce.ArtifactError as e:
        pytest.skip(f"ccshim on JAX {jax.__version__} does not read JAX 0.4.23's artifacts "
                    f"({str(e).split(': ', 1)[-1][:160]})")
    return {c["name"]: c for c in cases}


# Tolerances of the recorded outputs: the kernels are jaxlib 0.4.30's, with
# today's SciPy LAPACK; JAX 0.4.23 ran its own with SciPy 1.11's.
RTOL = {"f32": 1e-5, "c64": 1e-5, "f64": 1e-12, "c128": 1e-12}


def _recorded(case):
    with np.load(CASES_2023 / f"{case['name']}.npz") as z:
        inputs = [z[f"arr_{i}"] for i in range(case["inputs"])]
        outputs = [z[f"out_{i}"] for i in range(case["outputs"])]
    return inputs, outputs


NAMES_2023 = [f"{op}_{dt}" for op in ("lu", "lu_batched", "cholesky", "qr", "trsm")
              for dt in ("f32", "f64", "c64", "c128")]


@pytest.mark.parametrize("name", ["lu_f32_cpu_tpu", "trsm_f32_cpu_cuda"])
def test_a_multi_platform_artifact_of_calling_convention_8_runs_here(name, jax2023, old_lapack,
                                                                      tmp_path):
    """Exported by JAX 0.4.23 for cpu and tpu, and for cpu and cuda, at
    calling convention 8, which JAX 0.11 and later no longer take: written
    as 9 (its platform index already tagged, as those releases tagged it),
    its CPU branch's legacy call rewritten, and run on the CPU: what 0.4.23
    computed.  --upgrade writes the same version and rewrites no call."""
    case = jax2023[name]
    assert case["calling_convention"] == 8 and case["platforms"][0] == "cpu", case
    src, prefix = CASES_2023 / f"{name}.jax", f"mp8{name[-3:]}."
    done = ce.rewrite(src, prefix=prefix)
    assert done.platforms == tuple(case["platforms"])
    assert done.calling_convention[0] == 8 and done.calling_convention[1] >= 9
    reg = ce.register(done.data, old_lapack.registrations(), prefix=prefix)
    assert reg.platforms == ["cpu"] and set(reg.not_here) == {case["platforms"][1]}
    inputs, want = _recorded(case)
    got = jax.tree_util.tree_leaves(ce.load(done.data, prefix=prefix).call(*inputs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5 * np.abs(w).max())
    out = tmp_path / "upgraded.jax"
    p = _ccshim("rewrite", "--upgrade", src, out)
    assert p.returncode == 0, p.stderr
    assert "calling convention 8 -> 9" in p.stdout + p.stderr, p.stdout + p.stderr
    assert ce.read(out).exported.calling_convention_version == 9


@pytest.mark.parametrize("name", NAMES_2023)
def test_a_2023_artifact_runs_again_through_ccshim(name, jax2023, old_lapack, tmp_path):
    case = jax2023[name]
    path = CASES_2023 / f"{name}.jax"
    calls = ce.read(path).calls()
    legacy = sorted({c.target for c in calls if c.kind == "legacy"})
    assert legacy == case["targets"] and all(
        c.api_version == 2 for c in calls if c.kind == "legacy")
    inputs, want = _recorded(case)
    # today's JAX cannot run it: its targets are gone from jaxlib (and from
    # 0.11.2 on, JAX refuses to read the artifact at all)
    if not any(cj.registered(t) or t in _xla_registered() for t in legacy):
        with pytest.raises(Exception, match="No registered implementation|compatibility window"):
            export.deserialize(bytearray(path.read_bytes())).call(*inputs)
    done = ce.rewrite(path)
    # written at the running JAX's serialization version: it reads back here
    assert export.deserialize(bytearray(done.data)).in_avals == ce.read(path).exported.in_avals
    ce.register(done.data, old_lapack.registrations())
    got = jax.tree_util.tree_leaves(ce.load(done.data).call(*inputs))
    assert len(got) == len(want)
    rtol = RTOL[name.rsplit("_", 1)[1]]
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())
        else:
            np.testing.assert_array_equal(g, w)


def _xla_registered():
    from ccshim._jax_register import _xla_legacy
    return {name for name, _ in _xla_legacy}


@pytest.mark.parametrize("name", ["lu_batched_f32", "qr_c128", "trsm_f64"])
def test_the_command_checks_a_2023_artifact_against_xla(name, jax2023, tmp_path):
    """`ccshim rewrite --check`, as a user runs it, in a process of its own:
    the original on XLA's legacy path with jaxlib 0.4.30's kernels, the
    rewrite through ccshim, the same inputs, the bytes compared."""
    src = CASES_2023 / f"{name}.jax"
    lapack = cached("jaxlib-0.4.30") / "jaxlib" / "cpu" / "_lapack.so"
    if not lapack.exists():
        fixture_missing(f"jaxlib 0.4.30 was not fetched ({lapack} is missing)")
    npz = tmp_path / "inputs.npz"
    inputs, _ = _recorded(jax2023[name])
    np.savez(npz, *inputs)
    out = tmp_path / "typed.jax"
    p = _ccshim("rewrite", src, out, "--check", "--kernels", lapack, "--init", "initialize",
                "--inputs", npz, "--json")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["check"]["equal"] and report["check"]["outputs"]
    assert {t["legacy"] for t in report["targets"]} == set(jax2023[name]["targets"])


# --- The command, and bad input --------------------------------------------------------


def _ccshim(*args, env=None):
    return subprocess.run([str(BUILD / "tools" / "ccshim"), *map(str, args)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CCSHIM_PYTHON": sys.executable, **(env or {})})


def test_the_command_rewrites_and_lists(legacy_artifact, tmp_path):
    out, manifest = tmp_path / "out.jax", tmp_path / "targets.json"
    p = _ccshim("rewrite", legacy_artifact, out, "--manifest", manifest)
    assert p.returncode == 0, p.stderr
    assert "5 legacy call(s) to 5 target(s) rewritten" in p.stdout
    assert out.read_bytes() == ce.rewrite(legacy_artifact).data
    m = json.loads(manifest.read_text())
    assert {t["legacy"] for t in m["targets"]} == set(TARGETS)
    sumdiff = next(t for t in m["targets"] if t["legacy"] == "sumdiff_v2")
    assert sumdiff["signatures"] == ["(f32[64], f32[64]) -> (f32[64], f32[64])"]
    col = next(t for t in m["targets"] if t["legacy"] == "copy48_v1")
    assert col["signatures"] == ["(f32[3,4]{0,1}) -> f32[12]"]
    p = _ccshim("rewrite", "--list", "--json", legacy_artifact, out)
    assert p.returncode == 0, p.stderr
    listed = json.loads(p.stdout)
    assert [sorted(c["kind"] for c in f["calls"]) for f in listed] == [
        ["legacy"] * 5, ["ccshim"] * 5]
    p = _ccshim("rewrite", "--help")
    assert p.returncode == 0 and "Examples:" in p.stdout


def _newer_artifact(legacy_artifact):
    import dataclasses
    exp = export.deserialize(bytearray(legacy_artifact.read_bytes()))
    return bytes(dataclasses.replace(exp, calling_convention_version=99).serialize())


BAD = {
    "not an artifact": (lambda a: b"\x07garbage, not a program" * 40,
                        "not a jax.export artifact, nor a StableHLO module"),
    "empty": (lambda a: b"", "empty; expected a jax.export artifact"),
    "truncated": (lambda a: a.read_bytes()[:len(a.read_bytes()) // 2],
                  "truncated"),
    "truncated bytecode": (lambda a: export.deserialize(bytearray(a.read_bytes()))
                           .mlir_module_serialized[:300], "MLIR bytecode that does not read"),
    "bad text": (lambda a: b"module @m { func.func @main( }", "not a valid MLIR text module"),
    "newer JAX": (_newer_artifact, "uses calling convention 99, from a newer JAX"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_exit_2_and_nothing_written(case, legacy_artifact, tmp_path):
    make, expected = BAD[case]
    src = tmp_path / "in.bin"
    src.write_bytes(make(legacy_artifact))
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    out = tmp_path / "out.jax"
    p = _ccshim("rewrite", src, out)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stderr.startswith("ccshim rewrite: ") and expected in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not out.exists() and hashlib.sha256(src.read_bytes()).hexdigest() == digest
    assert not list(tmp_path.glob(".*ccshim-tmp"))


@pytest.mark.parametrize("args, expected", [
    (["--only", "nonexistent_target"], "only names nonexistent_target, which no legacy call"),
    (["--keep", "lapack_sgetrf"], "keep names lapack_sgetrf"),
    (["--to", "floppy"], "unknown output kind 'floppy'"),
    (["--platform", "tpu9"], "platform"),
    (["--check"], "--check needs --kernels"),
    (["--frobnicate"], "unknown option --frobnicate"),
    (["--check", "--kernels", "no_such_module_anywhere"], "cannot import no_such_module"),
])
def test_bad_options_are_refused(args, expected, legacy_artifact, tmp_path):
    out = tmp_path / "out.jax"
    p = _ccshim("rewrite", legacy_artifact, out, *args)
    assert p.returncode == 2 and expected in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_out_is_never_in(legacy_artifact, tmp_path):
    src = tmp_path / "same.jax"
    src.write_bytes(legacy_artifact.read_bytes())
    p = _ccshim("rewrite", src, src)
    assert p.returncode == 2 and "OUT is IN" in p.stderr
    assert src.read_bytes() == legacy_artifact.read_bytes()


def test_a_plain_module_needs_its_platform_to_become_an_exported_artifact(tmp_path):
    src = tmp_path / "tuples.mlir"
    src.write_text(TUPLE_MODULE)
    p = _ccshim("rewrite", src, tmp_path / "o.jax", "--to", "export")
    assert p.returncode == 2 and "does not say its platform" in p.stderr, p.stderr


def test_a_failing_kernel_fails_the_rewritten_program_with_its_message(tmp_path, kernels):
    def fn():
        return _legacy("fail_v3", S((), np.int32), 3, legacy_backend_config=b"kernel says no")()

    exp = _export(fn, targets=["fail_v3"])
    done = ce.rewrite(exp, prefix="failing.")
    ce.register(done.data, {"fail_v3": kernels.fail_v3}, prefix="failing.")
    with pytest.raises(Exception, match="kernel says no"):
        ce.load(done.data, prefix="failing.").call()


# --- ccshim scan finds exported programs --------------------------------------------------


def test_scan_lists_the_legacy_calls_inside_exported_programs(legacy_artifact, tmp_path):
    tree = tmp_path / "tree"
    (tree / "models").mkdir(parents=True)
    (tree / "src").mkdir()
    (tree / "models" / "legacy.jax").write_bytes(legacy_artifact.read_bytes())
    (tree / "models" / "typed.bin").write_bytes(ce.rewrite(legacy_artifact).data)
    (tree / "models" / "tuples.mlir").write_text(TUPLE_MODULE)
    (tree / "models" / "notes.txt").write_text("a text file, not a program\n")
    (tree / "src" / "k.c").write_text(
        "#include <stddef.h>\n"
        "typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;\n"
        "void echo_v3(void* out, const void** in, const char* opaque, size_t len,\n"
        "             XlaCustomCallStatus* status) {}\n")
    p = _ccshim("scan", tree, "--json")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    arts = {a["file"]: a for a in report["artifacts"]}
    assert sorted(arts) == ["models/legacy.jax", "models/tuples.mlir", "models/typed.bin"]
    legacy = arts["models/legacy.jax"]
    assert legacy["kind"] == "export" and legacy["platforms"] == "cpu"
    assert sorted((c["target"], c["api_version"]) for c in legacy["legacy_calls"]) == sorted(
        [("echo_v3", 3), ("scale_v1", 1), ("sumdiff_v2", 2), ("accumulate_v1", 1),
         ("copy48_v1", 1)])
    echo = next(c for c in legacy["legacy_calls"] if c["target"] == "echo_v3")
    assert echo["opaque_bytes"] == len(BLOB) and echo["signature"] == "() -> (u8[64], s64[])"
    assert legacy["rewrite"] == "ccshim rewrite models/legacy.jax models/legacy.ccshim.jax"
    assert arts["models/typed.bin"]["legacy_calls"] == []
    assert arts["models/typed.bin"]["rewritten_calls"] == 5
    assert [c["target"] for c in arts["models/tuples.mlir"]["legacy_calls"]] == ["sumdiff_v2"]
    # joined with the source: echo_v3's form from its definition, and the
    # program's call site
    targets = {t["name"]: t for t in report["targets"]}
    assert targets["echo_v3"]["definition"]["file"] == "src/k.c"
    assert targets["echo_v3"]["call_sites"][0]["file"] == "models/legacy.jax"
    assert targets["scale_v1"]["platform"] == "cpu" and targets["scale_v1"]["api_version"] == 1
    assert report["summary"]["artifacts"] == 3
    assert report["summary"]["artifact_legacy_calls"] == 6
    # the rewrite line works as printed, from the tree
    p = subprocess.run([str(BUILD / "tools" / "ccshim"), *legacy["rewrite"].split()[1:]],
                       cwd=tree, capture_output=True, text=True,
                       env={**os.environ, "CCSHIM_PYTHON": sys.executable})
    assert p.returncode == 0, p.stderr
    assert (tree / "models" / "legacy.ccshim.jax").read_bytes() == ce.rewrite(
        legacy_artifact).data


def test_scan_reports_programs_it_cannot_read(legacy_artifact, tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "ok.jax").write_bytes(legacy_artifact.read_bytes())
    (tree / "broken.mlirbc").write_bytes(b"ML\xefR" + b"\x00" * 20)
    p = _ccshim("scan", tree, "--json")
    assert p.returncode == 1
    arts = {a["file"]: a for a in json.loads(p.stdout)["artifacts"]}
    assert "MLIR bytecode that does not read" in arts["broken.mlirbc"]["error"]
    assert len(arts["ok.jax"]["legacy_calls"]) == 5  # the rest still read
    assert p.stderr.count("an exported program, not read") == 1
    # no Python to read them with: said, for each, never dropped
    p = _ccshim("scan", tree, env={"CCSHIM_PYTHON": str(tmp_path / "no-python")})
    assert p.returncode == 1
    assert p.stderr.count("not read: Python could not read it: cannot run") == 2, p.stderr


def test_check_names_the_targets_its_kernels_lack(legacy_artifact, tmp_path, build_dir):
    module = tmp_path / "some_kernels.py"
    module.write_text(
        "import ctypes, jax\n"
        f"lib = ctypes.CDLL({str(build_dir / 'tests' / 'libccshim_pytest_kernels.so')!r})\n"
        "def registrations():\n"
        "    return {'scale_v1': jax.ffi.pycapsule(lib.scale_v1)}\n")
    out = tmp_path / "out.jax"
    p = _ccshim("rewrite", legacy_artifact, out, "--check", "--kernels", module)
    assert p.returncode == 2, p.stderr
    assert "no kernel for the legacy target(s)" in p.stderr, p.stderr
    for name in ("echo_v3", "sumdiff_v2", "accumulate_v1", "copy48_v1"):
        assert name in p.stderr
    assert "scale_v1" not in p.stderr.split("target(s)", 1)[1]
    assert not out.exists()


def test_a_2023_module_alone_becomes_an_exported_artifact(jax2023, old_lapack, tmp_path):
    """The module of a 2023 artifact by itself (a StableHLO portable
    artifact, as JAX's back-compatibility data records them, with the
    platform beside it): rewritten into an exported artifact of today's
    JAX, it gives the recorded outputs."""
    case = jax2023["lu_batched_c128"]
    module = ce.read(CASES_2023 / "lu_batched_c128.jax").exported.mlir_module_serialized
    src = tmp_path / "lu.mlirbc"
    src.write_bytes(module)
    assert ce.read(src).kind == "portable"
    out = tmp_path / "lu.jax"
    p = _ccshim("rewrite", src, out, "--platform", "cpu", "--to", "export")
    assert p.returncode == 0, p.stderr
    ce.register(out, old_lapack.registrations())
    inputs, want = _recorded(case)
    got = jax.tree_util.tree_leaves(ce.load(out).call(*inputs))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12 * np.abs(w).max())


def test_a_cuda_artifact_needs_its_kernels_on_cuda():
    """Lowered for CUDA (no GPU needed to export or rewrite): the rewritten
    target is wanted on CUDA, and the GPU form's opaque travels the same
    way.  (Running it needs a GPU; none here.)"""
    def fn(x):
        return _legacy("gpu_kernel", S((8,), np.float32), 2, legacy_backend_config=b"\x01\x00")(x)

    exp = export.export(jax.jit(fn), platforms=["cuda"], disabled_checks=[
        export.DisabledSafetyCheck.custom_call("gpu_kernel")])(S((8,), np.float32))
    done = ce.rewrite(exp)
    assert done.platforms == ("cuda",)
    assert ce.needed(done.data) == [{"typed": "ccshim.v2.gpu_kernel", "legacy": "gpu_kernel",
                                     "api_version": 2, "platforms": ["cuda"]}]
    if "cuda" in ce.platforms_here(["cuda"])[0]:
        with pytest.raises(ce.ArtifactError, match=r"ccshim\.v2\.gpu_kernel on cuda"):
            ce.load(done.data)
    else:  # a CUDA target is asked for only where CUDA is
        with pytest.raises(ce.ArtifactError, match=r"runs on cuda, and this process can run "
                                                   r"none of them \(this process has no cuda "
                                                   r"backend\)"):
            ce.load(done.data)


@pytest.mark.parametrize("where", ["cuda", "rocm"])
@pytest.mark.parametrize("verb", ["load", "register"])
def test_an_artifact_for_a_platform_not_here_names_what_it_needs_there(where, verb):
    """On a machine without the artifact's platform, load and register say
    which targets that platform's machine must register, and how: what an
    operator needs to prepare the machine that has it."""
    if where in ce.platforms_here([where])[0]:
        pytest.skip(f"this machine has {where}")

    def fn(x):
        y = _legacy("gpu_scale", S((8,), np.float32), 2, legacy_backend_config=b"\x02")(x)
        return _legacy("gpu_shift", S((8,), np.float32), 1)(y)

    exp = export.export(jax.jit(fn), platforms=[where], disabled_checks=[
        export.DisabledSafetyCheck.custom_call("gpu_scale"),
        export.DisabledSafetyCheck.custom_call("gpu_shift")])(S((8,), np.float32))
    done = ce.rewrite(exp)
    call = (lambda: ce.load(done.data)) if verb == "load" else (
        lambda: ce.register(done.data, {}))
    with pytest.raises(ce.ArtifactError) as e:
        call()
    said = str(e.value)
    assert f"runs on {where}, and this process can run none of them (this process has no " \
           f"{where} backend)" in said, said
    assert (f"On a machine with {where} it needs 2 target(s) registered: ccshim.v1.gpu_shift "
            "(the legacy gpu_shift, api_version 1); ccshim.v2.gpu_scale (the legacy gpu_scale, "
            "api_version 2)") in said, said
    assert f"ccshim.export.register(artifact, kernels, platform='{where}')" in said, said


# --- Multi-platform artifacts, and exporting again ----------------------------------------


def _scale_program(x):
    return _legacy("mp_scale_v1", S((256,), np.float32), 1)(x)


@pytest.mark.parametrize("other", ["cuda", "tpu"])
def test_a_multi_platform_artifact_serves_the_platforms_this_machine_has(kernels, other,
                                                                         tmp_path):
    """Exported for cpu and a GPU or TPU, as libraries ship artifacts: on a
    CPU machine its CPU targets are registered and run; the other platform's
    are not asked for, and the result says why."""
    exp = export.export(jax.jit(_scale_program), platforms=["cpu", other], disabled_checks=[
        export.DisabledSafetyCheck.custom_call("mp_scale_v1")])(S((256,), np.float32))
    done = ce.rewrite(exp, prefix=f"mp{other}.")
    assert done.platforms == ("cpu", other)
    reg = ce.register(done.data, {"mp_scale_v1": kernels.scale_v1}, prefix=f"mp{other}.")
    assert reg.platforms == ["cpu"] and list(reg) == [f"mp{other}.v1.mp_scale_v1"]
    assert other in reg.not_here
    x = np.arange(256, dtype=np.float32)
    got = np.asarray(ce.load(done.data, prefix=f"mp{other}.").call(x))
    np.testing.assert_array_equal(got, np.asarray(
        ce.load(done.data, prefix=f"mp{other}.").call(x)))
    assert got[3] != x[3]  # scale_v1 ran (it scales by a constant)
    # platform= names one of them: the same registration, no contradiction.
    again = ce.register(done.data, {"mp_scale_v1": kernels.scale_v1}, prefix=f"mp{other}.",
                        platform="cpu")
    assert again[f"mp{other}.v1.mp_scale_v1"] is reg[f"mp{other}.v1.mp_scale_v1"]
    with pytest.raises(ce.ArtifactError, match="contradicts it"):
        ce.register(done.data, {}, prefix=f"mp{other}.", platform="rocm")


def test_a_program_that_calls_a_rewritten_artifact_exports_again(kernels):
    """export -> serialize -> deserialize -> call of a program calling a
    rewritten artifact: jax.export wants the ccshim targets' checks
    disabled (they carry no JAX guarantee), and ce.disabled_checks gives
    them; the rewritten artifact's own serialized checks name the new
    targets, not the old."""
    exp = export.export(jax.jit(_scale_program), disabled_checks=[
        export.DisabledSafetyCheck.custom_call("mp_scale_v1")])(S((256,), np.float32))
    done = ce.rewrite(exp, prefix="reexport.")
    rewritten = export.deserialize(bytearray(done.data))
    assert export.DisabledSafetyCheck.custom_call("reexport.v1.mp_scale_v1") in \
        rewritten.disabled_safety_checks
    assert export.DisabledSafetyCheck.custom_call("mp_scale_v1") not in \
        rewritten.disabled_safety_checks
    ce.register(done.data, {"mp_scale_v1": kernels.scale_v1}, prefix="reexport.")
    inner = ce.load(done.data, prefix="reexport.")

    def outer(x):
        return inner.call(x) * 2

    with pytest.raises(ValueError, match="reexport.v1.mp_scale_v1"):
        export.export(jax.jit(outer))(S((256,), np.float32))
    checks = ce.disabled_checks(done.data, prefix="reexport.")
    again = export.export(jax.jit(outer), disabled_checks=checks)(S((256,), np.float32))
    back = export.deserialize(again.serialize())
    x = np.arange(256, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(back.call(x)), 2 * np.asarray(inner.call(x)))


def test_kernels_are_looked_up_in_every_shape_registrations_have():
    from ccshim import _modules
    pair = ("libk.so", "k")
    assert _modules.entry({"k": pair}, "k") is pair  # a (library, symbol) pair
    assert _modules.entry({"k": 1234}, "k") == 1234
    new_shape = {"cpu": [("k", 42, 0), ("t_ffi", 43, 1)], "CUDA": [("k", 44, 0)]}
    assert _modules.entry(new_shape, "k", "cpu") == 42
    assert _modules.entry(new_shape, "k", "cuda") == 44
    assert _modules.entry(new_shape, "missing", "cpu") is None


def test_check_runs_a_plain_module_as_the_artifact_it_makes(tmp_path, build_dir):
    """`--check` on a plain module: the original runs, with its platform, as
    the exported artifact it makes, against the rewrite in either kind."""
    src = tmp_path / "tuples.mlir"
    src.write_text(TUPLE_MODULE)
    module = tmp_path / "tuple_kernels.py"
    module.write_text(
        "import ctypes\n"
        f"lib = ctypes.CDLL({str(build_dir / 'tests' / 'libccshim_pytest_kernels.so')!r})\n"
        "def registrations():\n"
        "    return {'sumdiff_v2': (lib, 'sumdiff_v2')}\n")
    for kind in ("export", "text"):
        out = tmp_path / f"out.{kind}"
        p = _ccshim("rewrite", src, out, "--platform", "cpu", "--to", kind, "--check",
                    "--kernels", module, "--json")
        assert p.returncode == 0, p.stderr
        report = json.loads(p.stdout)["check"]
        assert report["equal"] and len(report["outputs"]) == 2, report
