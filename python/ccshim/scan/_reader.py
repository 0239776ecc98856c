"""The Python side of `ccshim scan`: a project's .py files read with libcst
(the reader `ccshim port` edits them with), each legacy registration,
call site and typed registration or call a finding.

The shapes it follows, beyond one call with a literal name:

- a loop that registers a module's mapping (`for name, fn in
  ext.registrations().items():`), the platform given in the loop;
- a loop over literal names (`for kernel_name in ("a", "b"):`): a
  registration per name, the kernel that name's entry where the loop takes
  it from a module's mapping (veros);
- a name built at run time: per object from id() (its pattern,
  "instance_filter_<id>"), or from strings and values (its shape,
  "BasisFunc<...>"), through the local or attribute it was assigned to;
- a kernel taken from a module by a computed attribute (`getattr(xla_ops,
  spec["name"])()`), joined with the module's offers by the command;
- a registration inside a function whose name is one of its parameters
  (`def _build_op(name, spec): register(name, ...)`): a registration per
  call of that function passing a literal, in its own file; and, where
  calls pass it computed names or live in other files, a registration at
  each call anywhere in the tree (brainevent's `register_custom_call`),
  after every file is read.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from .._names import Names, bound_names, if_value, literal, loop_literals
from .._pyread import arg, arg_keyword, arg_positional, attr_value, dotted
from . import _text

_REGISTER = ("register_custom_call_target", "register_cpu_custom_call_target",
             "register_ffi_target")
_CUSTOM_CALL = ("custom_call", "CustomCall", "CustomCallWithLayout", "CustomCallWithAliasing",
                "CustomCallOp")
_PLATFORMS = {"host": "cpu", "cpu": "cpu", "cuda": "cuda", "rocm": "rocm", "gpu": "gpu",
              "sycl": "sycl", "xpu": "sycl"}


@dataclass
class Finding:
    """One finding; its fields are a record's, in this order
    (docs/contracts.md, section 4)."""
    kind: str            # registration, call_site or typed
    line: int
    what: str            # the function that was matched
    name: str = ""       # the target name; "" when computed at run time
    name_expr: str = ""  # the expression that computes it, then
    function: str = ""   # the kernel function the registration names
    module: str = ""     # a mapping loop's or getattr's module
    mapping: str = ""    # its mapping ("registrations()"), or "getattr"
    via: str = ""        # a name resolved through a call: where it comes from
    passed: str = ""     # the literal that call passes
    expr: str = ""       # the registered kernel expression
    pattern: str = ""    # a name per object from id()
    name_shape: str = ""  # any other name built at run time
    opaque: str = ""     # call site: the backend_config expression
    shapes: str = ""     # ffi_call: the result shapes expression
    platform: str = "unknown"
    version: int = 0
    version_default: int = 0


FIELDS = [f.name for f in dataclasses.fields(Finding)]

# The keywords a legacy call site's opaque bytes come by, in this order.
OPAQUE_KEYWORDS = ("backend_config", "opaque")


def registration_api(word: str) -> int:
    """The api_version a registration has when none is written:
    xla_client's 0 (legacy), jax.ffi.register_ffi_target's 1 (the typed
    FFI)."""
    return 1 if word == "register_ffi_target" else 0


def site_defaults(word: str) -> tuple[int, int]:
    """(where its target name is, its API version when none is written) of
    a legacy call site: mlir.custom_call and jaxlib's hlo_helpers name it
    first and default to 2; stablehlo's CustomCallOp third and xla_client's
    CustomCall ops second, both defaulting to 1."""
    if word == "custom_call":
        return 0, 2
    return (2 if word == "CustomCallOp" else 1), 1


def platform(node: cst.BaseExpression | None, default: str = "unknown") -> str:
    said = _text.literal(node) if node is not None else None
    return default if node is None else _PLATFORMS.get((said or "").lower(), "unknown")


def positional(call: cst.Call, index: int) -> cst.BaseExpression | None:
    found = arg_positional(call, index)
    return None if found is None else found.value


def keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    found = arg_keyword(call, name)
    return None if found is None else found.value


def argument(call: cst.Call, index: int, name: str) -> cst.BaseExpression | None:
    """By keyword, else by position (_pyread.arg)."""
    found = arg(call, index, name)
    return None if found is None else found.value


def callee(call: cst.Call) -> cst.Name | None:
    """The name a call's function ends in (`mlir.custom_call` gives custom_call)."""
    if isinstance(call.func, cst.Name):
        return call.func
    if isinstance(call.func, cst.Attribute):
        return call.func.attr
    return None


