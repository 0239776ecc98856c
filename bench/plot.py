"""Draws the benchmark chart of docs/c-api.md from bench/results.json (one
figure set per build, as bench/collect.py writes it): per build, the
instructions a call costs over the direct call, and the time per call
(median, with its interquartile range as a band), of the hand-written
handlers (B1 against the C API, B1x with ffi.h where built) and the adapter.

usage: python bench/plot.py [bench/results.json] [docs/bench.png]
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

FORMS = ["cpu_v1", "cpu_v2", "cpu_v3", "gpu"]
COLORS = {"cpu_v1": "tab:blue", "cpu_v2": "tab:orange", "cpu_v3": "tab:green",
          "gpu": "tab:red"}


def draw(ins, ns, figures):
    for form in FORMS:
        rows = [r for r in figures["rows"] if r["form"] == form]
        x = [r["buffers"] for r in rows]
        c = COLORS[form]
        ins.plot(x, [r["instructions"]["B1"] - r["instructions"]["B0"] for r in rows],
                 color=c, marker="o", label=f"{form} B1 (by hand, C API)")
        if all("B1x" in r["instructions"] for r in rows):
            ins.plot(x, [r["instructions"]["B1x"] - r["instructions"]["B0"] for r in rows],
                     color=c, marker="^", linestyle=":", label=f"{form} B1x (by hand, ffi.h)")
        ins.plot(x, [r["instructions"]["B2"] - r["instructions"]["B0"] for r in rows],
                 color=c, marker="s", linestyle="--", label=f"{form} B2 (ccshim)")
        for v, style, marker in (("B1", "-", "o"), ("B1x", ":", "^"), ("B2", "--", "s")):
            if not all(v in r["ns_spread"] for r in rows):
                continue  # B1x: not built (the JSON's ffi_reference says why)
            s = [r["ns_spread"][v] for r in rows]
            ns.plot(x, [p["median"] for p in s], color=c, linestyle=style, marker=marker)
            ns.fill_between(x, [p["q1"] for p in s], [p["q3"] for p in s], color=c,
                            alpha=0.15)
    b = figures["build"]
    for ax in (ins, ns):
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 4, 16, 64], ["1", "4", "16", "64"])
        ax.set_xlabel("buffers per call")
        ax.grid(alpha=0.3)
    ins.set_ylabel("instructions over a direct call")
    ins.set_title(f"{b['compiler']}, {b['type']}\n{b['flags']}: per-call overhead (callgrind)",
                  fontsize=9)
    ns.set_ylabel("ns per call")
    ns.set_title(f"{b['compiler']}, {b['type']}\nper-call time (median of {figures['runs']} "
                 "runs, band: quartiles)", fontsize=9)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/results.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else "docs/bench.png"
    data = json.load(open(src))
    builds = data["builds"]
    fig, axes = plt.subplots(len(builds), 2, figsize=(11, 4.0 * len(builds)), squeeze=False)
    for (ins, ns), figures in zip(axes, builds):
        draw(ins, ns, figures)
    axes[0][0].legend(fontsize=7, ncol=2)
    fig.suptitle(f"ccshim {data['version']}, Release builds: adapter (dashed) vs typed "
                 "handlers written by hand, C API (solid) and ffi.h (dotted); same kernel "
                 "and frame", fontsize=10)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
