"""A short veros 1.7.0 model run, its code unchanged: the acc_basic setup
(an idealised Antarctic circumpolar current, shipped in veros's sdist) on
veros's JAX backend in float64, four iterations of half a day, run by
tests/python/test_legacy_mode.py in a process of its own, in a fresh
working folder (veros writes its output files there):

    veros_model_program.py MODE VEROS_BUILD_DIR

MODE "xla": on XLA's legacy path; "strict": `import ccshim.legacy` first,
in strict mode, so that the run fails if any legacy call reaches XLA.
Prints one JSON line: a SHA-256 over every active state variable's bytes
after the run, the typed targets ccshim registered, the iterations run.
"""
import hashlib
import importlib.util
import json
import os
import sys

mode, root = sys.argv[1], sys.argv[2]
missing = [m for m in ("h5netcdf", "h5py", "loguru", "click", "tqdm", "requests", "PIL",
                       "entrypoints") if importlib.util.find_spec(m) is None]
if missing:  # veros's own requirements, which dev/setup.sh installs in each venv that runs this
    print(json.dumps({"skip": f"veros's requirements {missing} are not installed here"}))
    sys.exit(0)
if mode != "xla":
    os.environ["CCSHIM_LEGACY"] = "strict"
    import ccshim.legacy  # the one line
sys.path.insert(0, root)

import numpy as np  # noqa: E402
from veros import runtime_settings  # noqa: E402

runtime_settings.update(backend="jax", float_type="float64", force_overwrite=True)
from veros.setups.acc_basic import ACCBasicSetup  # noqa: E402

sim = ACCBasicSetup(override=dict(runlen=86400.0 * 2))  # its dt_tracer is half a day
sim.setup()
sim.run()
digest = hashlib.sha256()
active = 0
for name in sorted(sim.state.var_meta):
    try:
        value = getattr(sim.state.variables, name)
    except RuntimeError:  # "not active in this configuration"
        continue
    active += 1
    digest.update(name.encode())
    digest.update(np.ascontiguousarray(np.asarray(value)).tobytes())
report = {"digest": digest.hexdigest(), "variables": active,
          "iterations": int(sim.state.variables.itt),
          "wrapped": ccshim.legacy.wrapped() if mode != "xla" else []}
print(json.dumps(report))
