"""A GPU-only project's GPU path, lowered for cuda on a machine with no GPU
and rewritten by ccshim (census.py runs it, in zero-change mode):

    python -m ccshim.legacy --strict gpu_export.py PROJECT_KEY

The project's [gpu] program (its manifest) imports the project as its users
do and defines CASES: {name: (function, example arguments)}.  Each is
exported with platforms=("cuda",); its module (what XLA would compile) is
rewritten; every legacy call must be gone and every typed target must stand
for a kernel the project registered for CUDA (recorded by zero-change mode).
Prints one JSON line.
"""

import json
import sys

import manifest

key = sys.argv[1]
project = manifest.projects()[key]
scope: dict = {}
exec(compile(project["gpu"]["program"], f"{key}'s [gpu] program", "exec"), scope)

import jax  # noqa: E402  (after the program: zero-change mode is on by then)
from jax import export  # noqa: E402

import ccshim.export as ce  # noqa: E402
import ccshim.legacy as cl  # noqa: E402

recorded = {name for (platform, name) in cl.recorded() if platform == "cuda"}
checks = [export.DisabledSafetyCheck.custom_call(name) for name in recorded]
cases, all_mapped = {}, True
for name, (fn, args) in scope["CASES"].items():
    try:
        exp = export.export(jax.jit(fn), platforms=("cuda",), disabled_checks=checks)(*args)
        module = exp.mlir_module_serialized
        done = ce.rewrite(module, platform="cuda")
        left = [c.target for c in ce.read(done.data, platform="cuda").calls()
                if c.kind == "legacy"]
        typed = {t["typed"]: t["legacy"] for t in done.targets}
        unmapped = sorted(legacy for legacy in typed.values() if legacy not in recorded)
        ok = bool(typed) and not left and not unmapped
        cases[name] = {"typed": sorted(typed), "legacy_left": left, "unmapped": unmapped,
                       "ok": ok}
    except Exception as e:  # said per case
        ok = False
        cases[name] = {"error": f"{type(e).__name__}: {str(e)[:300]}", "ok": False}
    all_mapped = all_mapped and ok
targets = sorted({t for c in cases.values() for t in c.get("typed", [])})
print(json.dumps({"cases": cases, "all_mapped": all_mapped, "recorded_cuda": sorted(recorded),
                  "summary": f"{sum(c['ok'] for c in cases.values())} of {len(cases)} "
                             f"case(s) lowered and rewritten, {len(targets)} typed target(s)"
                             f" ({', '.join(targets)}), each a kernel registered for CUDA"
                  if all_mapped else f"{sum(c['ok'] for c in cases.values())} of "
                  f"{len(cases)} case(s) ok: {json.dumps(cases)[:400]}"}))
