"""How `ccshim port` follows a target's name (python/ccshim/_names.py):
each name expression read as the templates of literals and symbolic parts
it can take, in the forms the census's projects use (celerite2's parameter
bound by its callers, tfc's closure over a local, PyBaMM's f-string over a
registrations() key and a per-object suffix, jaxbind's platform pruned by the
rule's `if`), and what it refuses to guess."""

import pytest

cst = pytest.importorskip("libcst", reason="ccshim port needs libcst (dev/setup.sh test "
                                           "installs it)")
from libcst.metadata import MetadataWrapper  # noqa: E402

from ccshim._names import Keys, Names, Part, expand, literal  # noqa: E402
from ccshim.port._python import _test  # noqa: E402


def _names(source: str):
    wrapper = MetadataWrapper(cst.parse_module(source))
    return Names(wrapper, _test), wrapper.module


def _call_arg(module, func: str, index: int = 0):
    """The index-th argument of the first call of func."""
    found = []

    class Visit(cst.CSTVisitor):
        def visit_Call(self, node):
            if isinstance(node.func, cst.Name) and node.func.value == func:
                found.append(node.args[index].value)

    module.visit(Visit())
    return found[0]


def test_a_parameter_is_followed_through_every_call_of_its_function():
    names, module = _names(
        "from functools import partial\n"
        "def rule(name, ctx, x):\n"
        "    return lower(name, x)\n"
        "def rev_rule(name, ctx, x):\n"
        "    return rule(name, ctx, x)\n"
        "def build(name):\n"
        "    register(name, cap())\n"
        "    register_lowering(p, partial(rule, name))\n"
        "    register_lowering(q, partial(rev_rule, name + '_rev'))\n"
        "build('celerite2_factor')\n"
        "build('celerite2_solve')\n")
    got = sorted(literal(t) for t in names.templates(_call_arg(module, "lower")))
    assert got == ["celerite2_factor", "celerite2_factor_rev", "celerite2_solve",
                   "celerite2_solve_rev"]
    assert sorted(literal(t) for t in names.templates(_call_arg(module, "register"))) == \
        ["celerite2_factor", "celerite2_solve"]


def test_a_parameter_used_otherwise_than_called_stays_symbolic():
    names, module = _names(
        "def build(name):\n"
        "    lower(name)\n"
        "build('a')\n"
        "table = {'f': build}\n")
    (t,) = names.templates(_call_arg(module, "lower"))
    assert len(t) == 1 and isinstance(t[0], Part) and t[0].key[0] == "param"


def test_a_closure_over_a_local_is_the_same_name_as_its_registration():
    names, module = _names(
        "def setup(self):\n"
        "    xlaName = 'BasisFunc' + str(self.basisClass.identifier)\n"
        "    register(xlaName, obj)\n"
        "    def H_xla(ctx, x):\n"
        "        return lower(xlaName, x)\n")
    registered = names.templates(_call_arg(module, "register"))
    lowered = names.templates(_call_arg(module, "lower"))
    assert registered == lowered and len(lowered) == 1
    assert lowered[0][0] == "BasisFunc" and isinstance(lowered[0][1], Part)


def test_the_same_code_over_other_bindings_is_another_part():
    names, module = _names(
        "def a(self):\n"
        "    register(f'k_{self.uid()}', c)\n"
        "def b(self):\n"
        "    lower(f'k_{self.uid()}')\n")
    assert names.templates(_call_arg(module, "register")) != \
        names.templates(_call_arg(module, "lower"))


def test_an_f_string_over_a_registrations_key_expands_per_key():
    names, module = _names(
        "def jaxify(self):\n"
        "    for _name, _value in idaklu.registrations().items():\n"
        "        register(f'{_name}_{self.unique()}', _value)\n"
        "    def lowering(ctx, t):\n"
        "        if f64:\n"
        "            op_name = f'cpu_idaklu_f64_{self.unique()}'\n"
        "        else:\n"
        "            op_name = f'cpu_idaklu_f32_{self.unique()}'\n"
        "        return lower(op_name, t)\n")
    (registered,) = names.templates(_call_arg(module, "register"))
    assert registered[0] == Keys("idaklu")
    keys = {"idaklu": ["cpu_idaklu_f64", "cpu_idaklu_f32", "cpu_idaklu_jvp_f64"]}
    expanded = dict(expand(registered, keys))
    lowered = names.templates(_call_arg(module, "lower"))
    assert sorted(expanded[t] for t in lowered) == ["cpu_idaklu_f32", "cpu_idaklu_f64"]


