"""ccshim.scan, the Python side of `ccshim scan`: what it reads out of .py
files with libcst where a reader of characters could not (comments inside
a call, a loop body of any length, a name assigned over several lines), and
that a file it cannot read is said and costs no other file its findings.
Its records, field for field, are tests/python/test_contracts.py's; the
command on the scan fixture and on real trees, tests/scan/."""
import pytest

pytest.importorskip("libcst")

from ccshim import scan  # noqa: E402
from ccshim.scan._reader import FIELDS  # noqa: E402


def read(tmp_path, ext=".py", **files):
    """The records of the files (name=text, each name + ext), as dicts by tag."""
    for name, text in files.items():
        (tmp_path / f"{name}{ext}").write_text(text)
    out = scan.records([(str(tmp_path / f"{n}{ext}"), f"{n}{ext}") for n in files])
    found = [dict(zip(["tag", "file"] + FIELDS, r)) for r in out if r[0] in "RW"]
    said = {r[1]: r[2] for r in out if r[0] in "PE"}
    return found, said


def test_an_expression_over_lines_is_one_line_without_its_comments(tmp_path):
    found, _ = read(tmp_path, ops='''
from jax.lib import xla_client
xla_client.register_custom_call_target(
    "k",  # the kernel's name
    ext.capsule(   # made here
        "k",
    ),
    platform="cpu",
)
''')
    assert [(f["name"], f["expr"], f["line"]) for f in found] == [
        ("k", 'ext.capsule( "k", )', 3)]


def test_a_mapping_loop_is_found_however_long_its_body(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(10))
    found, _ = read(tmp_path, reg=f'''
for _name, _value in _ext.registrations().items():
{body}    xla_client.register_custom_call_target(_name, _value, platform="gpu")
''')
    assert [(f["module"], f["mapping"], f["platform"]) for f in found] == [
        ("_ext", "registrations()", "gpu")]


def test_a_name_assigned_over_lines_gives_its_whole_pattern(tmp_path):
    found, _ = read(tmp_path, inst='''
class Op:
    def __init__(self, capsule):
        self.target = (
            "instance_" +
            str(id(self)) + "_filter")
        register_ffi_target(self.target, capsule, api_version=0)
''')
    assert [(f["name_expr"], f["pattern"]) for f in found] == [
        ("self.target", "instance_<id>_filter")]


def test_a_custom_call_op_s_attributes_are_read_as_port_reads_them(tmp_path):
    """Enzyme-JAX's form: the target, the opaque and the API version of a
    stablehlo.CustomCallOp as the MLIR attributes they are built into
    (ccshim._pyread, which `ccshim port` reads them with too)."""
    found, _ = read(tmp_path, rule='''
def rule(ctx, *args):
    return stablehlo.CustomCallOp(
        out_types, args,
        call_target_name=ir.StringAttr.get("jaxzyme.primal"),
        backend_config=ir.StringAttr.get("backend"),
        api_version=mlir.i32_attr(3),
    ).results
''')
    assert [(f["name"], f["opaque"], f["version"]) for f in found] == [
        ("jaxzyme.primal", '"backend"', 3)]


def test_a_registering_function_s_calls_in_every_file(tmp_path):
    found, _ = read(tmp_path, lib='''
def register(target, capsule, backend):
    xla_client.register_custom_call_target(target, capsule, backend)

register("here", ext.here(), "cpu")
register(prefix + "_there", ext.there(), "cuda")
''', user='''
import lib
lib.register(f"made_{n}", ext.made(), "gpu")
''')
    said = [(f["tag"], f["file"], f["name"] or f["name_expr"], f["name_shape"], f["platform"],
             f["expr"]) for f in found]
    assert said == [
        ("R", 0, "here", "", "cpu", "ext.here()"),
        ("W", 0, 'prefix + "_there"', "<...>_there", "cuda", "ext.there()"),
        ("W", 1, 'f"made_{n}"', "made_<...>", "gpu", "ext.made()"),
    ]
    # The registration inside register() stands for these: not a target of its own.
    assert all(f["via"] for f in found)


def test_a_star_argument_before_the_name_is_not_guessed_past(tmp_path):
    found, _ = read(tmp_path, star='''
mlir.custom_call(*args, backend_config=opaque)
''')
    assert [(f["name"], f["name_expr"], f["opaque"]) for f in found] == [("", "", "opaque")]


