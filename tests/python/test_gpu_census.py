"""make test-gpu's census step, checked where there is no GPU: what it
carries fits the device tool's 64 MiB with the tree, each project's
[gpu.suite] says what it needs, the comparison judges as it says, and the
scripts skip (77) without a GPU.  (The projects' GPU paths are lowered for
cuda and rewritten by make census: dev/census/gpu_export.py.)"""

import io
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "dev" / "census"))
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import fetch  # noqa: E402
import gpu_suite  # noqa: E402


def test_the_census_step_and_the_rest_each_fit_what_the_device_tool_carries():
    out = io.StringIO()
    assert gpu_suite.sizes(out), out.getvalue()
    census = gpu_suite.tree_bytes() + sum(gpu_suite.declared_bytes(k) for k in gpu_suite.suites())
    assert census < gpu_suite.LIMIT
    # and the census could not travel with the rest: why it is carried apart
    assert census > 32 * 2**20


def test_each_gpu_suite_names_its_files_selection_and_tests():
    suites = gpu_suite.suites()
    assert {"flash-attn-jax-0.3.0", "fdtdz-1.1.3"} <= set(suites)
    folders = {e["folder"] for e in fetch.git_entries()}
    for key, project in suites.items():
        suite = project["gpu"]["suite"]
        assert project["status"] == "gpu-only", key
        assert suite["selection"] and suite["pytest"] and suite["timeout"] <= 290, key
        for f in suite["carry"]:
            assert len(f["sha256"]) == 64 and f["size"] > 0, (key, f)
        assert suite["tests"] == "sdist" or suite["tests"] in folders, key
        if suite["tests"] == "sdist":
            assert any(f["file"] == f"{key}.tar.gz" for f in suite["carry"]), key
    flash = suites["flash-attn-jax-0.3.0"]["gpu"]["suite"]
    assert flash["pytest"][-2:] == ["-k", "128-4- and not bfloat16"]
    assert flash["expect_tests"] == 88


def test_the_flash_attn_jax_selection_names_its_tests():
    """Where its tests are fetched (fetch.py --git flash-attn-jax CLONE),
    the two files of the selection are there, with test ids of the
    selection's shape (seqlen 128, 4 heads, float16)."""
    tests = fetch.cache_dir() / "flash-attn-jax-0.3.0-tests" / "tests"
    if not tests.is_dir():
        pytest.skip("flash-attn-jax's tests are not fetched: python3 tests/fixtures/fetch.py "
                    "--git flash-attn-jax CLONE")
    for name in ("test_flash.py", "test_cross.py"):
        text = (tests / name).read_text()
        assert "128" in text and "jnp.float16" in text and "jnp.bfloat16" in text, name


def _cp312():
    """The carried wheel is flash-attn-jax's cp312 (the GPU machine's Python)."""
    if sys.version_info[:2] != (3, 12):
        pytest.skip("the carried flash-attn-jax wheel is for CPython 3.12 (make test's newest "
                    "venv runs this)")
    pytest.importorskip("jax")


def _junit(path, outcomes):
    cases = "".join(
        f'<testcase classname="t" name="{name}">'
        + {"passed": "", "failed": '<failure message="x"/>', "error": '<error message="e"/>',
           "skipped": '<skipped message="s"/>'}[o] + "</testcase>"
        for name, o in outcomes.items())
    path.write_text(f'<testsuites><testsuite>{cases}</testsuite></testsuites>')


@pytest.mark.parametrize("ours, report, ok", [
    ({"a": "passed", "b": "failed"}, "1\tcuda\tccshim.v1.flash_mha_fwd\tflash_mha_fwd\t1\n", True),
    ({"a": "failed", "b": "failed"}, "1\tcuda\tccshim.v1.flash_mha_fwd\tflash_mha_fwd\t1\n", False),
    ({"a": "passed"}, "1\tcuda\tccshim.v1.flash_mha_fwd\tflash_mha_fwd\t1\n", False),
    ({"a": "passed", "b": "failed"}, "1\thost\tccshim.v1.x\tx\t1\n", False),
])
def test_compare_judges_test_by_test(tmp_path, monkeypatch, ours, report, ok):
    monkeypatch.setattr(gpu_suite, "_suite", lambda key: {})
    _junit(tmp_path / "legacy.xml", {"a": "passed", "b": "failed"})
    _junit(tmp_path / "ccshim.xml", ours)
    (tmp_path / "report.tsv").write_text(report)
    out = io.StringIO()
    assert gpu_suite.compare("some-1.0", tmp_path, out) is ok, out.getvalue()


