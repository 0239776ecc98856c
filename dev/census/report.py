"""docs/census.md and the README's census table, written from the census's
results (dev/census/results/, made by census.py run) and its manifest."""

from __future__ import annotations

import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DOC = ROOT / "docs" / "census.md"
README = ROOT / "README.md"
BEGIN, END = "<!-- census table: dev/census/report.py writes it -->", "<!-- end of census table -->"
NEWEST, PINNED = "0.12.0.1", "0.10.2"


def _counts(c: dict) -> str:
    parts = [f"{c[k]} {k}" for k in ("passed", "failed", "error", "skipped") if c.get(k)]
    return ", ".join(parts) or "no tests"


def _run_of(result: dict, jax: str) -> dict | None:
    return next((r for r in result.get("runs", []) if r["jax"] == jax), None)


def verdict(p: dict, result: dict | None) -> str:
    """One line: what the census found for the project."""
    if p["status"] == "not-run":
        return f"not run: {p['why']}"
    if p["status"] == "gpu-only":
        gpu = (result or {}).get("gpu")
        if not gpu:
            return f"GPU only ({p['why']}); no CPU check of its GPU path yet"
        if gpu.get("error"):
            return f"GPU only; its GPU path could not be lowered here: {gpu['error'][:120]}"
        ran = (result or {}).get("gpu_run")
        on_gpu = (f"; its own suite on a GPU ({ran['device']}, {ran['date']}): "
                  f"{'passed' if ran['ok'] else 'FAILED'} make test-gpu's census step"
                  if ran else "")
        return (f"GPU only; its GPU path lowered for cuda and rewritten: "
                f"{'every target mapped' if gpu.get('all_mapped') else 'NOT every target mapped'}"
                f"{on_gpu}")
    if result is None:
        return "not run yet (make census)"
    if result.get("error"):
        return f"could not run: {result['error']}"
    run = _run_of(result, NEWEST)
    if run is None:
        why = p.get("why", "")
        return why if why.startswith("no run") else f"no run on JAX {NEWEST}" + \
            (f": {why}" if why else "")
    if run.get("error"):
        return f"could not run on JAX {NEWEST}: {run['error'][:160]}"
    lost = {t: v for r in run["ranks"].values() for t, v in r["lost"].items()}
    missing = sorted({t for r in run["ranks"].values() for t in r["missing_targets"]})
    if not lost:
        return "passes" + (f" (the report lacks {', '.join(missing)})" if missing else "")
    unexplained = [t for t, v in lost.items() if not v["cause"]]
    if unexplained:
        return f"fails: {len(unexplained)} test(s) lost unexplained"
    causes = sorted({f"{v['cause']} (JAX {v['since']})" for v in lost.values()})
    return f"{len(lost)} test(s) lost: " + "; ".join(causes)


def _group(p: dict, result: dict | None) -> str:
    """Which line of the README's table a project is on (docs/census.md has the rest)."""
    if p["status"] == "gpu-only":
        return "GPU only: on CPU, its GPU path lowered for cuda and rewritten, or why not"
    if p["status"] == "not-run":
        return "not run here (why: `docs/census.md`)"
    full = verdict(p, result)
    if full == "passes":
        return "its own suite passes, every test as on its reference"
    pinned = _run_of(result or {}, PINNED)
    if full.startswith("no run") and pinned and not pinned.get("error") and \
            not any(r["lost"] for r in pinned["ranks"].values()):
        return f"not installable with JAX {NEWEST}; its suite passes on {PINNED}"
    if "lost:" in full and "unexplained" not in full:
        return "loses tests to what JAX itself changed (each test and cause in `docs/census.md`)"
    return "FAILS, or could not run: " + full[:80]


def _summary_row(p: dict, result: dict | None) -> str:
    ref = (result or {}).get("reference")
    run = _run_of(result or {}, NEWEST)
    ref_text = f"JAX {ref['jax']}: " + "; ".join(
        _counts(c) for c in ref["counts"].values()) if ref else ""
    texts = []
    for jax in (NEWEST, PINNED):
        r = _run_of(result or {}, jax)
        texts.append("; ".join(_counts(x["counts"]) for x in r["ranks"].values())
                     if r and not r.get("error") else ("could not run" if r else ""))
    kernels = sorted({k for r in (run or {}).get("ranks", {}).values() for k in r["kernels"]})
    return (f"| {p['name']} {p['version']} | {p['released']} | {', '.join(p['platforms'])} | "
            f"{ref_text} | {texts[0]} | {texts[1]} | {len(kernels) or ''} | "
            f"{verdict(p, result)} | {_ported((result or {}).get('port'))} |")


