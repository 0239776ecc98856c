"""The C side of docs/contracts.md: what `ccshim scan` reads from
`rewrite --list --tsv` is the record format the page gives (its example
block, fed to scan by a stand-in Python, comes out field for field in
scan --json), and conform's control record for a side run in Python is the
page's, field for field, as is the command line that side is given.
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

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import doc_tables  # noqa: E402

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

# --- 4. the records of a tree's Python and Cython files ----------------------------
py_records = [line.split("\t") for line in
              re.search(r"```records\n(.*?)```", DOC, re.S).group(1).splitlines() if line]
with tempfile.TemporaryDirectory() as tmp:
    tree = pathlib.Path(tmp, "tree")
    tree.mkdir()
    for name in ("a.py", "b.py", "c.py", "d.pyx"):  # indexes 0 to 3: the walk's name order
        (tree / name).write_text("# read by the stand-in\n")
    fake = pathlib.Path(tmp, "python")
    fake.write_text("#!" + sys.executable + "\nimport sys\n"
                    "assert sys.argv[3:7] == ['scan', 'ccshim.scan', '--paths-file', sys.argv[6]]\n"
                    "names = open(sys.argv[6], 'rb').read().split(b'\\0')[:-1]\n"
                    "assert [n.rsplit(b'/', 1)[-1] for n in names] == "
                    "[b'a.py', b'a.py', b'b.py', b'b.py', b'c.py', b'c.py', b'd.pyx', b'd.pyx'], "
                    "names\n"
                    f"sys.stdout.write({chr(10).join(map(chr(9).join, py_records))!r} + '\\n')\n")
    fake.chmod(0o755)
    p = subprocess.run([CCSHIM, "scan", str(tree), "--json"], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, CCSHIM_PYTHON=str(fake)))
    try:
        report = json.loads(p.stdout)
    except json.JSONDecodeError:
        report = {}
        check(False, f"scan --json did not give a report: {p.stdout!r} {p.stderr!r}")
    by_name = {t["name"]: t for t in report.get("targets", [])}
    r, c = [x for x in py_records if x[0] == "R" and x[1] == "0"]
    d, o = [x for x in py_records if x[0] == "R" and x[1] == "3"]
    w = next(x for x in py_records if x[0] == "W")
    e = next(x for x in py_records if x[0] == "E")
    k = by_name.get(r[5], {})
    check(k.get("registrations") == [{"file": "a.py", "line": int(r[3]), "via": r[4],
                                      "function": r[7]}] and
          k.get("call_sites") == [{"file": "a.py", "line": int(c[3]), "via": c[4],
                                   "api_version": int(c[18]), "api_version_is_default": c[19] == "1"}],
          f"R records read field for field, in file 0: {k}")
    check(f"{r[12]}, platform=\"{r[17]}\"" in k.get("wrap", ""), f"R's expr and platform: {k}")
    # d.pyx's: a Cython definition, its parameters (expr) told a legacy form
    # here, and the capsule its helper puts in the module's mapping.
    kd = by_name.get(o[5], {})
    check(d[5] == o[5] and kd.get("definition", {}) == {"file": "d.pyx", "line": int(d[3]),
                                                       "via": "definition",
                                                       "function": d[7]} and
          kd.get("form") == "CPU v1" and kd.get("registrations") ==
          [{"file": "d.pyx", "line": int(o[3]), "via": o[4], "function": o[7],
            "offered": True}] and
          f'{o[8]}.{o[9]}["{o[5]}"]' in kd.get("wrap", ""),
          f"definition and offered records read in file 3: {kd}")
    kw = by_name.get(w[5], {})
    check(kw.get("registrations") == [{"file": "b.py", "line": int(w[3]), "via": w[4],
                                       "function": w[7]}] and w[10] in kw.get("note", ""),
          f"W record read in file 1, its via said: {kw}")
    check(report.get("summary", {}).get("files") == 3 and
          report["summary"].get("lines") == sum(int(x[2]) for x in py_records if x[0] == "P")
          and report["summary"].get("unscanned_files") == 1,
          f"P records counted, the E file not: {report.get('summary')}")
    check(p.returncode == 1 and f"c.py: {e[2]}" in p.stderr,
          f"E record said on stderr, exit 1: {p.returncode} {p.stderr!r}")
    # A stand-in that writes nothing: every file said not read, none lost unseen.
    fake.write_text("#!" + sys.executable + "\nimport sys\nsys.exit(2)\n")
    p = subprocess.run([CCSHIM, "scan", str(tree)], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, CCSHIM_PYTHON=str(fake)))
    check(p.returncode == 1 and p.stderr.count("a Python file, not read") == 3 and
          p.stderr.count("a Cython file, not read") == 1,
          f"a Python that reads nothing: each file said not read: {p.stderr!r}")

# --- 3. the control record of a side run in Python --------------------------------
def doc_table(heading):
    return [(r[1], r[2]) for r in doc_tables.doc_table(DOC, heading)]  # (field, C type)


def c_struct(name):
    """(field, C type) of `typedef struct name {...} name;` in conform.h."""
    body = re.search(r"typedef struct " + name + r" \{(.*?)\} " + name + ";", conform_h,
                     re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    fields = []
    for decl in filter(str.strip, body.split(";")):
        m = re.match(r"\s*([\w ]+?)\s+([\w, ]+?)(\[\w+\])?\s*$", decl)
        if not m:
            continue
        size = m.group(3) or ""
        size = {"[REFERENCE_NAME_CAP]": "[160]", "[MESSAGE_CAP]": "[512]"}.get(size, size)
        fields += [(f.strip(), m.group(1) + size) for f in m.group(2).split(",")]
    return fields


conform_h = (ROOT / "tools" / "conform" / "conform.h").read_text()
caps = dict(re.findall(r"(REFERENCE_NAME_CAP|MESSAGE_CAP) = (\d+)", conform_h))
check(caps == {"REFERENCE_NAME_CAP": "160", "MESSAGE_CAP": "512"},
      f"conform.h's caps are the page's 160 and 512: {caps}")
for heading, name in (("The control record, little-endian", "control"),
                      ("The side (`side` in `conform.h`)", "side")):
    want, got = doc_table(heading), c_struct(name)
    check(want == got, f"conform.h's {name} is the page's:\n  doc: {want}\n  h:   {got}")
check(c_struct("control_buffer") == [("offset", "uint64_t"), ("bytes", "uint64_t"),
                                     ("guard", "uint64_t")] and "24 bytes" in DOC,
      f"conform.h's control_buffer is the page's: {c_struct('control_buffer')}")
line = re.search(r"PYTHON -c BOOT conform ccshim.conform (.*)", DOC).group(1)
in_python = (ROOT / "tools" / "conform" / "in_python.c").read_text()
passed = set(re.findall(r'"(--[a-z]+(?:-[a-z]+)*)"', in_python))
check(set(re.findall(r"--[a-z]+(?:-[a-z]+)*", line)) == passed,
      f"in_python.c passes the page's options: {sorted(passed)}")

print(f"contracts, C side: {len(records)} record kinds, {len(py_records)} .py records, the "
      f"control record and its side, "
      f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
