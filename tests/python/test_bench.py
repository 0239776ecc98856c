"""ccshim bench reports the adapter against both hand-written references:
B1 (C, XLA's C API) always, B1x (XLA's ffi.h) exactly where the build had
jaxlib's headers, and where it had not, says why; with B1x, P and Pr (the
handlers `ccshim port` writes where the call sites fix the counts and where
they are known only at run time); bench/collect.py's markdown carries them
all.  A quick run without callgrind: the figures are not judged here, only
what the report holds."""
import json
import pathlib
import re
import subprocess
import sys

from conftest import BUILD, ROOT

VARIANTS = {"B0", "B1", "B2", "B2c"}


def _jaxlib_include_built() -> bool:
    """Whether this build was configured with jaxlib's ffi.h (its cache)."""
    cache = (BUILD / "CMakeCache.txt").read_text()
    m = re.search(r"^CCSHIM_JAXLIB_INCLUDE:PATH=(.*)$", cache, re.M)
    return bool(m and m.group(1) and (pathlib.Path(m.group(1)) / "xla/ffi/api/ffi.h").is_file())


def test_bench_reports_both_references(tmp_path):
    out = tmp_path / "bench.json"
    p = subprocess.run([str(BUILD / "tools" / "ccshim"), "bench", "--quick", "--no-instructions",
                        "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads(out.read_text())
    ffi = data["ffi_reference"]
    assert ffi["built"] == _jaxlib_include_built(), (ffi, "CCSHIM_JAXLIB_INCLUDE in the cache")
    want = VARIANTS | ({"B1x"} if ffi["built"] else set())
    assert len(data["rows"]) == 16
    for row in data["rows"]:
        # P and Pr, the handlers `ccshim port` writes (counts fixed, counts
        # known at run time), and B1r, Pr's hand-written reference, are
        # built with B1x, for every form but CPU v3 (which the port refuses)
        here = want | ({"P", "Pr", "B1r"} if ffi["built"] and row["form"] != "cpu_v3"
                       else set())
        assert set(row["ns"]) == here, row
        assert set(row["ns_spread"]) == here, row
        assert set(row["instructions"]) == here, row
    if ffi["built"]:
        assert data["build"]["cxx_compiler"] and ffi["why_not"] == ""
        assert "B1x: " + data["build"]["cxx_compiler"] in p.stdout
        # Every row's verdict names both references.
        rows = [line for line in p.stdout.splitlines() if re.match(r"(cpu_v[123]|gpu) ", line)]
        assert len(rows) == 16 and all(line.split("|")[-1].split()[1] != "-" for line in rows)
    else:
        assert ffi["why_not"] and "CCSHIM_JAXLIB_INCLUDE" in ffi["why_not"]
        assert "B1x (ffi.h): not built: " + ffi["why_not"] in p.stdout

    # collect.py: one build's set into results, then its markdown table.
    d = tmp_path / "build-x"
    d.mkdir()
    (d / "bench.json").write_text(out.read_text())
    (d / "bench.txt").write_text(p.stdout)
    subprocess.run([sys.executable, str(ROOT / "bench/collect.py"), "--json", str(tmp_path / "r.json"),
                    "--text", str(tmp_path / "r.txt"), str(d)], check=True, capture_output=True)
    md = subprocess.run([sys.executable, str(ROOT / "bench/collect.py"), "--markdown",
                         str(tmp_path / "r.json")], check=True, capture_output=True, text=True).stdout
    table = [line for line in md.splitlines() if line.startswith("| CPU") or line.startswith("| GPU")]
    assert len(table) == 16
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 15, line
        # B1x's ns cell: a figure where built, a dash where not; P's, Pr's
        # and B1r's the same, and a dash for CPU v3
        assert (cells[6] != "—") == ffi["built"], line
        for port in (cells[10], cells[13], cells[14]):
            assert (port != "—") == (ffi["built"] and not line.startswith("| CPU v3")), line
    if not ffi["built"]:
        assert "not built (" in md


def test_p_is_bound_as_the_port_binds():
    """bench_port.cc's P stops fixing the counts where the port does
    (python/ccshim/port/_binding.py): the two bounds are one."""
    sys.path.insert(0, str(ROOT / "python"))
    from ccshim.port import _binding
    source = (ROOT / "bench" / "bench_port.cc").read_text()
    bound = re.search(r"constexpr int kFixedMaxBuffers = (\d+);", source)
    assert bound and int(bound.group(1)) == _binding.FIXED_MAX_BUFFERS