def _ported(port: dict | None) -> str:
    """The summary's "ported" cell: a kept port's run, else what `ccshim
    port` made of the tree."""
    if not port:
        return ""
    run = port.get("run")
    if port.get("not_built"):
        return f"ported ({len(port['files'])} files), not built here"
    if run and run.get("error"):
        return "port kept; could not run"
    if run:
        untyped = len(run["untyped"]) + sum(len(r["untyped"]) for r in run.get("ranks", {}).values())
        typed = "every call typed" if not untyped else f"{untyped}+ untyped"
        return f"{_counts(run['counts'])}, no ccshim; {typed}"
    if not port["files"]:
        return f"nothing ({len(port['refused'])} refused)"
    return f"not kept: {len(port['files'])} files edited, {len(port['refused'])} refused"


def _port_lines(port: dict | None, key: str) -> list[str]:
    """The per-project lines of `ccshim port`."""
    if not port:
        return []
    out = []
    if port["kept"]:
        out.append(f"- `ccshim port`: its patch edits {len(port['files'])} files, kept as "
                   f"`dev/census/ports/{key}.patch` (what it refused: `{key}.refused`)")
    elif port["files"]:
        out.append(f"- `ccshim port` of its tree: a patch of {len(port['files'])} file(s) "
                   "(not kept: not built and run)")
    else:
        out.append("- `ccshim port` of its tree: nothing ported")
    run = port.get("run")
    if port.get("not_built"):
        out.append(f"  - not built or run here: {port['not_built']}")
    if run and run.get("error"):
        out.append(f"  - the ported build and suite on JAX {run['jax']}: could not run: "
                   f"{run['error'][:300]}")
    elif run:
        calls = ", ".join(f"{t} {n}" for t, n in sorted(run["calls"].items()))
        out.append(f"  - built by its own build, its suite on JAX {run['jax']} where ccshim "
                   f"cannot be imported: {_counts(run['counts'])}; lost: "
                   f"{', '.join(run['lost']) or 'none'}; custom calls XLA compiled: {calls}; "
                   f"not typed: {len(run['untyped']) or 'none'}")
        if run.get("conform"):
            sides = run["conform"]
            out.append(f"  - `ccshim conform --against-python`, each ported handler against the "
                       f"legacy build's kernel run by XLA's legacy path: "
                       f"{sum(c['status'] == 'equal' for c in sides.values())} of {len(sides)} "
                       "equal: " + ", ".join(
                           f"{n} {c['status']}" + (f" ({c['equal']}/{c['runs']} runs)"
                                                   if c.get("runs") else "")
                           for n, c in sorted(sides.items())))
        for ranks, r in sorted(run.get("ranks", {}).items()):
            out.append(f"  - the same on {ranks} ranks: {_counts(r['counts'])}; lost: "
                       f"{', '.join(r['lost']) or 'none'}; not typed: "
                       f"{len(r['untyped']) or 'none'}")
    for why in sorted(set(port["refused"])):
        n = port["refused"].count(why)
        out.append(f"  - not ported{f' ({n}×)' if n > 1 else ''}: {why[:300]}")
    return out


def _scanned(t: dict) -> str:
    form = "?" if t["api_version"] is None else t["api_version"]
    pattern = f" ({t['pattern']})" if t.get("pattern") else ""
    return f"{t['name']}{pattern} [{t['platform']} v{form}]"


def _section(p: dict, result: dict | None) -> list[str]:
    out = [f"### {p['name']} {p['version']}", "",
           f"Released {p['released']}; {', '.join(p['platforms'])}. "
           f"{p.get('repository', '')}", "",
           f"- legacy forms: {p['forms']}",
           f"- found by: {'; '.join(p['found_by'])}",
           f"- verdict: {(said := verdict(p, result))}"]
    if p["status"] != "runs" and p.get("why") and p["why"] not in said:
        out.append(f"- why the census does not run its suite here: {p['why']}")
    result = result or {}
    ref = result.get("reference")
    if ref:
        out.append(f"- reference, XLA's legacy path of JAX {ref['jax']} (Python {ref['python']}): "
                   + "; ".join(f"{r} rank(s): {_counts(c)}" for r, c in ref["counts"].items()))
    for run in result.get("runs", []):
        if run.get("error"):
            out.append(f"- JAX {run['jax']} through ccshim: could not run: {run['error']}")
            continue
        for ranks, r in run["ranks"].items():
            kernels = ", ".join(sorted(v["typed"] for v in r["kernels"].values())) or "none"
            out.append(f"- JAX {run['jax']} through `ccshim legacy --strict` ({ranks} rank(s), "
                       f"{run['python']}): {_counts(r['counts'])}; kernels through ccshim: "
                       f"{kernels}")
            for test, v in sorted(r["lost"].items()):
                why = f"{v['cause']} (changed in JAX {v['since']})" if v["cause"] else \
                    "UNEXPLAINED"
                out.append(f"  - lost: `{test}` ({v['outcome']}: {v['message'][:200]}): {why}")
    scan = result.get("scan") or []
    if scan:
        listed = ", ".join(sorted({_scanned(t) for t in scan if "name" in t}))
        out.append(f"- `ccshim scan` of its tree lists {len(scan)} target(s): {listed}")
        # the registering calls scan met (not how a capsule is made: m.def,
        # EncapsulateFunction; nor a project's own wrapper)
        spellings = sorted({v for t in scan for v in t.get("via") or () if "register" in v.lower()})
        if spellings:  # results of census.py scan from issue 45 on
            out.append("- registered through: " + ", ".join(f"`{v}`" for v in spellings)
                       + " (which JAX removed each, and what ccshim restores: docs/legacy-surface.md)")
    out += _port_lines(result.get("port"), p["key"])
    gpu = result.get("gpu")
    if gpu:
        if gpu.get("error"):
            out.append(f"- GPU path lowered for cuda here: failed: {gpu['error'][:300]}")
        else:
            out.append(f"- GPU path lowered for cuda here and rewritten: "
                       f"{gpu.get('summary', '')}")
    ran = result.get("gpu_run")
    if ran:
        out.append(f"- on a GPU (make test-gpu's census step, {ran['date']}, {ran['device']}, "
                   f"JAX {ran['jax']}; {ran['selection']}): {ran['summary']}")
    out.append("")
    return out


