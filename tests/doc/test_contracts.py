"""The C side of docs/contracts.md: what `ccshim scan` reads from
`rewrite --list --tsv` is the record format the page gives (its example
block, fed to scan by a stand-in Python, comes out field for field in
scan --json), and the declarations the page gives are tools/tools.h's.
tests/python/test_contracts.py checks the Python side against the same
page.  Standard library only; run by ctest:

    test_contracts.py CCSHIM SOURCE_DIR
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

CCSHIM, ROOT = sys.argv[1], pathlib.Path(sys.argv[2])
DOC = (ROOT / "docs" / "contracts.md").read_text()
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def tsv_example():
    block = re.search(r"```tsv\n(.*?)```", DOC, re.S).group(1)
    return [line.split("\t") for line in block.splitlines() if line]


def c_declarations():
    return [" ".join(d.split()) for d in re.findall(r"```c\n(.*?)```", DOC, re.S)
            for d in d.strip().splitlines()]


def normal(text):
    text = text.replace('__attribute__((visibility("default")))', "")
    return " ".join(text.split()).replace("( ", "(").replace(" )", ")")


# --- 2. the records scan reads ---------------------------------------------------
records = tsv_example()
with tempfile.TemporaryDirectory() as tmp:
    tree = pathlib.Path(tmp, "tree")
    tree.mkdir()
    for name in ("a.mlirbc", "b.mlirbc"):  # MLIR bytecode by their magic
        (tree / name).write_bytes(b"ML\xefR" + b"\0" * 60)
    # A stand-in for $CCSHIM_PYTHON: prints the page's example records,
    # with file index 0 and 1 as the page numbers them.
    fake = pathlib.Path(tmp, "python")
    fake.write_text("#!" + sys.executable + "\nimport sys\n"
                    f"sys.stdout.write({chr(10).join(map(chr(9).join, records))!r} + '\\n')\n")
    fake.chmod(0o755)
    p = subprocess.run([CCSHIM, "scan", str(tree), "--json"], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, CCSHIM_PYTHON=str(fake)))
    try:
        arts = json.loads(p.stdout)["artifacts"]
    except (json.JSONDecodeError, KeyError):
        arts = []
        check(False, f"scan --json did not give artifacts: {p.stdout!r} {p.stderr!r}")
    by_tag = {r[0]: r for r in records}
    if len(arts) == 2:
        f, c, e = by_tag["F"], by_tag["C"], by_tag["E"]
        a = arts[int(f[1])]
        check([a["kind"], a["platforms"], a["typed_calls"], a["builtin_calls"],
               a["rewritten_calls"]] == [f[2], f[3], int(f[4]), int(f[5]), int(f[6])],
              f"F record read field for field: {a}")
        call = a["legacy_calls"][0]
        check([call["target"], call["api_version"], call["opaque_bytes"], call["signature"],
               call["location"]] == [c[2], int(c[3]), int(c[4]), c[5], c[6]],
              f"C record read field for field: {call}")
        check(arts[int(e[1])].get("error") == e[2], f"E record read whole: {arts[int(e[1])]}")
    else:
        check(False, f"two programs expected in scan's report, got {arts}")

# --- 3. the declarations ----------------------------------------------------------
header = (ROOT / "tools" / "tools.h").read_text()
for decl in c_declarations():
    name = re.search(r"(ccshim_conform_\w+)\s*\)?\s*\(", decl).group(1)
    if decl.startswith("typedef"):
        found = re.search(r"typedef[^;]*\(\*" + name + r"\)\([^;]*\);", header, re.S)
    else:
        found = re.search(r"(?:__attribute__\(\(visibility\(\"default\"\)\)\)\s*)?int\s+" + name +
                          r"\([^;]*\);", header, re.S)
    check(found and normal(found.group(0)) == normal(decl),
          f"tools/tools.h declares {name} as docs/contracts.md says:\n  doc: {decl}\n  "
          f"h:   {normal(found.group(0)) if found else None}")

print(f"contracts, C side: {len(records)} record kinds, {len(c_declarations())} declarations, "
      f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