def test_a_file_that_does_not_parse_is_said_and_costs_no_other(tmp_path):
    found, said = read(tmp_path, good='mlir.custom_call("k", result_types=[])\n',
                       bad='mlir.custom_call("k",\n', deep="custom_call(" * 5000 + "\n",
                       py2='print "no call here"\n')
    assert [(f["file"], f["name"]) for f in found] == [(0, "k")]
    assert said[0] == 2 and said[3] == 2          # read; the last never parsed (no call)
    assert said[1].startswith("not parsed as Python by libcst (line ")
    assert said[2].startswith("nested too deeply for a Python parser (")


def test_a_name_a_nul_byte_or_an_unreadable_file(tmp_path):
    (tmp_path / "nul.py").write_bytes(b"custom_call(\0)\n")
    out = scan.records([(str(tmp_path / "nul.py"), "nul.py"),
                        (str(tmp_path / "missing.py"), "missing.py")])
    assert out == [("E", 0, "a binary file (NUL byte at offset 12), not Python/Cython source; "
                    "not scanned"),
                   ("E", 1, "cannot read: No such file or directory")]


def test_the_fuzzer_s_corpus_reads_as_its_harness_requires():
    """tests/fuzz/fuzz_scan_reader.py's inputs (seeds and any regression),
    replayed: one P or E each, every finding whole."""
    import pathlib
    corpus = pathlib.Path(__file__).resolve().parents[1] / "fuzz" / "corpus" / "fuzz_scan_reader"
    inputs = sorted(corpus.iterdir())
    assert inputs
    for path in inputs:
        out = scan.read_all([(str(path), path.name)])
        assert [r[0] for r in out if r[0] in "PE"] in (["P"], ["E"]), (path, out)
        assert all(len(r) == 2 + len(FIELDS) for r in out if r[0] in "RW"), (path, out)


def test_a_call_site_s_computed_name_is_read_as_port_reads_it(tmp_path):
    """One reader of names for both commands (ccshim/_names.py): sphericart-jax's
    op_name, a prefix extended with += in if/elif/else branches, is a call
    site per name it takes there (a branch that raises gives none), each
    marked by via; a name neither can follow stays one computed site."""
    found, _ = read(tmp_path, sph='''
from jax.interpreters.mlir import custom_call

def rule(ctx, x, *, normalized, dtype):
    op_name = "cpu_"
    if normalized:
        op_name += "spherical_"
    else:
        op_name += "solid_"
    if dtype == F32:
        op_name += "f32"
    else:
        raise NotImplementedError(dtype)
    return custom_call(op_name, result_types=[x.type], operands=[x]).results

def other(ctx, x, *, name):
    return custom_call(name, result_types=[x.type], operands=[x]).results
''')
    sites = [(f["name"], f["name_expr"], f["via"] != "", f["line"]) for f in found]
    assert sites == [("cpu_solid_f32", "", True, 14), ("cpu_spherical_f32", "", True, 14),
                     ("", "name", False, 17)], sites


def test_a_loop_over_literal_names_is_a_registration_per_name(tmp_path):
    """veros's loop: each name the loop takes, the kernel that name's entry
    of the module's dict; a loop whose body binds its name again, or over
    anything but literals, stays one computed name (not guessed)."""
    found, _ = read(tmp_path, tdma='''
for kernel_name in ("tdma_cuda_double", "tdma_cuda_float"):
    fn = tdma_cuda_.gpu_custom_call_targets[kernel_name]
    jax.ffi.register_ffi_target(kernel_name, fn, platform="CUDA", api_version=0)

for kernel_name in ("a", "b"):
    register_custom_call_target(kernel_name, capsules[kernel_name])

for name in ("c",):
    name = name + "_v2"
    register_custom_call_target(name, fn)

for name in names:
    register_custom_call_target(name, fn)
''')
    assert [(f["name"], f["expr"], f["module"], f["mapping"], f["platform"], f["name_expr"])
            for f in found] == [
        ("tdma_cuda_double", 'tdma_cuda_.gpu_custom_call_targets["tdma_cuda_double"]',
         "tdma_cuda_", "gpu_custom_call_targets", "cuda", ""),
        ("tdma_cuda_float", 'tdma_cuda_.gpu_custom_call_targets["tdma_cuda_float"]',
         "tdma_cuda_", "gpu_custom_call_targets", "cuda", ""),
        ("a", 'capsules["a"]', "", "", "cpu", ""),
        ("b", 'capsules["b"]', "", "", "cpu", ""),
        ("", "fn", "", "", "cpu", "name"),
        ("", "fn", "", "", "cpu", "name")]
    assert found[0]["via"] == ('the loop `for kernel_name in ("tdma_cuda_double", '
                               '"tdma_cuda_float")` at tdma.py:2')