def documents(projects: dict, results_dir: pathlib.Path, readme: str) -> tuple[str, str]:
    """docs/census.md's text, and the README's text with its census table made anew."""
    results = {}
    for key in projects:
        path = results_dir / f"{key}.json"
        results[key] = json.loads(path.read_text()) if path.exists() else None
    made = sorted({r["made"] for r in results.values() if r})
    passing = [k for k, p in projects.items() if verdict(p, results[k]) == "passes"]
    unreleased = [k for k, p in projects.items() if p.get("published") == "repository"]
    lines = [
        "# The census: released legacy JAX extensions through ccshim", "",
        "*Written by `make census` (`dev/census/census.py`) from `dev/census/results/`; runs of "
        f"{', '.join(made) or 'none yet'}. Do not edit by hand.*", "",
        f"{len(projects)} projects that shipped legacy custom calls ("
        f"{len(projects) - len(unreleased)} released on PyPI; "
        f"{', '.join(unreleased) or 'none'} only in its repository), found by "
        "searching public code for the legacy registration and lowering forms "
        "(`dev/census/README.md` lists the searches), each at its last legacy release. For "
        "each that runs here, its own test suite as published, nothing of it edited: the "
        "reference on XLA's legacy path of the newest JAX it allows (committed once, "
        "`tests/fixtures/projects/`), then the same suite through `ccshim legacy --strict "
        "--report` on JAX 0.12.0.1 and 0.10.2, with the kernels that went through ccshim; "
        "`ccshim scan` of its tree; for GPU-only projects their GPU path lowered for "
        "cuda on the CPU and rewritten; and `ccshim port` of its tree (docs/port.md): what "
        "it ported and refused, and where its patch is kept, the ported tree built by the "
        "project's own build and its suite run on that build in a Python where ccshim "
        "cannot be imported, every custom call XLA compiled read back from XLA's dump.", "",
        f"**{len(passing)} pass their own suites through ccshim on JAX {NEWEST} with no test "
        f"that passes on the reference lost ({len(set(passing) - set(unreleased))} of them "
        f"released on PyPI):** {', '.join(passing) or 'none'}.", "",
        "| project | released | platforms | reference (XLA's legacy path) | "
        f"JAX {NEWEST} through ccshim | JAX {PINNED} through ccshim | kernels | verdict | "
        f"ported (`ccshim port`, JAX {NEWEST}) |",
        "|---|---|---|---|---|---|---|---|---|",
        *[_summary_row(p, results[k]) for k, p in projects.items()], "",
        "## Per project", ""]
    for key, p in projects.items():
        lines += _section(p, results[key])
    return "\n".join(lines).rstrip() + "\n", _readme_table(projects, results, readme)


def write(projects: dict, results_dir: pathlib.Path) -> None:
    doc, readme = documents(projects, results_dir, README.read_text())
    DOC.write_text(doc)
    README.write_text(readme)


def _readme_table(projects: dict, results: dict, text: str) -> str:
    if BEGIN not in text or END not in text:
        raise ValueError(f"README.md lacks the census table's markers {BEGIN!r} ... {END!r}")
    groups: dict[str, list[str]] = {}
    for key, p in projects.items():
        groups.setdefault(_group(p, results[key]), []).append(f"{p['name']} {p['version']}")
    order = ("its own", "not installable", "loses", "FAILS", "GPU", "not run")
    rows = [f"| what the census found on JAX {NEWEST} | projects |", "|---|---|"]
    rows += [f"| {g} ({len(names)}) | {', '.join(names)} |" for g, names in
             sorted(groups.items(), key=lambda kv: [kv[0].startswith(o) for o in order].index(True))]
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return head + BEGIN + "\n" + "\n".join(rows) + "\n" + END + tail
