"""`ccshim rewrite` under hostile input (issue 22): OUT that is not a
regular file, IN that would block or never end, a program of hundreds of
MB (issue 31: read once, whatever its size), and a legacy call nested
deeper than Python's recursion limit.  Each runs
the command (python -m ccshim.export, what `ccshim rewrite` execs) under a
timeout of its own, so a hang fails the case instead of the suite."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("jax")
pytest.importorskip("jax.export", reason="jax.export does not import in this JAX (JAX 0.5 "
                    "needs absl-py for it, which it does not install)")

GOOD = """module {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @h22_kernel(%arg0) {api_version = 2 : i32, backend_config = "ab"} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


def rewrite(*args, timeout=60):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    try:
        p = subprocess.run([sys.executable, "-m", "ccshim.export", *map(str, args)],
                           capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"ccshim rewrite {' '.join(map(str, args))} did not end in {timeout} s")
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.mlir"
    path.write_text(GOOD)
    return path


def test_out_that_is_a_fifo_or_a_directory_is_refused_and_left_alone(tmp_path, good):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    rc, _, err = rewrite(good, fifo, "--platform", "cpu")
    assert rc == 2 and "out.fifo: is a FIFO; OUT must be a regular file or not exist" in err
    assert fifo.is_fifo()
    folder = tmp_path / "out.d"
    folder.mkdir()
    rc, _, err = rewrite(good, folder, "--platform", "cpu")
    assert rc == 2 and "is a directory; OUT must be a regular file" in err
    manifest_fifo = tmp_path / "manifest.fifo"
    os.mkfifo(manifest_fifo)
    rc, _, err = rewrite(good, tmp_path / "out.mlir", "--manifest", manifest_fifo)
    assert rc == 2 and "manifest.fifo: is a FIFO" in err
    assert not (tmp_path / "out.mlir").exists()  # refused before anything was written


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_out_that_is_a_device_is_refused_and_left_alone(tmp_path, good):
    dev = tmp_path / "null"
    os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # a character device, as /dev/null
    rc, _, err = rewrite(good, dev, "--platform", "cpu")
    assert rc == 2 and "null: is a device; OUT must be a regular file" in err
    assert not dev.is_file()


def test_in_that_is_a_fifo_or_dev_zero_is_refused_at_once(tmp_path, good):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)  # no writer: reading it would block forever
    rc, _, err = rewrite(fifo, tmp_path / "o.mlir", timeout=30)
    assert rc == 2 and "in.fifo: is a FIFO; expected a regular file" in err
    rc, _, err = rewrite("/dev/zero", tmp_path / "o.mlir", timeout=30)
    assert rc == 2 and "/dev/zero: is a device; expected a regular file" in err
    rc, out, err = rewrite("--list", good, fifo, "/dev/zero", timeout=30)
    assert rc == 2
    assert "good.mlir: text, 1 custom call(s), 1 legacy" in out
    assert "in.fifo: not read: " in out and "/dev/zero: not read: " in out


def test_a_large_file_that_is_no_program_is_refused_for_what_it_is(tmp_path):
    big = tmp_path / "big.jax"
    with open(big, "wb") as f:
        f.truncate((64 << 20) + 1)  # sparse: costs no disk
    rc, _, err = rewrite(big, tmp_path / "o.jax", timeout=60)
    assert rc == 2 and "big.jax: not a jax.export artifact, nor a StableHLO module" in err, err


