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
