"""docs/legacy-surface.md against the surface derived from JAX's released
packages (dev/legacy_surface/surface.json, derive.py's result) and
zero-change mode's tables (issue 45): every removed name is listed with
the release that removed it and what ccshim does; every restored name has
a test that calls it; a restored name's release is the derived one."""

import ast
import importlib.util
import json

from conftest import ROOT

SURFACE = ROOT / "dev" / "legacy_surface"


def _render():
    spec = importlib.util.spec_from_file_location("legacy_surface_render", SURFACE / "render.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _data():
    return json.loads((SURFACE / "surface.json").read_text())


def test_the_page_is_the_rendering_of_the_derived_surface():
    render = _render()
    page = (ROOT / "docs" / "legacy-surface.md").read_text()
    assert page == render.render(_data()), \
        "docs/legacy-surface.md is stale: run python3 dev/legacy_surface/render.py"


def test_every_derived_name_is_listed_with_its_release_and_fate():
    render = _render()
    data = _data()
    page = (ROOT / "docs" / "legacy-surface.md").read_text()
    assert len(data["removed"]) > 100, len(data["removed"])  # the surface, not a sample
    for entry in data["removed"]:
        fate, what = render.disposition(entry)
        assert fate in ("restored", "not restored") and what, entry["name"]
        assert f"| `{entry['name']}`" in page and entry["removed"], entry["name"]


def test_each_restored_name_has_a_test_that_exists():
    render = _render()
    _restored = render._restored
    tree = ast.parse((ROOT / "tests" / "python" / "test_legacy_plumbing.py").read_text())
    tests = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for entry in _restored.RESTORED:
        assert render.TESTS.get(entry.name) in tests, entry.name


def test_a_restored_name_removed_by_name_gives_the_derived_release():
    """Where the surface has the restored name (or the module it names), the
    release docs/legacy.md gives is the derived one."""
    render = _render()
    _restored = render._restored
    by_entry = {}
    for e in _data()["removed"]:
        by_entry.setdefault(render.COVERED_BY.get(e["name"], e["name"]), []).append(e)
    restored = {r.name: r for r in _restored.RESTORED}
    checked = 0
    for name, entries in by_entry.items():
        if name not in restored:
            continue
        releases = {e["removed"] for e in entries}
        assert restored[name].removed.split(" ")[0] in releases | {
            e["deprecated"] for e in entries}, (name, restored[name].removed, releases)
        checked += 1
    assert checked >= 4, checked