def test_a_conditional_gives_both_and_an_encoded_name_is_its_string():
    """jax-finufft 0.1.0: `f"nufft{ndim}d1{suffix}".encode("ascii")`, its
    suffix `"f" if single else ""`, its ndim `len(points)` (a symbolic
    part); fdtdz: `"kernel_f16" if flag else "kernel_f32"`."""
    names, module = _names(
        "def rule(ctx, source, *points):\n"
        "    ndim = len(points)\n"
        "    suffix = 'f' if single(source) else ''\n"
        "    op_name = f'nufft{ndim}d1{suffix}'.encode('ascii')\n"
        "    lower(op_name, source)\n"
        "    lower('kernel_f16' if source.half else 'kernel_f32', source)\n"
        "    lower(op_name.encode('utf-16'), source)\n")
    made = names.templates(_call_arg(module, "lower"))
    assert len(made) == 2 and all(t[0] == "nufft" and isinstance(t[1], Part) and
                                  t[1].key[1] == "len(points)" for t in made), made
    assert sorted(t[2] for t in made) == ["d1", "d1f"]
    conditional = names.templates(_find_calls(module, "lower")[1].args[0].value)
    assert sorted(literal(t) for t in conditional) == ["kernel_f16", "kernel_f32"]
    # another encoding is not the same characters: a symbolic part of its own
    (other,) = names.templates(_find_calls(module, "lower")[2].args[0].value)
    assert len(other) == 1 and isinstance(other[0], Part), other


def test_a_name_made_from_itself_is_none_not_a_loop():
    """jax-chacha-prng 1.4.3: `name = name.encode("utf-8")` in a function
    whose parameter is name reads name's own assignment; it is not followed."""
    names, module = _names(
        "def register_target(name, fn):\n"
        "    name = name.encode('utf-8')\n"
        "    register(name, fn)\n"
        "register_target('a', f)\n")
    assert names.templates(_call_arg(module, "register")) is None


def _find_calls(module, func: str) -> list:
    found = []

    class Visit(cst.CSTVisitor):
        def visit_Call(self, node):
            if isinstance(node.func, cst.Name) and node.func.value == func:
                found.append(node)

    module.visit(Visit())
    return found


def test_a_platform_parameter_is_pruned_by_the_if_around_the_call():
    names, module = _names(
        "from functools import partial\n"
        "def _lowering(ctx, *args, _platform):\n"
        "    if _platform == 'cpu':\n"
        "        return lower(_platform + '_pycall', args)\n"
        "    elif _platform == 'gpu':\n"
        "        raise ValueError('no gpu')\n"
        "for platform in ['cpu', 'gpu']:\n"
        "    register_lowering(prim, partial(_lowering, _platform=platform), platform=platform)\n")
    call = _call_arg(module, "lower")
    assert [literal(t) for t in names.reaching(call)] == ["cpu_pycall"]
    assert sorted(literal(t) for t in names.templates(call)) == ["cpu_pycall", "gpu_pycall"]


def test_a_parameter_read_through_a_local_is_pruned_by_the_if_around_the_call():
    """kepler_jax: the rule makes its name in a local from its keyword-only
    platform, bound by partial in a loop over platforms."""
    names, module = _names(
        "from functools import partial\n"
        "def _lowering(ctx, x, *, platform='cpu'):\n"
        "    if x.dtype == 'f32':\n"
        "        op_name = platform + '_kepler_f32'\n"
        "    else:\n"
        "        op_name = platform + '_kepler_f64'\n"
        "    if platform == 'cpu':\n"
        "        return lower(op_name, x)\n"
        "    elif platform == 'gpu':\n"
        "        return lower_gpu(op_name, x)\n"
        "for platform in ['cpu', 'gpu']:\n"
        "    register_lowering(prim, partial(_lowering, platform=platform), platform=platform)\n")
    assert sorted(literal(t) for t in names.reaching(_call_arg(module, "lower"))) == \
        ["cpu_kepler_f32", "cpu_kepler_f64"]
    assert sorted(literal(t) for t in names.reaching(_call_arg(module, "lower_gpu"))) == \
        ["gpu_kepler_f32", "gpu_kepler_f64"]


def test_what_it_cannot_follow_is_none_not_a_guess():
    names, module = _names(
        "import os\n"
        "def rule(ctx, x):\n"
        "    return lower(os.environ['TARGET'] if x else NAME, x)\n")
    assert names.templates(_call_arg(module, "lower")) is None
    names, module = _names("def rule(ctx, x):\n    return lower(GLOBAL_FROM_ELSEWHERE, x)\n")
    assert names.templates(_call_arg(module, "lower")) is None