def _params(fn: cst.FunctionDef) -> list[str]:
    """Its parameters in the order written, `*`, `/` and `*args` among them."""
    p = fn.params
    names = [x.name.value for x in p.posonly_params]
    if p.posonly_params:
        names.append("/")
    names += [x.name.value for x in p.params]
    if isinstance(p.star_arg, cst.Param):
        names.append("*" + p.star_arg.name.value)
    elif isinstance(p.star_arg, cst.ParamStar):
        names.append("*")
    names += [x.name.value for x in p.kwonly_params]
    if p.star_kwarg is not None:
        names.append("**" + p.star_kwarg.name.value)
    return names


def _param_name(node: cst.BaseExpression, param: str) -> str | None:
    """The suffix when node is the parameter alone ("") or `param + "suffix"`."""
    if isinstance(node, cst.Name) and node.value == param:
        return ""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add) and \
            isinstance(node.left, cst.Name) and node.left.value == param:
        return _text.literal(node.right)
    return None


def _index(names: list[str], expr: str) -> int:
    return names.index(expr) if expr in names else -1


def _from_call(f: Finding, call: cst.Call, params: list[str], kernel: int, where: int) -> None:
    """A registration at a call of the function around it: the kernel and
    the platform the call passes, where they come in as parameters."""
    if kernel >= 0:
        given = argument(call, kernel, params[kernel])
        if given is not None:
            f.expr, f.function = _text.text(given), _text.function(given)
    if where >= 0:
        f.platform = platform(argument(call, where, params[where]))


@dataclass
class Wrapper:
    """A function of the project's own that registers the name passed in
    through one of its parameters; each call of it is a registration."""
    fn: str
    params: list[str]
    index: int
    suffix: str
    reg: Finding
    file: str
    kernel_index: int
    platform_index: int
    branches: list[tuple[str, int]] = field(default_factory=list)
    literals_in: str | None = None  # the file whose literal calls are made
    made: int = 0


