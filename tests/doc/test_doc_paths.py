"""Every file a document of the project points at exists: each path in
backticks or a Markdown link, in every .md file of the tree, must name a
file relative to the repository, to the document's folder, or to one of the
include folders (for header names such as `ccshim/ccshim.h`).  Standard
library only; run by ctest:

    test_doc_paths.py REPO_ROOT
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1]).resolve()
SKIP = {".git", ".venv", "__pycache__", "node_modules"}
# A path: at least one '/', and a file name with an extension.
PATH = re.compile(r"(?:`|\]\()((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+\.[A-Za-z0-9]+)(?:`|\))")
INCLUDES = [p for p in ROOT.glob("*/include") if p.is_dir()]


def documents():
    for doc in sorted(ROOT.rglob("*.md")):
        rel = doc.relative_to(ROOT).parts
        if any(part in SKIP or part.startswith(("build", ".venv")) for part in rel):
            continue
        yield doc


missing, checked = [], 0
for doc in documents():
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        for match in PATH.finditer(line):
            path = match.group(1)
            if "://" in path or path.startswith(("http", "www.")):
                continue
            checked += 1
            places = [ROOT / path, doc.parent / path] + [inc / path for inc in INCLUDES]
            if not any(p.exists() for p in places):
                missing.append(f"{doc.relative_to(ROOT)}:{number}: {path}")

for m in missing:
    print(f"FAIL: no such file: {m}")
print(f"{checked} paths in the documents checked, {len(missing)} missing")
sys.exit(1 if missing or checked == 0 else 0)