def test_a_name_extended_with_plus_equals_is_followed_statement_by_statement():
    """sphericart-jax's lowerings: a prefix, then `+=` in each branch of an
    if/elif/else; a branch that raises gives no name.  Before, the port read
    such a name as its first assignment alone ("cpu_") and guessed."""
    names, module = _names(
        "def rule(ctx, x, *, normalized, dtype):\n"
        "    op_name = 'cpu_'\n"
        "    if normalized:\n"
        "        op_name += 'spherical_'\n"
        "    else:\n"
        "        op_name += 'solid_'\n"
        "    if dtype == F32:\n"
        "        op_name += 'f32'\n"
        "    elif dtype == F64:\n"
        "        op_name += 'f64'\n"
        "    else:\n"
        "        raise NotImplementedError(dtype)\n"
        "    return lower(op_name, x)\n")
    got = sorted(literal(t) for t in names.reaching(_call_arg(module, "lower")))
    assert got == ["cpu_solid_f32", "cpu_solid_f64", "cpu_spherical_f32", "cpu_spherical_f64"]
    # an if without an else keeps the value it had; module level too
    names, module = _names("NAME = 'k'\nif big:\n    NAME += '_big'\nlower(NAME)\n")
    assert sorted(literal(t) for t in names.templates(_call_arg(module, "lower"))) == \
        ["k", "k_big"]


@pytest.mark.parametrize("source", [
    # extended in a loop
    "def rule(x):\n    n = 'a'\n    for s in parts:\n        n += s\n    return lower(n, x)\n",
    # another operator
    "def rule(x):\n    n = 'a'\n    n *= 2\n    return lower(n, x)\n",
    # read inside the branch that extends it (not at one of the function's statements)
    "def rule(x):\n    n = 'a'\n    if x:\n        n += 'b'\n        return lower(n, x)\n",
    # read by a function nested in the one that extends it
    "def make():\n    n = 'a'\n    n += 'b'\n    def rule(x):\n        return lower(n, x)\n",
    # extended before any assignment here (a global's value)
    "def rule(x):\n    global n\n    n += 'b'\n    return lower(n, x)\n",
])
def test_a_name_extended_where_it_cannot_follow_is_none(source):
    names, module = _names(source)
    assert names.templates(_call_arg(module, "lower")) is None


def test_an_argument_past_a_star_is_none_for_port_as_for_scan():
    """One rule for both readers (ccshim._pyread.arg): by keyword, else by
    position before any *args; past one, where an argument is is not known."""
    from ccshim.port._facts import _arg
    from ccshim.scan._reader import argument

    call = cst.parse_expression('custom_call(*head, "k", x, platform="cpu", **rest)')
    assert _arg(call, 0, "call_target_name") is None
    assert argument(call, 0, "call_target_name") is None
    assert _arg(call, 1, "platform").value.value == argument(call, 1, "platform").value == \
        '"cpu"'
    call = cst.parse_expression('custom_call("k", *tail, **rest)')
    assert _arg(call, 0, "name").value.value == argument(call, 0, "name").value == '"k"'
    assert _arg(call, 1, "fn") is None and argument(call, 1, "fn") is None


def test_layouts_are_ported_only_where_the_code_shows_them_row_major():
    """jax.ffi.ffi_lowering(skip_ffi_layout_processing=True) drops the
    layouts for XLA's row-major default, so the port reads that they are
    row-major (python/ccshim/port/_layouts.py) in the census's forms, and
    refuses what it cannot show: a column-major layout, a value it cannot
    read."""
    from ccshim.port._layouts import RowMajor
    wrapper = MetadataWrapper(cst.parse_module(
        "def _default_layouts(shapes):\n"
        "    return [range(len(shape) - 1, -1, -1) for shape in shapes]\n"
        "def rule(ctx, avals, other):\n"
        "    ops = [()] * 3 + _default_layouts(a.shape for a in avals)\n"
        "    lyt = tuple(range(ctx.ndim - 1, -1, -1))\n"
        "    acc = [()]\n"
        "    acc += [()] * (2 + ctx.ndim) + [lyt]\n"
        "    acc += [(), (), [0]]\n"
        "    mixed = [()]\n"
        "    mixed += [(0, 1)]\n"
        "    lower(ops, acc, [(), lyt, *([lyt] * 2)], mixed, [(0, 1)], other, [[1, 0, 2]])\n"))
    names = Names(wrapper, _test)
    rows = RowMajor(wrapper.module, names)
    found = []

    class Visit(cst.CSTVisitor):
        def visit_Call(self, node):
            if isinstance(node.func, cst.Name) and node.func.value == "lower":
                found.extend(a.value for a in node.args)

    wrapper.module.visit(Visit())
    assert [rows.many(a) for a in found] == \
        [True, True, True, False, False, False, False]



