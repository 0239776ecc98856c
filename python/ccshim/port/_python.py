"""The Python side of a port, edited with libcst (comments and layout kept).

Registration: ``xla_client.register_custom_call_target(name, fn, platform=P)``
in a loop over an extension's ``registrations()`` becomes
``jax.ffi.register_ffi_target(name, fn, platform=P)`` when every kernel of
that extension was ported, and ``jax.ffi.register_ffi_target(...,
api_version=0)`` (today's name for the legacy registration) when none was;
``jax.ffi.register_ffi_target(..., api_version=0)`` of targets now ported
(a literal name, or a loop's over literals) is registered as typed.

Lowering: ``mlir.custom_call`` / ``hlo_helpers.custom_call`` on ported
targets, API version 1 or 2, becomes ``jax.ffi.ffi_lowering(name,
operand_layouts=..., result_layouts=..., skip_ffi_layout_processing=True)
(ctx, *operands)``: the same operands, results and layouts, typed (API
version 4).  The target name is followed through the rule's parameter to the
``partial(rule, "name")`` given to ``register_lowering``, and through the
rule's ``if`` tests on it, or to the literals a local of the rule is
assigned; ``out = custom_call(...)`` used only as ``out.results`` becomes
``out = ffi_lowering(...)(ctx, ...)`` used as ``out``.  A rule shared by
platforms whose kernels were ported on some of them only is split: kept
legacy for the others, a typed copy for those (_split).  A custom_call whose
layouts are not row-major, a stablehlo.CustomCallOp built by hand and an
ffi_call with custom_call_api_version are typed in place (_typed_call); a
call already typed is left alone.

Removed plumbing the module imports is replaced by today's API.
"""

from __future__ import annotations

import re
from pathlib import Path

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from . import _binding, _gpu, _gpu_lowering, _split, _typed_call, _wrapper
from .._pyread import starred as _starred
from ._ffi_lowering import ffi_lowering
from ._facts import _Facts, _arg, _dotted, _string, _test, package_of
from ._layouts import RowMajor
from .._names import Names, _reads, literal
from ._plumbing import (AVAL_TO_IR_TYPE, _Plumbing, _import_jax, _uses, ir_constant,
                        numpy_parameters, renamed, replaced_call, zero_tangents)
from ._registering import FFI_REGISTER, LEGACY_REGISTER, Registering
from ._report import Problem
from ._typed_call import CUSTOM_CALL, FFI_CALL
from ._translation import Translations



def _count(node: cst.BaseExpression | None) -> int | None:
    """How many entries a list or tuple written out has (`[a, b]`); None for
    anything else (a name, a comprehension, a starred entry)."""
    if not isinstance(node, (cst.List, cst.Tuple)) or \
            any(isinstance(e, cst.StarredElement) for e in node.elements):
        return None
    return len(node.elements)


def _ctx(fn: cst.FunctionDef | None) -> str | None:
    """The name of a rule's lowering context parameter (ctx, or context);
    None where it has none."""
    params = [p.name.value for p in fn.params.params] if fn else []
    return next((p for p in params if p in ("ctx", "context")), None)