@pytest.mark.once("newest")
def test_a_program_with_260_mib_of_constants_is_rewritten_and_runs(tmp_path, build_dir):
    """Exported programs carry their weights and tables as constants, and
    run to hundreds of MB: one of 260 MiB of constants (272 MB on disk) and
    a legacy call is rewritten, run through ccshim and on XLA's legacy path
    (--check, byte for byte), and the rewrite alone stays within a bound
    of its size in peak memory (measured 6.5 times the file with JAX's
    reader, writer and the module in between; the file itself is read
    once, into one buffer).  make test runs it once, in the newest JAX's
    suite: on the pinned JAX it would prove the same reading again."""
    src, out = tmp_path / "big.jax", tmp_path / "big.rewritten.jax"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    made = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                                                        "big_program.py"), src, "260"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert made.returncode == 0, made.stderr[-2000:]
    size = src.stat().st_size
    assert size > 256 << 20

    # The rewrite alone, its peak measured on the process itself.
    with open(tmp_path / "stderr", "w+") as said:
        p = subprocess.Popen([sys.executable, "-m", "ccshim.export", str(src), str(out)],
                             stdout=subprocess.DEVNULL, stderr=said, env=env,
                             stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        said.seek(0)
        assert p.returncode == 0, said.read()
    peak = usage.ru_maxrss << 10
    print(f"rewrite of {size / 2**20:.0f} MiB: peak {peak / 2**20:.0f} MiB "
          f"({peak / size:.1f} times the file)")
    assert peak < 8 * size, f"peak {peak} bytes for a {size}-byte program"
    assert out.stat().st_size > size - (1 << 20)
    kernels = tmp_path / "big_kernels.py"
    kernels.write_text(
        "import ctypes\n"
        f"_lib = ctypes.CDLL({str(build_dir / 'tests' / 'libccshim_pytest_kernels.so')!r})\n"
        "def registrations():\n"
        "    return {'scale_v1': ctypes.cast(_lib.scale_v1, ctypes.c_void_p).value}\n")
    rc, stdout, err = rewrite(src, out, "--check", "--kernels", kernels, "--json", timeout=600)
    assert rc == 0, err
    assert '"equal": true' in stdout and '"differing_bytes": 0' in stdout, stdout


def test_a_call_nested_1500_regions_deep_is_rewritten(tmp_path):
    depth = 1500
    lines = ["module {",
             "  func.func public @main(%x: tensor<f32>, %i: tensor<i32>) -> tensor<f32> {"]
    for d in range(depth):
        lines.append(f'    %v{d} = "stablehlo.case"(%i) ({{')
    lines.append('    %c = stablehlo.custom_call @h22_deep(%x) {api_version = 2 : i32, '
                 'backend_config = ""} : (tensor<f32>) -> tensor<f32>')
    lines.append("    stablehlo.return %c : tensor<f32>")
    for d in reversed(range(depth)):
        lines.append("    }) : (tensor<i32>) -> tensor<f32>")
        lines.append(f"    {'stablehlo.return' if d else 'return'} %v{d} : tensor<f32>")
    lines += ["  }", "}"]
    src = tmp_path / "deep.mlir"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "deep.out.mlir"
    rc, stdout, err = rewrite(src, out, "--platform", "cpu", timeout=300)
    assert rc == 0, err
    assert "1 legacy call(s) to 1 target(s) rewritten" in stdout
    assert "@ccshim.v2.h22_deep" in out.read_text()


def test_scan_keeps_a_long_signature_whole(tmp_path):
    """scan reads `rewrite --list --tsv` records of any length: a 40-operand
    call's signature came out cut at 511 characters, with exit 0."""
    from conftest import BUILD
    t = "tensor<12x34x56xf32>"
    operands = ", ".join(f"%arg{i}" for i in range(40))
    params = ", ".join(f"%arg{i}: {t}" for i in range(40))
    (tmp_path / "wide.mlir").write_text(f"""module {{
  func.func public @main({params}) -> {t} {{
    %0 = stablehlo.custom_call @h22_wide({operands}) {{api_version = 2 : i32, backend_config = ""}} : ({", ".join([t] * 40)}) -> {t}
    return %0 : {t}
  }}
}}
""")
    p = subprocess.run([str(BUILD / "tools" / "ccshim"), "scan", str(tmp_path), "--json"],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, CCSHIM_PYTHON=sys.executable))
    import json
    report = json.loads(p.stdout)
    sig = report["artifacts"][0]["legacy_calls"][0]["signature"]
    want = "(" + ", ".join(["f32[12,34,56]"] * 40) + ") -> f32[12,34,56]"
    assert len(want) > 600 and sig == want


def test_the_build_trees_command_uses_the_builds_python(good):
    """`build/tools/ccshim rewrite` after `make demo` runs with the venv the
    build was configured with, CCSHIM_PYTHON unset (it needed setting)."""
    from conftest import BUILD
    env = {k: v for k, v in os.environ.items() if k != "CCSHIM_PYTHON"}
    env["PATH"] = "/usr/bin:/bin"  # no venv on PATH either
    p = subprocess.run([str(BUILD / "tools" / "ccshim"), "rewrite", "--list", str(good)],
                       capture_output=True, text=True, timeout=120, env=env)
    if "CCSHIM_PYTHON_DEFAULT" not in (BUILD / "CMakeCache.txt").read_text() or \
            "CCSHIM_PYTHON_DEFAULT:FILEPATH=\n" in (BUILD / "CMakeCache.txt").read_text():
        pytest.skip("this build was configured without CCSHIM_PYTHON_DEFAULT (plain CMake)")
    assert p.returncode == 0, p.stderr
    assert "good.mlir: text, 1 custom call(s), 1 legacy" in p.stdout


# What each does depends on the jaxlib: 0.10.2's reader aborts on the first
# and does not finish the second, 0.12's finishes neither, 0.7's segfaults on
# the second.  Either way the caller gets one line, not the crash.
REFUSED = ("MLIR's reader crashed on it (signal ", "reading it did not finish in 5 s")


@pytest.mark.parametrize("name, said", [
    ("regress-abort-bad-version", REFUSED),
    ("regress-hang", REFUSED),
])
def test_what_makes_mlirs_reader_crash_or_hang_is_refused(tmp_path, name, said):
    """Found by fuzz_export_reader: bytecode that aborts jaxlib's StableHLO
    reader, and bytecode it does not finish.  Read in a process of its own
    first, so the process that asked gets one line and exit 2."""
    from conftest import ROOT
    src = ROOT / "tests" / "fuzz" / "corpus" / "fuzz_export_reader" / name
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CCSHIM_READ_TIMEOUT="5")
    p = subprocess.run([sys.executable, "-m", "ccshim.export", str(src), str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 2 and any(s in p.stderr for s in said), (p.returncode, p.stderr)
    assert "this process was kept out of it" in p.stderr or "did not finish" in p.stderr
