"""docs/census.md and the README's census table are what dev/census/report.py
makes of the committed results: neither drifts from the census nor is edited
by hand."""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "dev" / "census"))
import manifest  # noqa: E402
import report  # noqa: E402


def test_the_census_documents_are_what_the_results_make():
    readme = (ROOT / "README.md").read_text()
    doc, made_readme = report.documents(manifest.projects(), ROOT / "dev" / "census" / "results",
                                        readme)
    assert doc == (ROOT / "docs" / "census.md").read_text(), \
        "docs/census.md differs from its results: run python3 dev/census/census.py doc"
    assert made_readme == readme, \
        "the README's census table differs from docs/census.md: run python3 dev/census/census.py doc"


def test_every_project_is_on_one_line_of_the_readme_table():
    readme = (ROOT / "README.md").read_text()
    table = readme.partition(report.BEGIN)[2].partition(report.END)[0]
    for p in manifest.projects().values():
        assert table.count(f"{p['name']} {p['version']}") == 1, p["name"]
    assert "FAILS" not in table


def test_nothing_of_the_census_names_a_place_on_the_machine_that_made_it():
    # census.py scrubs what it writes (the cache, the tree, home, /tmp);
    # results made before that, or by hand, must be too.
    census = ROOT / "dev" / "census"
    files = [ROOT / "docs" / "census.md", *sorted((census / "results").glob("*.json")),
             *sorted((census / "projects").glob("*.toml"))]
    for path in files:
        text = path.read_text()
        for place in ("/root/", "/home/", "/work/", "/tmp/"):
            assert place not in text, f"{path.relative_to(ROOT)} names {place}"


def test_a_project_section_names_the_registration_spellings_scan_met():
    """A result whose scan records how each target is registered (census.py
    scan, issue 45) gives its section a line naming the spellings."""
    p = next(iter(manifest.projects().values()))
    scan = [{"name": "k1", "pattern": None, "platform": "cpu", "api_version": 2,
             "defined": None, "via": ["m.def", "register_cpu_custom_call_target"]},
            {"name": "k2", "pattern": None, "platform": "cpu", "api_version": 0,
             "defined": None, "via": ["register_ffi_target", "register_cpu_custom_call_target"]}]
    lines = report._section(p, {"scan": scan})
    assert "- registered through: `register_cpu_custom_call_target`, `register_ffi_target` " \
           "(which JAX removed each, and what ccshim restores: docs/legacy-surface.md)" in lines, lines
    assert not any(line.startswith("- registered through") for line in
                   report._section(p, {"scan": [{**t, "via": ["EncapsulateFunction"]} for t in scan]}))


def test_a_project_section_and_row_say_what_its_port_did():
    """census.py port's result: a kept port's run (its counts, the calls XLA
    compiled, what is not typed) and what it refused, in the section and
    the summary's "ported" cell; a run that lost a test or left a call
    untyped is said so."""
    p = next(iter(manifest.projects().values()))
    run = {"jax": "0.12.0.1", "counts": {"passed": 3, "skipped": 1}, "lost": [],
           "calls": {"k1": 5}, "untyped": [], "ccshim": "ModuleNotFoundError: ..."}
    port = {"files": ["a.cc", "b.py"], "refused": ["GPU kernel", "GPU kernel"], "kept": True,
            "run": run}
    lines = report._section(p, {"port": port})
    assert any("where ccshim cannot be imported: 3 passed, 1 skipped; lost: none; custom "
               "calls XLA compiled: k1 5; not typed: none" in line for line in lines), lines
    assert "  - not ported (2×): GPU kernel" in lines
    assert report._ported(port) == "3 passed, 1 skipped, no ccshim; every call typed"
    assert report._ported({**port, "run": {**run, "untyped": ["x"]}}) == \
        "3 passed, 1 skipped, no ccshim; 1+ untyped"
    assert report._ported({"files": [], "refused": ["why"], "kept": False}) == \
        "nothing (1 refused)"
    assert report._ported(None) == ""
