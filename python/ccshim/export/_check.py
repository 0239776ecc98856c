"""Checking a rewrite: the original on XLA's legacy path, the rewritten
artifact through ccshim, on the same inputs, byte for byte."""

from __future__ import annotations

from typing import Any

from ._common import DEFAULT_PREFIX, ArtifactError, _jaxlib_version
from ._read import read
from ._register import _kernel_for, load, register


def _inputs_for(exported, inputs: Any, seed: int) -> list:
    import numpy as np
    if inputs is not None:
        values = list(inputs)
        if len(values) != len(exported.in_avals):
            raise ArtifactError(f"{len(values)} input(s) given; the artifact takes "
                                f"{len(exported.in_avals)}")
        return values
    rng = np.random.default_rng(seed)
    values = []
    for aval in exported.in_avals:
        dtype = np.dtype(aval.dtype)
        if dtype.kind == "c":
            v = rng.standard_normal(aval.shape) + 1j * rng.standard_normal(aval.shape)
        elif dtype.kind == "f":
            v = rng.standard_normal(aval.shape)
        elif dtype.kind == "b":
            v = rng.integers(0, 2, aval.shape)
        else:
            v = rng.integers(0, 8, aval.shape)
        values.append(np.asarray(v).astype(dtype))
    return values


def check(original: Any, rewritten: Any, kernels: Any, *, inputs: Any = None, seed: int = 0,
          prefix: str = DEFAULT_PREFIX, platform: str | None = None) -> dict:
    """Runs ``original`` with its legacy targets on XLA's legacy path
    (registered there from ``kernels``, while jaxlib still has that path)
    and ``rewritten`` through ccshim, on the same inputs (``inputs``, or
    drawn from ``seed``), and compares every output's bytes."""
    import jax
    import numpy as np
    from .. import jax as cj
    orig = read(original, platform=platform)
    new = read(rewritten, platform=platform)
    where = platform or (orig.platforms[0] if len(orig.platforms) == 1 else None)
    if where is None:
        raise ArtifactError(f"{orig.what}: runs on {', '.join(orig.platforms) or 'an unknown '}"
                            "platform; pass platform=")
    # the legacy calls that platform's branch holds (ccshim._branches)
    legacy = sorted({(c.target, c.api_version) for c in orig.calls(prefix)
                     if c.kind == "legacy" and (c.platforms is None or where in c.platforms)})
    missing = [t for t, _ in legacy if _kernel_for(kernels, t, where) is None]
    if missing:
        raise ArtifactError(f"no kernel given for {', '.join(missing)}")
    for target, _ in legacy:
        cj.register_xla_legacy(target, _kernel_for(kernels, target, where), platform=where)
    register(new, kernels, prefix=prefix, platform=where)
    exp_orig = orig.as_exported()
    exp_new = load(new, prefix=prefix)
    args = _inputs_for(exp_orig, inputs, seed)
    out_orig = jax.tree_util.tree_leaves(exp_orig.call(*args))
    out_new = jax.tree_util.tree_leaves(exp_new.call(*args))
    results = []
    for i, (a, b) in enumerate(zip(out_orig, out_new)):
        a, b = np.asarray(a), np.asarray(b)
        same = a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        results.append({"output": i, "dtype": str(a.dtype), "shape": list(a.shape),
                        "equal": same,
                        "differing_bytes": 0 if same else _differing(a, b)})
    return {"original": orig.what, "rewritten": new.what, "platform": where,
            "reference": f"XLA's legacy custom-call path (jaxlib {_jaxlib_version()})",
            "legacy_targets": [t for t, _ in legacy], "outputs": results,
            "equal": all(r["equal"] for r in results) and len(out_orig) == len(out_new)}


def _differing(a, b) -> int:
    import numpy as np
    if a.shape != b.shape or a.dtype != b.dtype:
        return -1
    x = np.frombuffer(a.tobytes(), np.uint8)
    y = np.frombuffer(b.tobytes(), np.uint8)
    return int((x != y).sum())
