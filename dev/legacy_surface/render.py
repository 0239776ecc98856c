"""docs/legacy-surface.md from dev/legacy_surface/surface.json (derive.py's
result) and zero-change mode's tables (ccshim.legacy._restored): every name
JAX removed in the families a legacy custom-call extension and its tests
touch, the release that removed it, and what ccshim does with it.

    python3 dev/legacy_surface/render.py      # rewrites the page

tests/python/test_legacy_surface.py holds the page to this rendering, and
each restored name to a test that calls it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = HERE / "surface.json"
PAGE = ROOT / "docs" / "legacy-surface.md"
sys.path.insert(0, str(ROOT / "python"))

# Only the tables: importing ccshim.legacy would turn the mode on (and need JAX).
_mode = os.environ.get("CCSHIM_LEGACY")
os.environ["CCSHIM_LEGACY"] = "off"
try:
    from ccshim.legacy import _restored  # noqa: E402
finally:
    if _mode is None:
        del os.environ["CCSHIM_LEGACY"]
    else:
        os.environ["CCSHIM_LEGACY"] = _mode

EXTEND_FFI = "jax.extend.ffi.register_ffi_target, pycapsule, include_dir, ffi_call, ffi_lowering"

# A derived name (or module) that a RESTORED / NOT_RESTORED entry covers,
# when the entry's name is not the derived one itself.
COVERED_BY = {
    "jax.abstract_arrays": "jax.abstract_arrays.ShapedArray",
    "jax.config": "jax.config (the module): from jax.config import config",
    "jax.config.config": "jax.config (the module): from jax.config import config",
    "jax.lib.xla_client": "jax.lib.xla_client.register_custom_call_target",
    "jax.interpreters.xla.backend_specific_translations":
        "jax.interpreters.xla.backend_specific_translations, translations",
    "jax.interpreters.xla.translations":
        "jax.interpreters.xla.backend_specific_translations, translations",
    "jax.experimental.enable_x64": "jax.experimental.enable_x64, disable_x64",
    "jax.experimental.disable_x64": "jax.experimental.enable_x64, disable_x64",
    "jaxlib.hlo_helpers": "jaxlib.hlo_helpers (all but custom_call)",
    "jax.extend.ffi": EXTEND_FFI,
    "jax.extend.ffi.register_ffi_target": EXTEND_FFI,
    "jax.extend.ffi.pycapsule": EXTEND_FFI,
    "jax.extend.ffi.include_dir": EXTEND_FFI,
    "jax.extend.ffi.ffi_call": EXTEND_FFI,
    "jax.extend.ffi.ffi_lowering": EXTEND_FFI,
    "jax.lib.xla_client.ops": "xla_client.ops (jaxlib's and jax.lib's)",
    "jax.lib.xla_client.Shape": "xla_client.ops (jaxlib's and jax.lib's)",
    "jaxlib.xla_client.ops": "xla_client.ops (jaxlib's and jax.lib's)",
}

# The test (in tests/python/test_legacy_plumbing.py) that calls each
# restored name as released code of its years did.
TESTS = {
    "jax.lib.xla_client.register_custom_call_target":
        "test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back",
    "jaxlib.xla_client.register_cpu_custom_call_target":
        "test_register_cpu_custom_call_target_records_a_legacy_cpu_kernel",
    "jax.lib.xla_client.register_cpu_custom_call_target":
        "test_register_cpu_custom_call_target_records_a_legacy_cpu_kernel",
    "jaxlib.hlo_helpers.custom_call": "test_a_lowering_rule_passing_ir_constant_a_python_int_runs",
    "jax.interpreters.mlir.custom_call":
        "test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back",
    "jax.interpreters.mlir.hlo": "test_a_lowering_rule_building_mlir_hlo_custom_call_op_runs",
    "jax.interpreters.mlir.aval_to_ir_type(aval)":
        "test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back",
    "jax.core.Primitive": "test_a_lowering_rule_passing_ir_constant_a_python_int_runs",
    "jax.abstract_arrays.ShapedArray":
        "test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back",
    "jax.core.raise_to_shaped":
        "test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back",
    "jax.interpreters.ad.Zero.from_value":
        "test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back",
    "jax.interpreters.ad.primitive_jvps: None as an output tangent":
        "test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back",
    "jax.core.get_aval": "test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back",
    "jax.lax.zeros_like_array":
        "test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back",
    "jax.interpreters.batching.moveaxis":
        "test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back",
    "jax.interpreters.batching.not_mapped":
        "test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back",
    "jax.interpreters.mlir.ir_constant(a Python scalar)":
        "test_a_lowering_rule_passing_ir_constant_a_python_int_runs",
    "jax.experimental.enable_x64, disable_x64":
        "test_each_restored_name_maps_onto_the_running_jax_and_is_taken_back",
    EXTEND_FFI: "test_jax_extend_ffi_registers_as_jax_0_5_to_0_6_did",
    "jax.config (the module): from jax.config import config":
        "test_from_jax_config_import_config_is_jax_configuration_object",
    "jax.interpreters.xla.backend_specific_translations, translations":
        "test_xlabuilder_translation_rules_run_as_lowerings",
    "jax._src.interpreters.xla._backend_specific_translations":
        "test_xlabuilder_translation_rules_run_as_lowerings",
    "xla_client.ops (jaxlib's and jax.lib's)": "test_xlabuilder_translation_rules_run_as_lowerings",
}

# Why a derived name that no entry covers is not restored: the first
# (prefix, reason) whose prefix the name starts with.
REASONS = (
    ("jaxlib.hlo_helpers.", None),  # NOT_RESTORED's "jaxlib.hlo_helpers (all but custom_call)"
    ("jax.interpreters.mlir.",
     "lowering machinery or a re-exported helper (dialects, utilities), not custom-call "
     "plumbing; the custom call's own names (custom_call, hlo, ir_constant, aval_to_ir_type) "
     "are restored"),
    ("jax.interpreters.xla.",
     "XLA translation machinery that MLIR lowering replaced in the 0.4 series; ccshim restores "
     "only the registries translation rules were put in, run as lowerings"),
    ("jax.interpreters.ad.",
     "JAX's autodiff internals; an extension's rules go through ad.primitive_jvps, "
     "ad.primitive_transposes and ad.defjvp, which JAX keeps"),
    ("jax.interpreters.batching.",
     "JAX's batching internals; an extension's rules go through batching.primitive_batchers, "
     "which JAX keeps"),
    ("jax.core.",
     "JAX's tracing internals, not custom-call plumbing; what a primitive's rules need is "
     "restored (Primitive, get_aval, raise_to_shaped) or still in jax.core and jax.extend.core"),
    ("jax.extend.core.", "a call primitive of JAX's own, not an extension's custom call"),
    ("jax.abstract_arrays.",
     "an abstract value other than ShapedArray or a helper of the module's; custom-call rules "
     "use ShapedArray, restored"),
    ("jax.linear_util",
     "JAX's internal function-wrapping utilities (wrap_init, transformation), used by JAX's "
     "transformations, not by custom-call rules"),
    ("jax.test_util.",
     "JAX's own test harness of those years (JaxTestCase, rand_*, tolerances), now private "
     "(jax._src.test_util, with absl): general test machinery, not custom-call plumbing; "
     "check_grads, check_jvp and check_vjp remain in jax.test_util"),
    ("jax.config.",
     "the module's own internals of JAX 0.2.12 and before (Config, FLAGS, flags); JAX's "
     "configuration object, jax.config, has update and read"),
    ("jax.lib.xla_bridge",
     "backend queries, general JAX API and not custom-call plumbing: jax.devices(), "
     "jax.default_backend(), jax.local_device_count()"),
    ("jax.lib.xla_client.",
     "XLA client internals (clients, devices, shardings, builder types) with no faithful "
     "equivalent in JAX today; the custom-call parts (register_custom_call_target, ops, "
     "Shape) are restored"),
    ("jaxlib.xla_client.",
     "XLA client internals (clients, devices, shardings, builder types) with no faithful "
     "equivalent in JAX today; the custom-call parts (register_custom_call_target, "
     "register_cpu_custom_call_target, ops) are restored"),
    ("jax.lib.",
     "jaxlib's own modules re-exported (LAPACK, cuSOLVER, pytree, versions, the XLA "
     "extension): not an extension's custom-call plumbing"),
    ("jax.experimental.",
     "not custom-call plumbing (sharding, mutable arrays, saved-input VJPs)"),
)


def disposition(entry: dict) -> tuple[str, str]:
    """("restored" | "not restored", what): the entry's fate in zero-change
    mode."""
    restored = {r.name: r for r in _restored.RESTORED}
    not_restored = {r.name: r for r in _restored.NOT_RESTORED}
    key = COVERED_BY.get(entry["name"], entry["name"])
    if key in restored:
        return "restored", f"{restored[key].now} (`{TESTS[key]}`)"
    if key in not_restored:
        return "not restored", not_restored[key].why
    for prefix, reason in REASONS:
        if entry["name"].startswith(prefix):
            if reason is None:
                return "not restored", not_restored[f"{prefix[:-1]} (all but custom_call)"].why
            return "not restored", reason
    raise KeyError(entry["name"])


def covered(data: dict) -> set[str]:
    """The RESTORED / NOT_RESTORED names that some derived entry covers."""
    return {COVERED_BY.get(e["name"], e["name"]) for e in data["removed"]}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(data: dict) -> str:
    out = [
        "# JAX's legacy surface, and what zero-change mode does with it",
        "",
        "Every public name that JAX removed, release by release, in the modules a legacy "
        "custom-call extension and its tests use: custom-call registration, lowering, "
        "primitives and abstract values, and test-time configuration. Derived from the "
        f"released packages themselves (jax {data['jax_releases'][0]} to "
        f"{data['jax_releases'][1]}; jaxlib {data['jaxlib_releases'][0]} to "
        f"{data['jaxlib_releases'][1]}) by `dev/legacy_surface/derive.py`, whose result is "
        "`dev/legacy_surface/surface.json`; this page is `dev/legacy_surface/render.py`'s "
        "rendering of it with zero-change mode's tables (`docs/legacy.md`), checked by "
        "`tests/python/test_legacy_surface.py`.",
        "",
        "How: pip downloads a spread of releases (the first and last of each minor) into the "
        "per-user cache, `ast` reads each module's top-level names (a name in a module's "
        "`_deprecations` table counts while it still gives a value), and a binary search over "
        "the releases between two samples finds the first release without each name (a name "
        "gone and back again between two samples is not seen). jaxlib's "
        "Python (`xla_client.py`, `hlo_helpers.py`) is read from its wheels, which PyPI keeps "
        "from 0.4.13 on only: a name an older jaxlib dropped is not seen. `jax.lib.xla_client` "
        "was jaxlib's module itself until JAX gave it a file of its own; its names before "
        "that are jaxlib.xla_client's rows. Last with it and Removed in are adjacent releases "
        "on PyPI (jaxlib 0.4.14 to 0.4.17 are not there). Changelog: the release under which "
        "JAX's CHANGELOG.md (" + (data.get("changelog_from") or "not given") + ") first names "
        "the entry beside the word removed, where it does (a cross-check, not the source of "
        "the release columns).",
        "",
        "Names whose meaning changed without their removal (a signature, a return) are not "
        "seen by presence; they are `docs/legacy.md`'s rows, listed at the end.",
        "",
    ]
    titles = {"registration": "Custom-call registration", "lowering": "Lowering",
              "primitives": "Primitives and abstract values",
              "test-config": "Test-time configuration"}
    for family, modules in data["families"].items():
        rows = [e for e in data["removed"] if e["family"] == family]
        out += [f"## {titles[family]}", "",
                "Modules: " + ", ".join(f"`{m}`" for m in modules) + f". {len(rows)} removed.",
                "", "| Name | Last with it | Removed in | Deprecated in | Changelog | ccshim |",
                "|---|---|---|---|---|---|"]
        notes: list[str] = []  # a reason many rows share, said once below the table
        shared = {reason for _, reason in REASONS}
        for e in rows:
            fate, what = disposition(e)
            if what in shared:
                if what not in notes:
                    notes.append(what)
                what = f"note {notes.index(what) + 1}"
            name = f"`{e['name']}`" + (" (module)" if e["kind"] == "module" else "")
            changelog = (e.get("changelog") or "").split(":")[0]
            out.append(f"| {name} | {e['last_with']} | {e['removed']} | "
                       f"{e['deprecated'] or ''} | {changelog} | {fate}: {_cell(what)} |")
        out.append("")
        for i, note in enumerate(notes, 1):
            out.append(f"{i}. {note}.")
        out.append("")
    seen = covered(data)
    rest = [r for r in _restored.RESTORED if r.name not in seen]
    out += ["## Not seen by name in the packages", "",
            "A changed signature or return, a name outside these modules, a private name, or "
            "a spelling on jax.lib.xla_client while that was jaxlib's module:", "",
            "| Name | Removed (or changed) in | ccshim |", "|---|---|---|"]
    for r in rest:
        out.append(f"| `{r.name}` | {r.removed} | restored: {_cell(r.now)} "
                   f"(`{TESTS[r.name]}`) |")
    for r in _restored.NOT_RESTORED:
        if r.name not in seen:
            out.append(f"| `{r.name}` | {r.removed} | not restored: {_cell(r.why)} |")
    out.append("")
    return "\n".join(out)


def main() -> int:
    PAGE.write_text(render(json.loads(DATA.read_text())))
    print(f"render: {PAGE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
