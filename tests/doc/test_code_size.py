"""No file past ~800 lines and no function past 100 in tools/ and python/
(the code a successor reads first), unless the file or the function says
why at its top with a comment holding "Long on purpose:".  Standard
library only; run by ctest from the source tree."""
import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
FILE_MAX, FUNCTION_MAX = 800, 100
REASON = "Long on purpose:"
problems = []


def c_functions(lines):
    """(name, first line, length) of each top-level function of a
    clang-formatted C file: a definition starts at column 0 and ends at the
    first '}' at column 0."""
    start = name = None
    for i, line in enumerate(lines):
        if start is None and re.match(r"^[A-Za-z_].*\(", line) and not line.rstrip().endswith(";") \
                and not line.startswith(("typedef", "#", "enum", "struct")):
            start, name = i, line.split("(")[0].split()[-1].lstrip("*")
        elif start is not None and line.startswith("}"):
            yield name, start, i - start + 1
            start = None


def says_why(lines, first):
    """A reason in the comment right above line `first`, or in its first lines."""
    window = lines[max(0, first - 12):first + 4]
    return any(REASON in line for line in window)


for path in sorted([*ROOT.glob("tools/**/*.[ch]"), *ROOT.glob("python/**/*.py")]):
    text = path.read_text(errors="replace")
    lines = text.splitlines()
    rel = path.relative_to(ROOT)
    if len(lines) > FILE_MAX and REASON not in "\n".join(lines[:40]):
        problems.append(f"{rel}: {len(lines)} lines (more than {FILE_MAX}), and no reason at its top")
    if path.suffix == ".py":
        funcs = [(n.name, n.lineno - 1, n.end_lineno - n.lineno + 1)
                 for n in ast.walk(ast.parse(text))
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    else:
        funcs = list(c_functions(lines))
    for name, first, length in funcs:
        if length > FUNCTION_MAX and not says_why(lines, first):
            problems.append(f"{rel}:{first + 1}: {name} is {length} lines (more than "
                            f"{FUNCTION_MAX}), and no reason at its top")

for p in problems:
    print(p)
checked = len(list(ROOT.glob("tools/**/*.[ch]"))) + len(list(ROOT.glob("python/**/*.py")))
print(f"{checked} files in tools/ and python/ checked: {len(problems)} too long without a reason")
sys.exit(1 if problems else 0)