def test_a_layouts_helper_of_another_module_is_read_for_the_calls_arguments():
    """mpi4jax: get_default_layouts(operands, order="c") in another module
    builds its list by append from a lambda its `order` chooses; read there,
    for the call's order (given, or the default): "c" is row-major, "f" not."""
    from ccshim.port._layouts import RowMajor
    from ccshim.port._python import _importer
    from ccshim.port._facts import _Facts
    import pathlib
    import tempfile
    helper = (
        "def get_default_layouts(operands, order='c'):\n"
        "    layouts = []\n"
        "    if order == 'c':\n"
        "        default_layout = lambda t: tuple(range(len(t.shape) - 1, -1, -1))\n"
        "    elif order == 'f':\n"
        "        default_layout = lambda t: tuple(range(len(t.shape)))\n"
        "    else:\n"
        "        raise ValueError(order)\n"
        "    for op in operands:\n"
        "        if op is None:\n"
        "            layouts.append(())\n"
        "        else:\n"
        "            layouts.append(default_layout(op))\n"
        "    return layouts\n"
        "def spoiled(operands):\n"
        "    layouts = []\n"
        "    layouts.append(())\n"
        "    layouts.insert(0, (0, 1))\n"
        "    return layouts\n")
    with tempfile.TemporaryDirectory() as tmp:
        utils = pathlib.Path(tmp) / "utils.py"
        utils.write_text(helper)
        wrapper = MetadataWrapper(cst.parse_module(
            "from pkg.utils import get_default_layouts, spoiled\n"
            "def rule(ctx, ops):\n"
            "    lower(get_default_layouts(ops), get_default_layouts(ops, order='c'),\n"
            "          get_default_layouts(ops, 'f'), spoiled(ops), unknown(ops))\n"))
        facts = _Facts()
        wrapper.visit(facts)
        rows = RowMajor(wrapper.module, Names(wrapper, _test),
                        _importer(facts, {"pkg.utils": utils}, {}))
        got = [rows.many(a) for a in _call_args(wrapper.module, "lower")]
    assert got == [True, True, False, False, False]


def test_a_helper_imported_relatively_is_read_from_its_package():
    """`from ..utils import f` in pkg/ops/rules.py names pkg.utils.f, and
    `from . import m` pkg.ops.m: relative imports resolved against the
    module's package (a package's __init__.py is its own), and one that
    climbs above the top names nothing."""
    from ccshim.port._layouts import RowMajor
    from ccshim.port._python import _importer, package_of
    from ccshim.port._facts import _Facts
    import pathlib
    import tempfile
    assert package_of("pkg.ops.rules", pathlib.Path("pkg/ops/rules.py")) == "pkg.ops"
    assert package_of("pkg.ops", pathlib.Path("pkg/ops/__init__.py")) == "pkg.ops"
    with tempfile.TemporaryDirectory() as tmp:
        utils = pathlib.Path(tmp) / "utils.py"
        utils.write_text("def layouts(operands):\n"
                         "    return [tuple(range(len(o.shape) - 1, -1, -1)) for o in operands]\n")
        wrapper = MetadataWrapper(cst.parse_module(
            "from ..utils import layouts\n"
            "from . import cpu_ops\n"
            "from .... import nowhere\n"
            "def rule(ctx, ops):\n"
            "    lower(layouts(ops))\n"))
        facts = _Facts("pkg.ops")
        wrapper.visit(facts)
        assert facts.aliases["layouts"] == "pkg.utils.layouts"
        assert facts.aliases["cpu_ops"] == "pkg.ops.cpu_ops"
        assert "nowhere" not in facts.aliases
        rows = RowMajor(wrapper.module, Names(wrapper, _test),
                        _importer(facts, {"pkg.utils": utils}, {}))
        assert [rows.many(a) for a in _call_args(wrapper.module, "lower")] == [True]
        # Without its package, the module's relative import names no module
        # of the tree: the helper is not read.
        unplaced = _Facts()
        wrapper.visit(unplaced)
        rows = RowMajor(wrapper.module, Names(wrapper, _test),
                        _importer(unplaced, {"pkg.utils": utils}, {}))
        assert [rows.many(a) for a in _call_args(wrapper.module, "lower")] == [False]


def _call_args(module, func: str):
    found = []

    class Visit(cst.CSTVisitor):
        def visit_Call(self, node):
            if isinstance(node.func, cst.Name) and node.func.value == func:
                found.extend(a.value for a in node.args)

    module.visit(Visit())
    return found
