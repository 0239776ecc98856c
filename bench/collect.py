"""Puts the figure sets of several builds' `ccshim bench` runs into one file
each: the JSON (one entry of "builds" per build, each saying its build
type, compiler and flags) and the text (the tables one after the other).
make bench runs it (dev/bench.sh) on build-bench-gcc and build-bench-zig.

usage: python bench/collect.py --json OUT.json --text OUT.txt BUILD_DIR...
       python bench/collect.py --markdown RESULTS.json

Each BUILD_DIR holds bench.json and bench.txt, as `ccshim bench --json
BUILD_DIR/bench.json | tee BUILD_DIR/bench.txt` writes them.  --markdown
prints the tables docs/c-api.md quotes, from the collected JSON.
"""

import argparse
import json
import pathlib
import sys


FORM_NAMES = {"cpu_v1": "CPU v1", "cpu_v2": "CPU v2", "cpu_v3": "CPU v3", "gpu": "GPU v2"}


def verdict(b1, b2):
    """As ccshim bench words it (bench.c time_verdict); b1: the reference's
    spread (B1 or B1x), b2: the adapter's."""
    if b2["median"] <= b1["median"]:
        return "met"
    return "in spread" if b2["median"] <= b1["q3"] else "MISSED"


def markdown(results):
    """One table per build, one row per form and arity: the adapter (B2)
    against both hand-written references, B1 (C API) and B1x (ffi.h; "—"
    where the build had no jaxlib headers); and P, the handler `ccshim port`
    writes where the call sites fix the counts, against B1x, and Pr, where
    they are known only at run time, against B1x and against B1r, the ffi.h
    handler written by hand for counts known at run time ("—" for CPU v3,
    which the port does not port)."""
    out = []
    for s in results["builds"]:
        b = s["build"]
        ffi = s.get("ffi_reference", {"built": False, "why_not": "not measured"})
        out.append(f"{b['compiler']}, {b['type']} `{b['flags']}` ({b['folder']}), "
                   f"ns the median of {s['runs']} runs [quartiles]; B1x: "
                   + (f"{b['cxx_compiler']} `{b['cxx_flags']} -std=c++17`:\n" if ffi["built"]
                      else f"not built ({ffi['why_not']}):\n"))
        out.append("| form | buffers | B0 / B1 / B1x / B2 instructions | B2 vs B1 | B2 vs B1x "
                   "| B1 ns | B1x ns | B2 ns | time vs B1 / B1x | P instructions, vs B1x "
                   "| P ns, time vs B1x | Pr instructions, vs B1x / B1r | B1r instructions "
                   "| Pr ns, time vs B1r | B1r ns |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in s["rows"]:
            t = r["ns_spread"]
            # Without callgrind (--no-instructions, no valgrind): no counts.
            i = r["instructions"] if s.get("instructions_measured", True) else {}
            ratio = ["{:.2f}".format((i["B2"] - i["B0"]) / (i[v] - i["B0"])) if v in i else "—"
                     for v in ("B1", "B1x")]
            ns = ["{median:.1f} [{q1:.1f}–{q3:.1f}]".format(**t[v]) if v in t else "—"
                  for v in ("B1", "B1x", "B2")]
            ins = " / ".join(f"{i[v]:.0f}" if v in i else "—" for v in ("B0", "B1", "B1x", "B2"))
            times = " / ".join(verdict(t[v], t["B2"]) if v in t else "—" for v in ("B1", "B1x"))
            def over(v, ref):
                return "{:.2f}".format((i[v] - i["B0"]) / (i[ref] - i["B0"]))
            p_ins = f"{i['P']:.0f}, {over('P', 'B1x')}" if "P" in i and "B1x" in i else "—"
            pr_ins = f"{i['Pr']:.0f}, {over('Pr', 'B1x')} / {over('Pr', 'B1r')}" \
                if "Pr" in i and "B1x" in i and "B1r" in i else "—"
            b1r_ins = f"{i['B1r']:.0f}" if "B1r" in i else "—"

            def timed(v, ref):
                return "{median:.1f} [{q1:.1f}–{q3:.1f}], ".format(**t[v]) + verdict(t[ref], t[v]) \
                    if v in t and ref in t else "—"
            b1r_ns = "{median:.1f} [{q1:.1f}–{q3:.1f}]".format(**t["B1r"]) if "B1r" in t else "—"
            out.append(f"| {FORM_NAMES[r['form']]} | {r['buffers']} | {ins} | {ratio[0]} | "
                       f"{ratio[1]} | {ns[0]} | {ns[1]} | {ns[2]} | {times} | {p_ins} | "
                       f"{timed('P', 'B1x')} | {pr_ins} | {b1r_ins} | {timed('Pr', 'B1r')} | "
                       f"{b1r_ns} |")
        out.append("")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", type=pathlib.Path, metavar="RESULTS.json")
    ap.add_argument("--json", type=pathlib.Path)
    ap.add_argument("--text", type=pathlib.Path)
    ap.add_argument("builds", nargs="*", type=pathlib.Path)
    args = ap.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(args.markdown.read_text())))
        return
    if not (args.json and args.text and args.builds):
        ap.error("expected --json OUT.json --text OUT.txt BUILD_DIR..., or --markdown FILE")
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
    # One line per row, so that a new run's diff reads row by row.
    text = json.dumps({k: v for k, v in out.items() if k != "builds"}, indent=1)[:-2]
    text += ',\n "builds": [\n'
    for n, s in enumerate(sets):
        head = {k: v for k, v in s.items() if k != "rows"}
        rows = ",\n".join("   " + json.dumps(r) for r in s["rows"])
        text += "  " + json.dumps(head)[:-1] + ', "rows": [\n' + rows + "\n  ]}"
        text += ",\n" if n + 1 < len(sets) else "\n"
    text += " ]\n}\n"
    json.loads(text)  # well-formed, or this run fails here
    args.json.write_text(text)
    args.text.write_text("\n".join(tables))
    print(f"wrote {args.json} and {args.text}")


if __name__ == "__main__":
    main()
