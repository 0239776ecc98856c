"""Puts the figure sets of several builds' `ccshim bench` runs into one file
each: the JSON (one entry of "builds" per build, each saying its build
type, compiler and flags) and the text (the tables one after the other).
make bench runs it (dev/bench.sh) on build-bench-gcc and build-bench-zig.

usage: python bench/collect.py --json OUT.json --text OUT.txt BUILD_DIR...

Each BUILD_DIR holds bench.json and bench.txt, as `ccshim bench --json
BUILD_DIR/bench.json | tee BUILD_DIR/bench.txt` writes them.
"""

import argparse
import json
import pathlib
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True, type=pathlib.Path)
    ap.add_argument("--text", required=True, type=pathlib.Path)
    ap.add_argument("builds", nargs="+", type=pathlib.Path)
    args = ap.parse_args(argv)
    sets, tables = [], []
    for d in args.builds:
        src = d / "bench.json"
        try:
            data = json.loads(src.read_text())
            table = (d / "bench.txt").read_text()
        except (OSError, ValueError) as e:
            sys.exit(f"collect: expected {src} and {d / 'bench.txt'} from ccshim bench: {e}")
        if "build" not in data:
            sys.exit(f"collect: {src} says no build (expected a \"build\" object; "
                     "an older ccshim bench?)")
        data["build"]["folder"] = d.name
        sets.append(data)
        # The line naming the JSON it wrote is the run's, not the collection's.
        tables.append("".join(line for line in table.splitlines(keepends=True)
                              if not line.startswith("wrote ")))
    versions = {s["version"] for s in sets}
    if len(versions) != 1:
        sys.exit(f"collect: expected one ccshim version, got {sorted(versions)}")
    out = {"version": versions.pop(), "builds": sets}
    args.json.write_text(json.dumps(out, indent=1) + "\n")
    args.text.write_text("\n".join(tables))
    print(f"wrote {args.json} and {args.text}")


if __name__ == "__main__":
    main()