class _Port(Registering, cst.CSTTransformer):
    METADATA_DEPENDENCIES = (ParentNodeProvider, PositionProvider)

    def __init__(self, path: str, facts: _Facts, ported: set[str], legacy: set[str],
                 modules: dict[str, tuple[set[str], set[str]]], problems: list[Problem],
                 names: Names, imported=None):
        super().__init__()
        self.path, self.facts, self.ported, self.legacy = path, facts, ported, legacy
        self.modules, self.problems, self.names = modules, problems, names
        self.rows = RowMajor(names.module, names, imported)     # layouts shown row-major
        # the module's registrations: [(name template, ported?)] (None: unknown)
        self.named: list[tuple[tuple, bool | None]] = []
        self.capsules: dict[str, bool] = {}    # capsules made by hand, by member
        self.changed = False
        self.extend = False                # jax.extend.core is used
        # (rule, name): `name = custom_call(...)` ported, whose `.results` are
        # now `name` itself
        self.result_vars: set[tuple[int, str]] = set()
        self.kernels: dict[str, dict[str, bool]] = {}   # target -> {platform: ported}
        self.rules = _gpu_lowering.Rules()
        self.held: set[tuple[str, str]] = set()
        self.prior: set[tuple[str, str]] = set()   # held by an earlier pass
        self.splits: dict[str, _split.Split] = {}  # rules split by platform, by name
        # the sites ported in a split rule's copy (their calls' ids), and
        # the (rule, name) of their `name = custom_call(...)`
        self.split_sites: set[int] = set()
        self.split_vars: set[tuple[int, str]] = set()
        self.needs_numpy = self.needs_mlir = False
        self.needs_jax = False      # an edit reads jax (today's name for removed plumbing)
        # A lowering whose targets it cannot tell may lower any target this
        # module registers: those are held (kept legacy) with it.
        self.registered: set[str] = set()
        self.unread = False
        # native modules whose ported capsules a registration it cannot
        # follow may register: their kernels are held (kept legacy)
        self.unfollowed: set[str] = set()
        # target -> each of its lowerings' (operands, results), None where a
        # count is known only at run time (port() shares one across modules)
        self.counts: dict[str, set[_binding.Counts | None]] = {}
        self.wrappers: set[str] = set()    # the module's wrappers of custom_call (_wrapper)
        self.ctx_kept: dict[int, str] = {}  # rules whose ported sites use ctx: id -> its name

    def where(self, node: cst.CSTNode) -> str:
        return f"{self.path}:{self.get_metadata(PositionProvider, node).start.line}"

    def _in_wrapper(self, node: cst.CSTNode) -> bool:
        """Whether node is in one of the module's wrappers of custom_call."""
        fn = self.enclosing(node)
        return fn is not None and fn.name.value in self.wrappers and \
            isinstance(self.get_metadata(ParentNodeProvider, fn), cst.Module)

    def enclosing(self, node: cst.CSTNode, kind=cst.FunctionDef):
        """The nearest node of that kind around node (its rule: the
        function it is in), or None; by the parents Names read of the same
        module, so that it also serves before the transformer runs
        (Registering.collect)."""
        parent = self.names.parents.get(node)
        while parent is not None and not isinstance(parent, kind):
            parent = self.names.parents.get(parent)
        return parent

    # Lowering -------------------------------------------------------------
    def _names(self, node: cst.Call, name: cst.BaseExpression) -> tuple[set[str], str | None]:
        """The target names that reach a lowering site, and the name of the
        lowering context (None when its rule has no ctx parameter); no names
        when it cannot follow them."""
        literal = _string(name)
        fn = self.enclosing(node)
        params = [p.name.value for p in fn.params.params] if fn else []
        ctx = _ctx(fn)
        if literal is not None:
            return {literal}, ctx
        if fn is not None and isinstance(name, cst.Name) and name.value not in params:
            # a local the rule assigns only literals to (veros: one per dtype)
            values = [a.value for a in m.findall(fn, m.Assign(targets=[
                m.AssignTarget(target=m.Name(name.value))]))]
            names = {_string(v) for v in values}
            # one it extends (sphericart-jax's op_name += ...) is _names.Names'
            if values and None not in names and \
                    not m.findall(fn, m.AugAssign(target=m.Name(name.value))):
                return names, ctx
            return set(), ctx
        param = _dotted(name)
        if fn is None or param not in params or params.index(param) != 0:
            return set(), ctx
        # the names partial(rule, "name") binds that the rule's if tests on
        # its first parameter let reach the site
        names = set()
        for bound, _platform in self.facts.bound.get(fn.name.value, []):
            reaches = self.names._reaches(node, fn, param, bound)
            if reaches is None:
                return set(), ctx
            if reaches:
                names.add(bound)
        return names, ctx

    def _registered_ported(self, names: set[str]) -> set[str]:
        """Those of names the module registers, every time, with a ported
        handler's capsule (a native module's function that returns one:
        klujax's `klujax_cpp.solve_f64()`)."""
        found = set()
        for n in names:
            states = [st for rt, st in self.named if literal(rt) == n]
            if states and all(states):
                found.add(n)
        return found

    def _lowering(self, node: cst.Call, updated: cst.Call, results: bool,
                  form: _typed_call.Form = CUSTOM_CALL,
                  made: cst.Call | None = None) -> cst.BaseExpression | None:
        """A legacy call site of that form (node; made: the call of the
        function an ffi_call makes) ported: None where it stays legacy
        (said)."""
        version = _typed_call.version(node, form)
        if version == "4":
            return None       # typed already
        name = _typed_call.target(node, form)
        if name is None:
            self.problems.append(Problem(self.where(node), "a custom call whose target it "
                                         "cannot read (passed through *args): not ported"))
            self.unread = True
            return None
        names, ctx = self._names(node, name)
        ported = (names & self.ported) | self._registered_ported(names)
        matched: set[str] = set()
        where = self.where(node)
        if not names:
            followed = self._followed(name)
            if followed is None:
                self.problems.append(Problem(where, "a custom call whose target is a name it "
                                             "cannot follow to a registration in its module or "
                                             "to a literal"))
                self.unread = True
                return None
            names, ported, matched = followed
        # typed in place (_typed_call): a CustomCallOp, an ffi_call, or a
        # custom_call whose layouts are not row-major
        in_place = form is not CUSTOM_CALL
        if ported or names & {t for t, _p in self.prior}:
            if self._unreadable(node, names, form, made):
                return None
            if not in_place:
                in_place = self._layouts_unshown(node, names)
            if in_place is False and (ctx is None or not results):
                # no ffi_lowering without ctx, nor where the op is used: JAX's
                # own custom_call is typed in place (jaxdecomp's ReshapeOp of it)
                in_place = self.facts.full(node.func) == _typed_call.KEPT or None
                if in_place is None:
                    self.problems.append(Problem(where, "a custom call outside a lowering rule "
                                                 "with a ctx parameter, or whose op (not "
                                                 ".results) is used, through "
                                                 f"{self.facts.full(node.func)}, not JAX's own "
                                                 f"{_typed_call.KEPT}: kept legacy, its "
                                                 "targets held"))
                    self._hold(names)
            if in_place is None:
                return None
        shape = self._platforms(node, names, matched)
        if shape == "refused":
            return None
        if shape is None and names != ported:
            left = sorted(names - ported)
            if ported:
                self.problems.append(Problem(where, f"lowers ported and legacy targets "
                                             f"({', '.join(left)} not ported): kept legacy"))
            else:
                self.problems.append(Problem(where, f"lowers {', '.join(left)}, not ported: "
                                             "kept a legacy custom call"))
            return None
        if version not in ("1", "2", "3"):
            self.problems.append(Problem(where, "a custom call with an API version other than "
                                         "1, 2 or 3 on a ported CPU target: not ported yet"))
            return None
        if in_place:
            self._counts(names, _typed_call.operands(updated, form, made), updated, form)
            self.changed = True
            return _typed_call.typed(form, made if made is not None else updated,
                                     shape == "gpu", self)
        operands = _arg(updated, -1, "operands")
        if operands is None:
            return None      # (_unreadable said it)
        operands = operands.value
        self._counts(names, operands, updated, form)
        self.changed = True
        opaque = None
        if shape == "gpu":
            config = _arg(updated, 99, "backend_config")
            opaque = _gpu_lowering.opaque(config.value if config else None, self.numpy())
        fn = self.enclosing(node)
        self.ctx_kept[id(fn)] = ctx
        return ffi_lowering(updated, ctx, operands, opaque)

    def _counts(self, names: set[str], operands: cst.BaseExpression | None, call: cst.Call,
                form: _typed_call.Form) -> None:
        """Each target's (operands, results) at this lowering, where both are
        written out (_binding)."""
        results = _arg(call, *form.results)
        count = (_count(operands), _count(results.value if results else None))
        for n in names:
            self.counts.setdefault(n, set()).add(None if None in count else count)

    def _layouts_unshown(self, node: cst.Call, names: set[str]) -> bool | None:
        """Whether the site's layouts are not shown row-major (_layouts), so
        that it is typed in place (_typed_call); None where it calls another
        custom_call than JAX's: said and kept legacy, its targets held (their
        kernels and registrations kept legacy too)."""
        odd = _typed_call.unshown(self.rows, node)
        full = self.facts.full(node.func) or ""
        if not odd or full == _typed_call.KEPT:
            return bool(odd)
        self.problems.append(Problem(self.where(node), _typed_call.refusal(odd, full)))
        self._hold(names)
        return None

    def _unreadable(self, node: cst.Call, names: set[str], form: _typed_call.Form,
                    made: cst.Call | None) -> bool:
        """Whether the site passes arguments it cannot place: through a *args
        or **kwargs (an api_version, a backend_config, layouts), or by
        position past those of its form (old jaxlib's
        hlo_helpers.custom_call(name, out_types, operands, ...)); or whether
        an ffi_call's function is called elsewhere than where it is made
        (on GPU its opaque is given to that call). It is said and kept
        legacy, its targets held, rather than ported with them dropped."""
        if _starred(node):
            why = "with arguments passed through *args or **kwargs, which it cannot read"
        elif sum(a.keyword is None for a in node.args) > form.positional or (
                form.operands is not None and _arg(node, *form.operands) is None):
            why = "whose arguments other than its target are not all given by keyword"
        elif form is FFI_CALL and made is None:
            why = "(an ffi_call) whose function is not called where it is made"
        else:
            return False
        self.problems.append(Problem(self.where(node), f"a custom call {why}: kept legacy, its "
                                     "targets held"))
        self._hold(names)
        return True

    def _hold(self, names: set[str]) -> None:
        """The ported kernels of names kept legacy, and so their
        registrations and every lowering of them."""
        self.held |= {(n, p) for n in names for p, ok in self.kernels.get(n, {}).items() if ok}
        if not names <= set(self.kernels):
            self.unread = True       # (names followed to registrations: hold the module's)

    def _platforms(self, node: cst.Call, names: set[str], matched: set[str]) -> str | None:
        """'cpu' or 'gpu': the form the site is ported in; 'refused' (said,
        and its ported targets held) where it stays legacy; None where the
        native side said nothing of its targets' platforms.  matched: names
        a template with symbolic parts matched, which it lowers only on the
        platforms they have a kernel for (on others no such target is
        registered, and the call fails on either path)."""
        if not self.kernels or not names <= set(self.kernels):
            return None
        fn = self.enclosing(node)
        rule = fn.name.value if fn else None
        bound = self.facts.bound.get(rule, [])
        lowered = _gpu_lowering.pairs(names, rule, bound, self.rules, self.kernels,
                                      self._reached(node, fn, bound))
        lowered = {(n, p) for n, p in lowered if n not in matched or p in self.kernels[n]}
        # Targets held by an earlier pass count as ported here, so that the
        # site says why it holds them.
        view = {n: {p: ok or (n, p) in self.prior for p, ok in ps.items()}
                for n, ps in self.kernels.items()}
        shape, hold = _gpu_lowering.form(lowered, view)
        if shape in ("cpu", "gpu") and not lowered & self.prior:
            return shape
        split = _split.plan(rule, names, self.rules, self.kernels, self.prior, self.taken) \
            if shape == "mixed" and fn is not None and isinstance(
                self.get_metadata(ParentNodeProvider, fn), cst.Module) else None
        if split is not None and self.splits.setdefault(rule, split).typed == split.typed:
            self.split_sites.add(id(node))
            self.problems.append(Problem(self.where(node),
                                         _split.said(split, names)))
            return "cpu" if split.typed == {_gpu_lowering.CPU} else "gpu"
        if shape in ("cpu", "gpu"):      # its targets are held for another site
            shape, hold = "held", set()
        self.problems.append(Problem(self.where(node),
                                     _gpu_lowering.refusal(shape, lowered, hold)))
        self.held |= hold
        return "refused"

    def _reached(self, node: cst.Call, fn: cst.FunctionDef | None,
                 bound: list[tuple[str, str | None]]) -> set[str] | None:
        """The platforms of the registrations of fn as `partial(fn, V)` under
        which node runs, by the `if` tests on fn's first parameter around it
        (jax-finufft's `if platform == "cpu":`, its rule registered from
        another module); None where it cannot tell."""
        if fn is None or not bound or not fn.params.params or \
                any(p is None for _v, p in bound):
            return None
        param = fn.params.params[0].name.value
        found = set()
        for value, registered in bound:
            runs = self.names._reaches(node, fn, param, value)
            if runs is None:
                return None
            if runs:
                found.add(registered)
        return found

    def mlir(self) -> str:
        """The module's name for jax.interpreters.mlir, or for the private
        module it re-exports (jaxdecomp imports that one), imported where it
        has neither."""
        name = self.facts.local("jax.interpreters.mlir") or \
            self.facts.local("jax._src.interpreters.mlir")
        self.needs_mlir |= name is None
        return name or "jax.interpreters.mlir"

    def numpy(self) -> str:
        """The module's name for numpy (imported as `numpy` where it has none)."""
        name = self.facts.local("numpy")
        if name is None:
            self.needs_numpy = True
            return "numpy"
        return name

    # Removed plumbing ------------------------------------------------------
    def leave_Return(self, original: cst.Return, updated: cst.Return):
        """A JVP rule's None output tangent (an error since JAX 0.5.0) becomes
        the symbolic zero of that output (_plumbing.zero_tangents)."""
        fn = self.enclosing(original)
        if fn is None or fn.name.value not in self.facts.jvps or updated.value is None:
            return updated
        new = zero_tangents(updated.value, self.facts.local("jax.interpreters.ad"))
        if isinstance(new, str):
            self.problems.append(Problem(self.where(original), new))
            return updated
        if new is None:
            return updated
        self.changed = True
        return updated.with_changes(value=new)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        today = renamed(self.facts, original)
        if today is not None:
            self.needs_jax = self.changed = True
            self.extend |= (_dotted(today) or "").startswith("jax.extend.core.")
            return today
        # out.results, where `out = custom_call(...)` was ported
        if original.attr.value == "results" and isinstance(original.value, cst.Name):
            fn = self.enclosing(original)
            var = (id(fn), original.value.value) if fn is not None else None
            if var in self.result_vars:
                return self._swapped(var in self.split_vars, original, updated.value, updated)
        # mlir.custom_call(...).results
        if original.attr.value == "results" and isinstance(original.value, cst.Call) and \
                not self._in_wrapper(original):
            call = original.value
            if _typed_call.form_of(self.facts.full(call.func) or "", call) is CUSTOM_CALL:
                new = self._lowering(call, updated.value, results=True)
                if new is not None:
                    return self._swapped(id(call) in self.split_sites, original, new, updated)
        return updated

    def _results_only(self, call: cst.Call, parent: cst.CSTNode) -> tuple[int, str] | None:
        """(rule, name) for `name = custom_call(...)` in a rule that uses name
        only as `name.results`; None otherwise."""
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and
                isinstance(parent.targets[0].target, cst.Name)):
            return None
        name = parent.targets[0].target.value
        fn = self.enclosing(call)
        if fn is None:
            return None
        uses = sum(1 for n in _reads(fn) if n.value == name)   # (not `.results` itself)
        results = len(m.findall(fn, m.Attribute(value=m.Name(name), attr=m.Name("results"))))
        assigned = len(m.findall(fn, m.AssignTarget(target=m.Name(name))))
        return (id(fn), name) if assigned == 1 and uses == results + 1 else None

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        full = self.facts.full(original.func) or ""
        for key in numpy_parameters(self.facts, self.names, original):
            self.problems.append(Problem(self.where(original), (
                f"binds a primitive with a NumPy array as its parameter {key}, which JAX "
                "refuses as unhashable since 0.7.0: not ported (give it as a tuple; "
                "zero-change mode passes it frozen)")))
        if full in AVAL_TO_IR_TYPE and len(updated.args) == 1 and not updated.args[0].keyword:
            # in a rule: today's call, given the rule's lowering context
            ctx = _ctx(self.enclosing(original))
            if ctx is not None:
                self.changed = True
                return updated.with_changes(args=[cst.Arg(cst.parse_expression(
                    f"{ctx}.module_context")), *updated.args])
        today = replaced_call(self.facts, updated)
        if today is not None:
            self.needs_jax = self.changed = True
            return today
        if full == "jax.interpreters.mlir.ir_constant":
            new = ir_constant(self.facts, updated, self.numpy)
            self.changed |= new is not updated
            return new
        if full in LEGACY_REGISTER:
            return self._registration(original, updated)
        if full in FFI_REGISTER and m.matches(
                _arg(original, 99, "api_version"), m.Arg(value=m.Integer("0"))):
            return self._ffi_registration(original, updated)
        if full != "jax.ffi.register_ffi_target" and m.matches(
                _arg(original, 99, "api_version"), m.Arg(value=m.Integer("0"))):
            return self._wrapped_registration(original, updated)
        form = _typed_call.form_of(full, original)
        if form is _typed_call.OP:
            return self._lowering(original, updated, results=True, form=form) or updated
        if form is FFI_CALL:      # ported with the call of the function it makes
            parent = self.get_metadata(ParentNodeProvider, original)
            if isinstance(parent, cst.Call) and parent.func is original:
                return updated
            return self._lowering(original, updated, results=True, form=form) or updated
        if isinstance(original.func, cst.Call) and _typed_call.form_of(
                self.facts.full(original.func.func) or "", original.func) is FFI_CALL:
            return self._lowering(original.func, updated.func, results=True, form=FFI_CALL,
                                  made=updated) or updated
        if isinstance(original.func, cst.Name) and original.func.value in self.wrappers:
            # a call of the module's wrapper: a site, whose .results it gives
            new = self._lowering(original, updated, results=True)
            return updated if new is None else \
                self._swapped(id(original) in self.split_sites, original, new, updated)
        if form is CUSTOM_CALL and not self._in_wrapper(original):
            parent = self.get_metadata(ParentNodeProvider, original)
            if isinstance(parent, cst.Attribute) and parent.attr.value == "results":
                return updated
            var = self._results_only(original, parent)
            new = self._lowering(original, updated, results=var is not None)
            # (new, where var is None, is a call typed in place: _lowering
            # refuses any other whose op is used)
            if new is not None:
                if var is not None and not _typed_call.in_place(new):   # (its .results stay)
                    self.result_vars.add(var)
                    if id(original) in self.split_sites:
                        self.split_vars.add(var)
                return self._swapped(id(original) in self.split_sites, original, new, updated)
        return updated

    def _swapped(self, split: bool, original: cst.CSTNode, new: cst.CSTNode,
                 old: cst.CSTNode) -> cst.CSTNode:
        """new, which replaces old; where that is a split site's port (or its
        result's use), kept, so that the rule's legacy side has old there
        again (_split)."""
        fn = self.enclosing(original)
        if split and fn is not None and fn.name.value in self.splits:
            self.splits[fn.name.value].swaps.append((new, old))
        return new

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        split = self.splits.get(original.name.value)
        if split is not None and split.swaps and isinstance(
                self.get_metadata(ParentNodeProvider, original), cst.Module):
            updated = _split.functions(split, original, updated)
        ctx = self.ctx_kept.get(id(original))
        if ctx is None:
            return updated
        if isinstance(updated, cst.FlattenSentinel):   # (both sides keep it)
            return cst.FlattenSentinel([_wrapper.keep_ctx(f, ctx) for f in updated.nodes])
        return _wrapper.keep_ctx(updated, ctx)