class Source:
    """One file, read: its calls in source order, its assignments."""

    def __init__(self, shown: str, module: cst.Module):
        self.shown = shown
        self.wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self._names = None
        meta = self.wrapper.resolve_many([PositionProvider, ParentNodeProvider])
        self.pos, self.parent = meta[PositionProvider], meta[ParentNodeProvider]
        self.calls: list[tuple[int, int, cst.Call, cst.Name]] = []
        self.assigns: list[cst.Assign] = []
        for node in self.pos:
            if isinstance(node, cst.Call) and callee(node) is not None:
                start = self.pos[callee(node)].start
                self.calls.append((start.line, start.column, node, callee(node)))
            elif isinstance(node, cst.Assign):
                self.assigns.append(node)
        self.calls.sort(key=lambda c: (c[0], c[1]))

    def line(self, node: cst.CSTNode) -> int:
        return self.pos[node].start.line

    def ancestors(self, node: cst.CSTNode):
        while node in self.parent:
            node = self.parent[node]
            yield node

    def enclosing_def(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        for up in self.ancestors(node):
            if isinstance(up, cst.FunctionDef):
                return up
            if isinstance(up, cst.ClassDef):
                return None
        return None

    def mapping_loop(self, node: cst.CSTNode) -> tuple[str, str]:
        """(module, mapping) of the `for ... in M.MAPPING.items():` loop
        whose body the statement at node is in, directly or through `if`s
        (jaxbind's test of JAX's version in the loop); ("", "") else."""
        for up in self.ancestors(node):
            if isinstance(up, cst.BaseCompoundStatement) and not isinstance(up, cst.If):
                break
        else:
            return "", ""
        if not isinstance(up, cst.For):
            return "", ""
        it = up.iter
        if not (isinstance(it, cst.Call) and not it.args and isinstance(it.func, cst.Attribute)
                and it.func.attr.value == "items"):
            return "", ""
        held = _text.text(it.func.value)
        module, dot, mapping = held.partition(".")
        return (module, mapping) if dot and module.isidentifier() else ("", "")

    def assigned(self, expr: str, at: cst.CSTNode) -> cst.BaseExpression | None:
        """What `expr` (a local, or an attribute set anywhere in the file) was
        last assigned before `at`."""
        scope = self.enclosing_def(at) if "." not in expr else None
        where = self.pos[at].start
        value = None
        for a in self.assigns:
            start = self.pos[a].start
            if (start.line, start.column) >= (where.line, where.column):
                continue
            if scope is not None and not self._inside(a, scope):
                continue
            if any(_text.text(t.target) == expr for t in a.targets):
                value = a.value
        return value

    def _inside(self, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
        return any(up is scope for up in self.ancestors(node))

    def names_at(self, node: cst.BaseExpression) -> list[str] | None:
        """Every name a call site's target expression can take there, read
        as `ccshim port` reads it (ccshim/_names.py: locals, `+=`, parameters
        through the calls of their function, the `if` tests around the
        site); None where one of them is not a literal."""
        if self._names is None:
            self._names = Names(self.wrapper, if_value)
        templates = self._names.reaching(node)
        said = [literal(t) for t in templates] if templates else None
        return None if not said or None in said else sorted(set(said))

    def loop_names(self, node: cst.BaseExpression) -> tuple[cst.For, list[str]] | None:
        """The loop `for NAME in ("a", "b"):` around a registration whose
        name is that loop's variable, and the names it takes there; None for
        any other name, or one the loop's body binds again."""
        if not isinstance(node, cst.Name):
            return None
        for up in self.ancestors(node):
            if isinstance(up, cst.For) and isinstance(up.target, cst.Name) and \
                    up.target.value == node.value:
                names = loop_literals(up)
                rebound = any(t.value == node.value for t in bound_names(up.body))
                return (up, names) if names and not rebound else None
            if isinstance(up, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return None
        return None

    def loop_kernel(self, kernel: cst.BaseExpression, at: cst.CSTNode,
                    var: str) -> cst.BaseExpression | None:
        """The mapping the kernel is an entry of, indexed by the loop's
        variable (`fn = ext.targets[name]`, or the subscript itself); None
        for any other kernel."""
        if isinstance(kernel, cst.Name):
            kernel = self.assigned(kernel.value, at)
        if not (isinstance(kernel, cst.Subscript) and len(kernel.slice) == 1):
            return None
        index = kernel.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Name) and \
                index.value.value == var:
            return kernel.value
        return None

    def computed_name(self, node: cst.BaseExpression, at: cst.CSTNode) -> tuple[str, str]:
        """(pattern, shape) of a name computed at run time, from the
        expression itself or what the name it is was assigned."""
        if dotted(node) is not None:
            node = self.assigned(_text.text(node), at)
            if node is None:
                return "", ""
        return _text.name_shapes(node)


class Scan:
    """The findings of a tree's Python files, file by file, then those of
    the calls of its wrappers (which need every file read first).  Files
    are indexed by their place in the walk."""

    def __init__(self) -> None:
        self.sources: dict[int, Source] = {}
        self.found: dict[int, list[Finding]] = {}
        self.late: list[tuple[int, Finding]] = []   # (file index, finding)
        self.wrappers: list[Wrapper] = []
        self._at: int = -1                          # the file being read

    def read(self, index: int, shown: str, module: cst.Module) -> None:
        src = self.sources[index] = Source(shown, module)
        self.found[index] = []
        self._at = index
        for _, _, call, name in src.calls:
            word = name.value
            if word in _REGISTER:
                self._registration(src, call, name)
            elif word == "ffi_call":
                self._ffi_call(src, call, name)
            elif word in _CUSTOM_CALL:
                self._custom_call(src, call, name)

    def wrapped(self) -> frozenset[str]:
        """The names of the project's registering functions found."""
        return frozenset(w.fn for w in self.wrappers)

    def _add(self, finding: Finding) -> Finding:
        self.found[self._at].append(finding)
        return finding

    def _name(self, f: Finding, node: cst.BaseExpression | None) -> None:
        said = _text.literal(node) if node is not None else None
        if said is not None:
            f.name = said
        elif node is not None:
            f.name_expr = _text.text(node)

    def _registration(self, src: Source, call: cst.Call, name: cst.Name) -> None:
        word = name.value
        cpu_only = word == "register_cpu_custom_call_target"
        api = registration_api(word)
        given = keyword(call, "api_version")
        if given is not None:
            api = _text.version(given)
        if api < 0:
            return      # a wrapper passing its caller's choice on
        f = self._add(Finding("registration" if api == 0 else "typed", src.line(name), word))
        target = argument(call, 0, "name")
        self._name(f, target)
        kernel = positional(call, 1)
        kernel = kernel if kernel is not None else keyword(call, "fn")
        if kernel is not None:
            f.expr, f.function = _text.text(kernel), _text.function(kernel)
        where = keyword(call, "platform")
        where = where if where is not None or cpu_only else positional(call, 2)
        f.platform = "cpu" if cpu_only else platform(where, "cpu")
        looped = src.loop_names(target) if not f.name else None
        if looped is not None:
            self._looped(src, call, f, kernel, looped)
            return
        if not f.name and target is not None:
            f.pattern, f.name_shape = src.computed_name(target, call)
        if not f.name and not f.pattern:
            f.module, f.mapping = src.mapping_loop(call)
        if not f.module and kernel is not None:
            f.module = _text.getattr_module(kernel)
            f.mapping = "getattr" if f.module else ""
        loop = f.mapping and f.mapping != "getattr"
        if f.kind == "registration" and not f.name and f.name_expr and not loop and \
                not f.pattern:
            platform_expr = _text.text(where) if where is not None else ""
            if self._resolve(src, call, target, f, platform_expr) != 0:
                self.found[self._at] = [x for x in self.found[self._at] if x is not f]

    def _looped(self, src: Source, call: cst.Call, f: Finding,
                kernel: cst.BaseExpression | None, looped: tuple[cst.For, list[str]]) -> None:
        """A registration in a loop over literal names (veros's `for
        kernel_name in ("tdma_cuda_double", "tdma_cuda_float"):`): one per
        name, the kernel as that name's entry where the loop takes it from
        a module's mapping (`fn = tdma_cuda_.gpu_custom_call_targets[
        kernel_name]`), so that the command joins it to the capsules the
        module puts there, for this platform."""
        loop, names = looped
        var = loop.target.value
        f.name_expr = ""
        f.via = f"the loop `for {var} in {_text.text(loop.iter)}` at {src.shown}:{src.line(loop)}"
        mapping = src.loop_kernel(kernel, call, var) if kernel is not None else None
        held = dotted(mapping) if mapping is not None else None
        if held is not None and held.count(".") == 1:
            f.module, f.mapping = held.split(".")
        for i, said in enumerate(names):
            one = f if i == 0 else self._add(dataclasses.replace(f))
            one.name = said
            if mapping is not None:     # the function: what the mapping's maker put there
                one.expr, one.function = f'{_text.text(mapping)}["{said}"]', ""

    def _ffi_call(self, src: Source, call: cst.Call, name: cst.Name) -> None:
        api = 4
        given = keyword(call, "custom_call_api_version")
        if given is not None:
            api = _text.version(given)
        f = self._add(Finding("typed" if api == 4 else "call_site", src.line(name), "ffi_call"))
        f.version = max(api, 0)
        self._name(f, argument(call, 0, "target_name"))
        shapes = argument(call, 1, "result_shape_dtypes")
        f.shapes = _text.text(shapes) if shapes is not None else ""
        opaque = keyword(call, "legacy_backend_config")
        f.opaque = _text.text(opaque) if opaque is not None else ""

    def _custom_call(self, src: Source, call: cst.Call, name: cst.Name) -> None:
        word = name.value
        f = self._add(Finding("call_site", src.line(name), word))
        at, default = site_defaults(word)
        target = argument(call, at, "call_target_name")
        # (a CustomCallOp's ir.StringAttr.get(NAME) read as NAME, as port reads it)
        target = attr_value(target) if target is not None else None
        self._name(f, target)
        # a name the site computes from literals (sphericart-jax's op_name,
        # kepler_jax's platform + "_kepler_f32"): a call site per name
        named = src.names_at(target) if not f.name and target is not None else None
        f.version, f.version_default = default, 1
        given = keyword(call, "api_version")
        if given is not None:
            f.version, f.version_default = max(_text.version(given), 0), 0
        opaque = next((o for o in (keyword(call, k) for k in OPAQUE_KEYWORDS) if o is not None),
                      None)
        f.opaque = _text.text(attr_value(opaque)) if opaque is not None else ""
        if f.version == 4:
            f.kind = "typed"
        if named:
            # this site for its first name, a copy for each other (via: one of
            # the names its expression takes, which the command leaves out
            # where another of them is a target and this one none)
            f.name, f.name_expr = named[0], ""
            f.via = f"{_text.text(target)}, one of the names it takes here"
            for said in named[1:]:
                self._add(dataclasses.replace(f, name=said))

    def _resolve(self, src: Source, call: cst.Call, target: cst.BaseExpression, f: Finding,
                 platform_expr: str) -> int:
        """A name passed in through the enclosing function's parameter: a
        registration per call of the function in this file that passes a
        literal; the function kept as a wrapper where others may call it.
        How many were made here; -1 where the function is a helper named as
        the registration it wraps (jax-chacha-prng's register_custom_call_
        target(name, fn, platform)): each call of it is a registration found
        as such, and this one is its body."""
        fn = src.enclosing_def(call)
        if fn is None:
            return 0
        names = _params(fn)
        index, suffix = next(((i, s) for i, p in enumerate(names)
                              if (s := _param_name(target, p)) is not None), (-1, None))
        if index < 0:
            return 0
        if fn.name.value in _REGISTER:
            return -1
        made = computed = 0
        for line, _, other, name in src.calls:
            if not isinstance(other.func, cst.Name) or other.func.value != fn.name.value:
                continue
            passed = positional(other, index)
            if passed is None:
                continue
            said = _text.literal(passed)
            if said is None:
                computed += 1
                continue
            made += 1
            _from_call(self._add(dataclasses.replace(
                f, name=said + suffix, passed=said, name_expr="", name_shape="",
                via=f'{fn.name.value}("{said}") at {src.shown}:{line}, the name passed in as '
                    f'{f.name_expr}')), other, names, _index(names, f.expr),
                _index(names, platform_expr))
        if made == 0 or computed:
            self._pending(fn.name.value, names, index, suffix, f, src.shown, platform_expr,
                          src.shown if made else None)
        return made

    def _pending(self, fn: str, names: list[str], index: int, suffix: str, reg: Finding,
                 shown: str, platform_expr: str, literals_in: str | None) -> None:
        for w in self.wrappers:
            if w.fn == fn and w.index == index:
                w.literals_in = literals_in or w.literals_in
                w.branches.append((shown, reg.line))     # another branch (per JAX release)
                return
        w = Wrapper(fn, names, index, suffix, dataclasses.replace(reg), shown,
                    _index(names, reg.expr), _index(names, platform_expr), [(shown, reg.line)],
                    literals_in)
        self.wrappers.append(w)

    def wrapper_calls(self, order: list[int], also: dict[int, Source]) -> None:
        """Every call of a wrapper in the tree (the files in `order`, read
        already or in `also`), a registration at the call; the registrations
        inside each wrapper that calls now stand for dropped."""
        for i in order:
            src = self.sources.get(i) or also.get(i)
            for w in self.wrappers if src is not None else ():
                for line, _, call, name in src.calls:
                    if name.value == w.fn:
                        self._wrapper_call(i, src, w, call, line)
        made = {b for w in self.wrappers if w.made for b in w.branches}
        for i, found in self.found.items():
            shown = self.sources[i].shown
            found[:] = [f for f in found if not (f.kind == "registration" and not f.via and
                                                 (shown, f.line) in made)]

    def _wrapper_call(self, i: int, src: Source, w: Wrapper, call: cst.Call, line: int) -> None:
        param = w.params[w.index]
        passed = argument(call, w.index, param)
        if passed is None:
            return
        said = _text.literal(passed)
        if said is not None and w.literals_in == src.shown:
            return      # made when that file was read
        f = dataclasses.replace(w.reg, line=line, what=w.fn, name="", name_expr="", pattern="",
                                name_shape="", passed="")
        if said is not None:
            f.name, f.passed = said + w.suffix, said
        else:
            f.name_expr = _text.text(passed)
            f.pattern, f.name_shape = src.computed_name(passed, call)
        _from_call(f, call, w.params, w.kernel_index, w.platform_index)
        f.via = (f"{w.fn} ({w.file}:{w.reg.line}), which registers the name passed in as "
                 f"{param}")
        self.late.append((i, f))
        w.made += 1
