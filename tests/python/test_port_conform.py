"""`ccshim conform --against-python`: each handler `ccshim port` wrote, from
the ported build's module, side by side with the unchanged kernel of the
project's legacy build run by XLA's own legacy custom-call path (jaxlib),
on the same inputs, byte for byte (issue 42, item 3).

The project is tests/fixtures/port/status_ext (a single-result kernel, its
handler bound for any count, and a status-reporting tuple-result one, whose
call site fixes its counts and whose handler is bound with them: both
bindings of xla_legacy_call.h), built twice by its own build: as it is
(its status header from ccshim's compat headers, as jaxlib's headers once
gave it) and ported.  Each side runs in a child of its own, the ported one
with its build first on its path, so the two builds' same-named modules
never meet.
"""

import json
import os
import pathlib
import shutil
import struct
import subprocess

import pytest

from conftest import BUILD, FIXTURES, ROOT
import project_ports

pytest.importorskip("libcst", reason="ccshim port needs libcst (dev/setup.sh test installs it)")

NEWEST = project_ports.NEWEST
# Both builds, the port and conform's children all run on .venv-newest's
# Python, whichever suite started this module.
pytestmark = pytest.mark.once
CCSHIM = BUILD / "tools" / "ccshim"


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """(the legacy build's module, the ported build's module): their
    cpu_ops extension files."""
    if not NEWEST.exists():
        pytest.skip(f"no {NEWEST} (no Python 3.12 here): the newest JAX is not tested")
    tmp = tmp_path_factory.mktemp("conform")
    legacy, ported = tmp / "legacy", tmp / "ported"
    shutil.copytree(FIXTURES / "port" / "status_ext", legacy)
    shutil.copytree(FIXTURES / "port" / "status_ext", ported)
    done = subprocess.run([str(NEWEST), "-m", "ccshim.port", str(ported), "--apply"],
                          env=dict(os.environ, PYTHONPATH=str(ROOT / "python")),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    before = os.environ.get("CPATH")
    os.environ["CPATH"] = str(ROOT / "compat" / "include")   # the legacy status header
    try:
        project_ports.build(legacy, tmp / "legacy-site")
    finally:
        os.environ.pop("CPATH") if before is None else os.environ.update(CPATH=before)
    project_ports.build(ported, tmp / "ported-site")
    return tuple(next((tmp / f"{b}-site" / "status_ext").glob("cpu_ops*.so"))
                 for b in ("legacy", "ported"))


def _conform(legacy: pathlib.Path, ported: pathlib.Path, name: str, signature: str,
             *more: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(CCSHIM), "conform", "--python", f"{legacy}:registrations", name, "--api", "2",
         "--signature", signature, "--reference", "xla",
         "--against-python", f"{ported}:registrations", "--against-name", name, *more],
        env=dict(os.environ, CCSHIM_PYTHON=str(NEWEST)), capture_output=True, text=True,
        timeout=600)


@pytest.mark.parametrize("name, signature", [
    ("status_ext_twice", "(s32[], f32[8]) -> f32[8]"),
    ("status_ext_checked_split", "(s32[], f32[8]) -> (f32[8], f32[8])"),
])
def test_each_ported_handler_gives_xlas_legacy_bytes(builds, name, signature):
    legacy, ported = builds
    done = _conform(legacy, ported, name, signature, "--arg-hex", "0=08000000", "--runs", "4")
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith(name))
    assert row.split()[-4:] == ["4", "4", "0", "equal"], row
    assert "reference: XLA's legacy custom-call path (jaxlib" in done.stdout


def test_a_kernels_failure_is_the_ported_handlers_error_with_its_message(builds):
    """A negative input: the status kernel fails through XLA's legacy path
    and through its ported handler with the same message, run after run."""
    legacy, ported = builds
    negative = struct.pack("<8f", 1.5, -2.0, 3.0, 0.5, 1.0, 2.0, 3.0, 4.0).hex()
    done = _conform(legacy, ported, "status_ext_checked_split",
                    "(s32[], f32[8]) -> (f32[8], f32[8])", "--arg-hex", "0=08000000",
                    "--arg-hex", f"1={negative}", "--runs", "2", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    (target,) = json.loads(done.stdout)["targets"]
    assert (target["equal"], target["both_failed"], target["status"]) == (2, 2, "equal"), target
    assert target["failure_message"] == "INTERNAL: checked_split: negative input", target


def test_a_legacy_capsule_is_refused_as_the_port(builds):
    legacy, _ = builds
    done = _conform(legacy, legacy, "status_ext_twice", "(s32[], f32[8]) -> f32[8]",
                    "--arg-hex", "0=08000000")
    assert done.returncode != 0
    assert "the capsule is not a typed-FFI handler" in done.stdout + done.stderr


def test_against_python_says_what_does_not_go_with_it():
    done = subprocess.run([str(CCSHIM), "conform", "lib.so", "k", "--api", "1", "--signature",
                           "(f32[2]) -> f32[2]", "--against-name", "k"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--against-name and --against-path go with --against-python" in done.stderr
