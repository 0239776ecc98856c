"""One row of docs/jax-matrix.md from a pytest log (-rfEs): the counts, and
a summary of what did not pass: each skip reason once with its count, and
failures and errors grouped by test file with the first line of the first
exception, so a row says why without dumping assertion text.  Paths of this
machine (the tree, the build, temporary folders) never reach the table.

usage: matrix_row.py LOG TREE BUILD   -> "COUNTS | WHY" on stdout
"""
import collections
import re
import sys

log, tree, build = sys.argv[1:4]
lines = open(log, errors="replace").read().splitlines()
counts = re.sub(r"^=* *| *=*$| in [0-9.]+s.*", "", lines[-1] if lines else "no output")


def clean(text):
    text = text.replace(build, "BUILD").replace(tree + "/", "").replace(tree, ".")
    text = re.sub(r"/tmp/[^ ,'\")]*", "TMP", text)
    return text


skips = collections.Counter()
failures = collections.OrderedDict()
for line in lines:
    m = re.match(r"SKIPPED \[(\d+)\] [^:]*:\d+: (.*)", line)
    if m:
        skips[clean(m.group(2))[:160]] += int(m.group(1))
        continue
    m = re.match(r"(FAILED|ERROR) (tests/python/)?([^:\s]+)(::\S+)?(?: - (.*))?", line)
    if m:
        kind, file, why = m.group(1).lower(), m.group(3), clean(m.group(5) or "")
        first = re.match(r"(\w+(?:Error|Exception)?: [^{]{0,80})", why)
        entry = failures.setdefault((kind, file), [0, first.group(1).strip() if first else ""])
        entry[0] += 1
parts = [f"{n} skipped: {why}" for why, n in skips.most_common()]
parts += [f"{n} {kind} in {file}" + (f" ({why})" if why else "")
          for (kind, file), (n, why) in failures.items()]
print(f"{counts} | {' <br> '.join(parts)}")
