"""MIGRATION.md stays true: every code block is an excerpt of a file the tests
build or run (marked <!-- from: PATH -->) and still appears there verbatim,
or a shell command (marked <!-- run -->) that this test runs; every topic
of the guide is there; and the FFI version table agrees with the installed
jaxlib's header.  Standard library only; run by ctest:

    test_migration_doc.py SOURCE_DIR CCSHIM BUILD_DIR [JAXLIB_INCLUDE]
"""
import json
import pathlib
import re
import shlex
import subprocess
import sys

ROOT, CCSHIM, BUILD = (pathlib.Path(a).resolve() for a in sys.argv[1:4])
JAXLIB_INCLUDE = pathlib.Path(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else None
DOC = ROOT / "MIGRATION.md"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


text = DOC.read_text()
lines = text.splitlines()

# --- Topics ---------------------------------------------------------------------
TOPICS = ["The staged plan", "Registering", "Call sites in JAX", "Reading operands",
          "Tuples and temp buffers", "Opaque descriptors become typed attributes", "Errors",
          "GPU streams", "Command buffers (CUDA graphs) and traits", "Sharding",
          "Exported programs", "Which JAX accepts which FFI version"]
headings = [l[3:].strip() for l in lines if l.startswith("## ")]
check(headings == TOPICS, f"topics: {headings}")
for topic in TOPICS[1:-1]:
    body = text.split(f"## {topic}\n", 1)[1].split("\n## ", 1)[0]
    for part in ("**Legacy.**", "**Wrapped.**", "**Native.**"):
        check(part in body, f"{topic}: no {part} part")

# --- Code blocks ------------------------------------------------------------------
blocks = []  # (marker, indent, body lines, line number)
i = 0
while i < len(lines):
    m = re.match(r"^( *)```", lines[i])
    if not m:
        i += 1
        continue
    indent = len(m.group(1))
    j = i + 1
    while not re.match(r"^ *```\s*$", lines[j]):
        j += 1
    k = i - 1
    while k >= 0 and not lines[k].strip():
        k -= 1
    body = [l[indent:] if l.startswith(" " * indent) else l for l in lines[i + 1:j]]
    blocks.append((lines[k].strip() if k >= 0 else "", body, i + 1))
    i = j + 1

check(len(blocks) >= 25, f"only {len(blocks)} code blocks")
commands = 0
for marker, body, at in blocks:
    m = re.match(r"<!-- from: (\S+) -->", marker)
    if m:
        path = ROOT / m.group(1)
        if not path.exists():
            check(False, f"MIGRATION.md:{at}: {m.group(1)} does not exist")
            continue
        source = [l.rstrip() for l in path.read_text().splitlines()]
        want = [l.rstrip() for l in body]
        found = any(source[s:s + len(want)] == want for s in range(len(source) - len(want) + 1))
        check(found and want, f"MIGRATION.md:{at}: the excerpt is not in {m.group(1)} any more")
    elif marker == "<!-- run -->":
        for command in body:
            if not command.strip():
                continue
            argv = shlex.split(command)
            check(argv[0] == "ccshim", f"MIGRATION.md:{at}: only ccshim commands run here")
            argv = [str(CCSHIM)] + [a.replace("build/", f"{BUILD}/", 1)
                                    if a.startswith("build/") else a for a in argv[1:]]
            p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
            check(p.returncode == 0, f"MIGRATION.md:{at}: `{command}` exited {p.returncode}: "
                                     f"{p.stderr.strip()[:300]}")
            if "--json" in argv and p.returncode == 0:
                json.loads(p.stdout)
            commands += 1
    else:
        check(False, f"MIGRATION.md:{at}: a code block with neither <!-- from: PATH --> "
                     f"nor <!-- run --> before it")
check(commands >= 4, f"only {commands} commands ran")

# --- The FFI version table against the installed jaxlib ---------------------------
if JAXLIB_INCLUDE and (JAXLIB_INCLUDE / "xla/ffi/api/c_api.h").exists():
    header = (JAXLIB_INCLUDE / "xla/ffi/api/c_api.h").read_text()
    major = re.search(r"#define XLA_FFI_API_MAJOR (\d+)", header).group(1)
    minor = re.search(r"#define XLA_FFI_API_MINOR (\d+)", header).group(1)
    version_py = JAXLIB_INCLUDE.parent / "version.py"
    jaxlib = re.search(r'_version\s*(?::\s*str)?\s*=\s*"([\d.]+)"', version_py.read_text())
    check(jaxlib is not None, f"no version in {version_py}")
    if jaxlib:
        v = tuple(int(x) for x in jaxlib.group(1).split(".")[:3])
        row = None
        for l in lines:
            cells = [c.strip() for c in l.strip("|").split("|")]
            if len(cells) == 3 and re.match(r"^[\d.]+( – [\d.]+)?$", cells[0]):
                lo, _, hi = cells[0].partition(" – ")
                lo_v = tuple(int(x) for x in lo.split("."))
                hi_v = tuple(int(x) for x in (hi or lo).split("."))
                if lo_v <= v <= hi_v:
                    row = cells
        check(row is not None and row[1] == f"{major}.{minor}",
              f"jaxlib {jaxlib.group(1)} has FFI {major}.{minor}; the table says {row}")
        print(f"jaxlib {jaxlib.group(1)}: FFI {major}.{minor}, as the table says")
else:
    print("note: jaxlib's headers not given; the version table was not checked against them")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print(f"MIGRATION.md: {len(blocks)} code blocks true to their files, {commands} commands ran")
