"""docs/design.md's routes still exist: every station it names as
`FILE: FUNCTION` is a file of the tree that defines that function (a Python
`def`, or a C function definition), so the page cannot drift from the code
unnoticed.  Standard library only; run by ctest:

    test_design_doc.py REPO_ROOT
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1]).resolve()
DOC = (ROOT / "docs" / "design.md").read_text()
STATION = re.compile(r"^- `([\w./-]+\.(?:py|c)): (\w+)`", re.M)

stations = STATION.findall(DOC)
failures = []
for path, name in stations:
    file = ROOT / path
    if not file.is_file():
        failures.append(f"{path}: no such file (station {name})")
        continue
    text = file.read_text()
    if path.endswith(".py"):
        defined = re.search(r"^\s*def " + name + r"\(", text, re.M)
    else:  # a definition: the name at a line's start or after its return type, then '('
        defined = re.search(r"^[\w *]*\b" + name + r"\([^;{]*\)\s*\{", text, re.M)
    if not defined:
        failures.append(f"{path} defines no {name}()")
routes = re.findall(r"^### \d\. ", DOC, re.M)
if len(routes) != 4:
    failures.append(f"four routes expected, found {len(routes)}")
if len(stations) < 20:
    failures.append(f"only {len(stations)} stations read; is the page's station form changed?")
for f in failures:
    print("FAIL:", f)
print(f"design.md: {len(routes)} routes, {len(stations)} stations, {len(failures)} missing")
sys.exit(1 if failures else 0)