def _importer(facts: _Facts, tree: dict[str, Path], read: dict):
    """imported(name) for RowMajor: the module of the tree a name is
    imported from (`from pkg.utils import f`), read once per port of a
    module (read: dotted name -> its RowMajor, or None), and its functions
    of that name."""
    def rows(dotted: str):
        if dotted not in read:
            read[dotted] = None
            try:
                wrapper = MetadataWrapper(cst.parse_module(tree[dotted].read_text(
                    errors="replace")))
            except (KeyError, OSError, cst.ParserSyntaxError):
                return None
            other = _Facts(package_of(dotted, tree[dotted]))
            wrapper.visit(other)
            read[dotted] = RowMajor(wrapper.module, Names(wrapper, _test),
                                    _importer(other, tree, read))
        return read[dotted]

    def imported(name: str):
        dotted = facts.aliases.get(name, "")
        if "." not in dotted:
            return None
        where, function = dotted.rsplit(".", 1)
        found = rows(where) if where in tree else None
        return (found, found.functions[function]) if found is not None and \
            function in found.functions else None
    return imported


def port(path: str, text: str, ported: set[str], legacy: set[str],
         modules: dict[str, tuple[set[str], set[str]]], problems: list[Problem],
         kernels: dict[str, dict[str, bool]] | None = None,
         held: set[tuple[str, str]] | None = None,
         prior: set[tuple[str, str]] = frozenset(),
         capsules: dict[str, bool] | None = None,
         tree: dict[str, Path] | None = None, module_name: str = "",
         counts: dict[str, set[_binding.Counts | None]] | None = None,
         bound: dict[str, list[tuple[str, str | None]]] | None = None) -> str | None:
    """text ported, or None when nothing in it is a legacy target's use.
    kernels: each target's platforms, ported or not (_gpu_lowering); the
    ported (target, platform) pairs of sites kept legacy are added to held;
    prior: those an earlier pass held; capsules: those made by hand, by the
    member that holds each (ported or not); tree: the tree's modules, by
    dotted name, whose functions the layouts' reader may read; module_name:
    the module's own dotted name there (its package resolves its relative
    imports; another module may name its wrappers under it); counts: each
    target's lowerings' (operands, results) are added to it, None for one
    whose counts are known only at run time (a translation rule's included);
    bound: the partial bindings of the module's rules made in other modules
    (_facts.bound_elsewhere)."""
    # (sphericart-jax registers in a module that names only register_ffi_target;
    # jax-finufft makes its primitives, with removed plumbing, in a module
    # that only registers their lowerings)
    if not re.search(r"custom_?call|ffi_call|register_ffi_target|register_lowering", text, re.I):
        return None
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as e:
        problems.append(Problem(f"{path}:{e.raw_line}", f"libcst cannot parse it ({e.message})"))
        if counts is not None:
            counts.setdefault(_binding.ANY, set()).add(None)
        return None
    wrapper = MetadataWrapper(module)
    facts = _Facts(package_of(module_name, Path(path)))
    wrapper.visit(facts)
    for rule, bindings in (bound or {}).items():
        facts.bound.setdefault(rule, []).extend(bindings)
    rules = Translations(path, module, facts, ported, legacy)   # XlaBuilder's
    start = len(problems)
    porter = _Port(path, facts, ported, legacy, modules, problems,
                   Names(wrapper, _test), _importer(facts, tree or {}, {}))
    porter.kernels, porter.prior = kernels or {}, set(prior)
    porter.capsules = capsules or {}
    porter.wrappers = _wrapper.of(module, facts.full, module_name, tree or {})
    porter.counts = counts if counts is not None else {}
    porter.collect(wrapper.module)
    wrapper.visit(porter.rules)
    new = wrapper.visit(porter)
    splits = {rule: s for rule, s in porter.splits.items() if s.swaps}
    if splits:
        new = new.visit(_split.Retarget(splits))
    rules.said(problems, start)
    new, translated = rules.apply(new)
    if counts is not None:
        for target in rules.targets:
            counts.setdefault(target, set()).add(None)
        if porter.unread:
            counts.setdefault(_binding.ANY, set()).add(None)
    if held is not None:
        held |= porter.held
        if porter.unread:
            held |= {(t, p) for t in porter.registered
                     for p, ported in (kernels or {}).get(t, {}).items() if ported}
        held |= {(t, p) for module in porter.unfollowed for t in modules[module][0]
                 for p in _gpu.PLATFORMS}
    if not (porter.changed or translated):
        return None
    if porter.wrappers:
        new = _wrapper.drop(new, porter.wrappers)
    new = new.visit(_Plumbing(_uses(new)))
    if porter.extend or porter.needs_mlir or porter.needs_jax or \
            re.search(r"\bjax\.ffi\b", new.code):
        new = _import_jax(new, porter.extend, porter.needs_mlir)
    if porter.needs_numpy:
        new = _gpu_lowering.import_name(new, "numpy")
    return new.code