def test_a_helper_named_as_the_registration_it_wraps_is_its_calls(tmp_path):
    """jax-chacha-prng's helper, in both its branches: each call of it is a
    registration, found as one; its body is not a target named `name`."""
    found, _ = read(tmp_path, ops='''
if hasattr(xla_client, "register_cpu_custom_call_target"):
    def register_custom_call_target(name, fn, platform):
        name = name.encode("utf-8")
        xla_client.register_cpu_custom_call_target(name, fn, "cpu")
else:
    def register_custom_call_target(name, fn, platform):
        xla_client.register_custom_call_target(name, fn, platform.value)

register_custom_call_target("cpu_block", native.cpu_factory(), platform=Platform.CPU)
''')
    assert [(f["name"], f["name_expr"], f["expr"], f["line"]) for f in found] == [
        ("cpu_block", "", "native.cpu_factory()", 10)]


def test_a_mapping_loop_through_an_if_and_a_name_built_from_a_parameter(tmp_path):
    """jaxbind's shapes: the loop's registration inside a test of JAX's
    version is still the loop's; a call site's name built from a parameter
    (`_platform + "_pycall"`) under `if _platform == "cpu":` is the name it
    takes there."""
    found, _ = read(tmp_path, jb='''
for _name, _value in _jaxbind.registrations().items():
    if new_jax:
        jax.ffi.register_ffi_target(_name, _value, platform="cpu", api_version=0)
    else:
        xla_client.register_custom_call_target(_name, _value, platform="cpu")


def _lowering(ctx, *args, _platform="cpu"):
    if _platform == "cpu":
        return custom_call(_platform + "_pycall", result_types=[], operands=args)
    raise ValueError(_platform)


for platform in ("cpu", "gpu"):
    mlir.register_lowering(_prim, partial(_lowering, _platform=platform), platform=platform)
''')
    assert [(f["tag"], f["name"], f["module"], f["mapping"]) for f in found] == [
        ("R", "", "_jaxbind", "registrations()"), ("R", "", "_jaxbind", "registrations()"),
        ("R", "cpu_pycall", "", "")]


def test_cython_is_read_with_cython_s_parser(tmp_path):
    """A .pyx's cdef functions (with their parameters as written, over lines
    and with a comment), its helper's exports and registrations by literal
    name; what only reads like code (a comment, a docstring, a string) is
    not; a helper named as the registration it wraps is its calls."""
    pytest.importorskip("Cython")
    found, said = read(tmp_path, ".pyx", k='''"""cdef void fake(void* out, const void** ins): a docstring."""
from cpython.pycapsule cimport PyCapsule_New
# put("commented", <void*>(k)) is a comment
NOTE = 'put("quoted", <void*>(k))'
targets = {}

cdef put(name, void* fn):
    targets[name] = PyCapsule_New(fn, "xla._CUSTOM_CALL_TARGET", NULL)

cdef register_cpu_custom_call_target(fn_name, void* fn):
    xla_client.register_cpu_custom_call_target(fn_name, PyCapsule_New(fn, b"x", NULL))

cdef inline void k(void* out,     # the result
                   const void** ins) nogil:
    pass

put("k", <void*>(k))
put("k_addr", <void*>&k)
register_cpu_custom_call_target(b"k_old", <void*>(k))
custom_call(b"k", result_types=[t], operands=[x], api_version=1)
''', broken='cdef void (:\n')
    assert [(f["kind"], f["line"], f["what"], f["name"], f["function"], f["expr"], f["module"],
             f["mapping"], f["platform"]) for f in found] == [
        ("definition", 13, "definition", "k", "k", "void* out, const void** ins", "", "",
         "unknown"),
        ("offered", 17, "put", "k", "k", "<void*>(k)", "k", "targets", "unknown"),
        ("offered", 18, "put", "k_addr", "k", "<void*>&k", "k", "targets", "unknown"),
        ("registration", 19, "register_cpu_custom_call_target", "k_old", "k", "<void*>(k)",
         "", "", "cpu"),
        ("call_site", 20, "custom_call", "k", "", "", "", "", "unknown")]
    assert found[-1]["version"] == 1 and found[-1]["version_default"] == 0
    assert said[0] == 21 and said[1].startswith("not read: Cython's parser does not take it")
