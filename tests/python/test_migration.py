"""The staged migration of examples/migration, as a user would run it: the
inventory, then each stage's script (legacy on XLA's legacy path; all
wrapped; one kernel ported), each checking its results against NumPy.
`ccshim conform` at every stage is in ctest (example_migration_conform*)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, skip_unless_built_for_this_jaxlib

EXAMPLE = ROOT / "examples" / "migration"


def run_stage(script):
    return run_stage_args(script)


def run_stage_args(script, *args):
    env = dict(os.environ, CCSHIM_BUILD_DIR=str(BUILD))
    env.pop("XLA_FLAGS", None)  # each stage asks for its own host devices
    p = subprocess.run([sys.executable, str(EXAMPLE / script), str(BUILD), *args], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_inventory_finds_the_three_legacy_kernels():
    p = subprocess.run([str(BUILD / "tools" / "ccshim"), "scan", str(EXAMPLE), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    found = {t["name"]: (t["platform"], t["api_version"], t["form"])
             for t in report["targets"] if t["definition"]}
    assert found == {"rms_norm": ("cpu", 2, "CPU v2"), "clip": ("cpu", 3, "CPU v3"),
                     "moments": ("cpu", 1, "CPU v1")}
    assert {t["name"] for t in report["typed"]} >= {"clip_ffi"}


def test_stage1_legacy_path():
    out = run_stage("stage1_legacy.py")
    assert "stage 1: all checks passed" in out


def test_stage2_all_wrapped():
    out = run_stage("stage2_wrapped.py")
    assert "rms_norm under shard_map, 4 devices" in out
    assert "stage 2: all checks passed" in out


@pytest.mark.skipif(not (BUILD / "examples" / "libmigration_ported.so").exists(),
                    reason="the native port needs jaxlib's headers at build time")
def test_stage3_one_ported():
    skip_unless_built_for_this_jaxlib()
    out = run_stage("stage3_ported.py")
    assert "byte for byte against the wrapped legacy clip" in out
    assert "stage 3: all checks passed" in out


@pytest.mark.skipif(not (BUILD / "examples" / "libmigration_ported.so").exists(),
                    reason="the native port needs jaxlib's headers at build time")
def test_an_exported_program_legacy_rewritten_and_reexported():
    """MIGRATION.md's exported programs: the stage-1 artifact on XLA's legacy
    path, rewritten and run through ccshim, and exported again at stage 3;
    the same bytes all three ways."""
    skip_unless_built_for_this_jaxlib()
    for way in ("legacy", "rewritten", "native"):
        out = run_stage_args("artifacts.py", way)
        assert f"artifacts, {way}: all checks passed" in out, out
    assert "byte for byte against the legacy artifact" in out