def test_compare_holds_the_selection_to_its_count(tmp_path):
    _junit(tmp_path / "legacy.xml", {"a": "passed"})
    _junit(tmp_path / "ccshim.xml", {"a": "passed"})
    (tmp_path / "report.tsv").write_text("1\tcuda\tccshim.v1.flash_mha_fwd\tflash_mha_fwd\t1\n")
    out = io.StringIO()
    assert not gpu_suite.compare("flash-attn-jax-0.3.0", tmp_path, out)
    assert "the selection ran 1 tests, expected 88" in out.getvalue()


def test_a_project_with_no_legacy_path_is_judged_through_ccshim_alone(tmp_path):
    """fdtdz does not import without ccshim on the GPU machine's JAX: its
    suite must run through ccshim, its CASES' outputs be finite."""
    np = pytest.importorskip("numpy")
    assert gpu_suite._suite("fdtdz-1.1.3")["legacy"] is False
    _junit(tmp_path / "ccshim.xml", {"a": "passed", "b": "failed"})
    (tmp_path / "report.tsv").write_text("1\tcuda\tccshim.v2.kernel_f32\tkernel_f32\t2\n")
    field = np.ones(4, np.float32)

    def save(values):
        np.savez(tmp_path / "ccshim.npz", **{"c/0": values.view(np.uint8),
                                             "c/0/dtype": np.array("float32")})
    save(field)
    out = io.StringIO()
    assert gpu_suite.compare("fdtdz-1.1.3", tmp_path, out), out.getvalue()
    assert "1 of 1 float outputs finite" in out.getvalue()
    save(field * np.float32("nan"))
    assert not gpu_suite.compare("fdtdz-1.1.3", tmp_path, io.StringIO())
    _junit(tmp_path / "ccshim.xml", {"": "error"})
    save(field)
    assert not gpu_suite.compare("fdtdz-1.1.3", tmp_path, io.StringIO())


def test_compare_holds_forward_outputs_to_bytes_and_only_says_gradients(tmp_path, monkeypatch):
    np = pytest.importorskip("numpy")
    monkeypatch.setattr(gpu_suite, "_suite", lambda key: {})
    _junit(tmp_path / "legacy.xml", {"a": "passed"})
    _junit(tmp_path / "ccshim.xml", {"a": "passed"})
    (tmp_path / "report.tsv").write_text("1\tcuda\tccshim.v2.kernel_f32\tkernel_f32\t2\n")
    same = np.arange(4, dtype=np.uint8)
    np.savez(tmp_path / "legacy.npz", **{"fwd/0": same, "grad/0": same})
    np.savez(tmp_path / "ccshim.npz", **{"fwd/0": same, "grad/0": same + 1})
    out = io.StringIO()
    assert gpu_suite.compare("some-1.0", tmp_path, out), out.getvalue()
    assert "byte-identical 1 of 1, gradients 0 of 1" in out.getvalue()
    np.savez(tmp_path / "ccshim.npz", **{"fwd/0": same + 1, "grad/0": same})
    assert not gpu_suite.compare("some-1.0", tmp_path, io.StringIO())


