"""Draws the README's benchmark chart from `ccshim bench --json` output.

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


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/results.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else "docs/bench.png"
    data = json.load(open(src))
    fig, (ins, ns) = plt.subplots(1, 2, figsize=(11, 4.2))
    for form in FORMS:
        rows = [r for r in data["rows"] if r["form"] == form]
        x = [r["buffers"] for r in rows]
        c = COLORS[form]
        ins.plot(x, [r["instructions"]["B1"] - r["instructions"]["B0"] for r in rows],
                 color=c, marker="o", label=f"{form} B1 (by hand)")
        ins.plot(x, [r["instructions"]["B2"] - r["instructions"]["B0"] for r in rows],
                 color=c, marker="s", linestyle="--", label=f"{form} B2 (ccshim)")
        ns.plot(x, [r["ns"]["B1"] for r in rows], color=c, marker="o")
        ns.plot(x, [r["ns"]["B2"] for r in rows], color=c, marker="s", linestyle="--")
    for ax in (ins, ns):
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 4, 16, 64], ["1", "4", "16", "64"])
        ax.set_xlabel("buffers per call")
        ax.grid(alpha=0.3)
    ins.set_ylabel("instructions over a direct call")
    ins.set_title("Per-call overhead (callgrind)")
    ns.set_ylabel("ns per call")
    ns.set_title("Per-call time (median)")
    ins.legend(fontsize=7, ncol=2)
    fig.suptitle(f"ccshim {data['version']}: adapter (dashed) vs a hand-written "
                 "typed handler (solid), same legacy kernel and frame")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