def test_the_gpu_scripts_parse_and_skip_without_a_gpu():
    for script in sorted((ROOT / "tests" / "gpu").glob("*.sh")):
        subprocess.run(["bash", "-n", str(script)], check=True)
    have_gpu = subprocess.run("command -v nvidia-smi >/dev/null && nvidia-smi -L",
                              shell=True, capture_output=True).returncode == 0
    if have_gpu:
        pytest.skip("a GPU is here: make test-gpu runs the steps")
    p = subprocess.run(["bash", str(ROOT / "tests" / "gpu" / "test_gpu.sh")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 77 and "skipped" in p.stdout, (p.returncode, p.stdout, p.stderr)


def test_the_flash_attn_jax_selection_collects_its_88_tests(tmp_path):
    """Where tests/gpu/prepare.sh --census made the carry: its wheels
    unpacked, CUDA 12's runtime on the library path, pytest collects the
    selection from its tests (736 in the two files) as 88 tests."""
    import os
    import zipfile
    carried = ROOT / ".carry" / "census" / "flash-attn-jax-0.3.0"
    if not (carried / "tests").is_dir():
        pytest.skip("no .carry/census/flash-attn-jax-0.3.0 (tests/gpu/prepare.sh --census)")
    _cp312()
    site = tmp_path / "site"
    for wheel in carried.glob("*.whl"):
        zipfile.ZipFile(wheel).extractall(site)
    suite = gpu_suite._suite("flash-attn-jax-0.3.0")
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1",
           "LD_LIBRARY_PATH": str(site / suite["library_path"][0])}
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                        "no:cacheprovider", *suite["pytest"]], cwd=carried, env=env,
                       capture_output=True, text=True, timeout=300)
    assert f"{suite['expect_tests']}/736 tests collected" in p.stdout, p.stdout[-2000:]


def test_a_gpu_run_is_recorded_into_the_census_results_and_its_rows(tmp_path, monkeypatch):
    """gpu_suite.py record LOGS puts each step's summary.json into the
    project's results file; docs/census.md's row and section then say it."""
    import json
    import shutil
    import manifest
    import report
    monkeypatch.setattr(gpu_suite, "_suite", lambda key: {})
    run = tmp_path / "logs" / "census-flash-attn-jax-0.3.0"
    run.mkdir(parents=True)
    _junit(run / "legacy.xml", {"a": "passed"})
    _junit(run / "ccshim.xml", {"a": "passed"})
    (run / "report.tsv").write_text("1\tcuda\tccshim.v1.flash_mha_fwd\tflash_mha_fwd\t1\n")
    (run / "ccshim.json").write_text(json.dumps({"device": "NVIDIA H200", "jax": "0.11.2"}))
    assert gpu_suite.compare("flash-attn-jax-0.3.0", run, io.StringIO())
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(gpu_suite.HERE_RESULTS / "flash-attn-jax-0.3.0.json", results)
    assert gpu_suite.record(tmp_path / "logs", results) == ["flash-attn-jax-0.3.0"]
    result = json.loads((results / "flash-attn-jax-0.3.0.json").read_text())
    assert result["gpu_run"]["device"] == "NVIDIA H200" and result["gpu_run"]["ok"]
    project = manifest.projects()["flash-attn-jax-0.3.0"]
    assert "on a GPU (NVIDIA H200, " in report.verdict(project, result)
    assert any("JAX 0.11.2" in line and "1 passed" in line
               for line in report._section(project, result))


def test_the_carried_flash_attn_jax_lowers_for_cuda_and_rewrites(tmp_path):
    """The wheels the census step carries, on this Python's JAX: flash-attn-
    jax's GPU path ([gpu] CASES, forward and gradient) lowered for cuda in
    zero-change mode and rewritten, every typed target one of its CUDA
    kernels (dev/census/gpu_export.py, as make census runs it)."""
    import json
    import os
    import zipfile
    from conftest import BUILD
    carried = ROOT / ".carry" / "census" / "flash-attn-jax-0.3.0"
    if not any(carried.glob("*.whl")):
        pytest.skip("no .carry/census/flash-attn-jax-0.3.0 (tests/gpu/prepare.sh --census)")
    _cp312()
    site = tmp_path / "site"
    for wheel in carried.glob("*.whl"):
        zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "CCSHIM_LIBRARY": str(BUILD / "libccshim.so"),
           "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "python"),
                                          str(ROOT / "dev" / "census")])}
    env.pop("CCSHIM_LEGACY", None)
    p = subprocess.run([sys.executable, "-m", "ccshim.legacy", "--strict", "gpu_export.py",
                        "flash-attn-jax-0.3.0"], cwd=ROOT / "dev" / "census", env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["all_mapped"], got["summary"]
    assert got["recorded_cuda"] == ["flash_mha_bwd", "flash_mha_fwd"]
    assert got["cases"]["grad_causal"]["typed"] == ["ccshim.v1.flash_mha_bwd",
                                                    "ccshim.v1.flash_mha_fwd"]
