"""What a module registers, and its registrations ported: the part of
_python.py's transformer (_Port) that reads a module's registrations of
legacy targets before any edit (their name templates and whether each
registers a ported handler), follows a call site's name to them, and
rewrites each registration as today's (`jax.ffi.register_ffi_target`, typed
where every kernel it registers was ported, `api_version=0` where none
was).  A mixin: its methods read the transformer's state (_python._Port)."""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m

from ._facts import _XLA_CLIENT, _arg, _dotted, _literals, _string
from .._names import (Part, _reads, _walk, expand, literal, loop_module,
                      registrations_module)
from ._report import Problem

# The calls that load a shared library into ctypes.
CTYPES_LOADERS = frozenset({"ctypes.CDLL", "ctypes.PyDLL", "ctypes.cdll.LoadLibrary",
                            "ctypes.pydll.LoadLibrary", "numpy.ctypeslib.load_library"})
# The registrations, legacy and today's (whose api_version=0 is legacy).
LEGACY_REGISTER = frozenset(f"{mod}.register_custom_call_target" for mod in _XLA_CLIENT)
FFI_REGISTER = frozenset({"jax.ffi.register_ffi_target", "jax.extend.ffi.register_ffi_target"})


def _shown(part) -> str:
    """How a symbolic part of a target name is written in a message."""
    return part.key[1] if isinstance(part, Part) and part.key[0] == "expr" else "..."


def _by_name(name: cst.BaseExpression, legacy: set[str]) -> str:
    """The api_version of a registration, in a loop over a module's
    targets, of each entry as it now is: the ported ones' capsules are typed
    handlers (1), the rest legacy kernels (0)."""
    names = ", ".join(f'"{t}"' for t in sorted(legacy)) + ("," if len(legacy) == 1 else "")
    return f"0 if {_dotted(name)} in ({names}) else 1"


def _partly(module: str, legacy: set[str]) -> str:
    """Why a registration of a module's targets registers some legacy."""
    return (f"registers the targets of {module}, {', '.join(sorted(legacy))} not ported (said "
            "above): those kept legacy (api_version=0)")


def _versioned(call: cst.Call, version: str) -> cst.Call:
    """call with its api_version=... given that expression."""
    return call.with_changes(args=[
        a.with_changes(value=cst.parse_expression(version)) if a.keyword and
        a.keyword.value == "api_version" else a for a in call.args])


class Registering:
    """The registration side of _Port."""

    # What the module registers ---------------------------------------------
    def collect(self, module: cst.Module) -> None:
        """Every registration of the module, before any is edited: its name
        templates, and whether each registers a ported handler."""
        self.states: dict[int, list[bool | None]] = {}
        self.taken = {f.name.value for f in _walk(module, cst.FunctionDef)}
        for call in _walk(module, cst.Call):
            full = self.facts.full(call.func) or ""
            if full not in LEGACY_REGISTER | FFI_REGISTER:
                continue
            name, fn = _arg(call, 0, "name"), _arg(call, 1, "fn")
            if name is None or fn is None:
                continue
            templates = self.names.templates(name.value)
            if templates is None:
                continue
            module_name = self._loop_module(call)
            keys = {}
            if module_name in self.modules:
                keys = {module_name: sorted(set().union(*self.modules[module_name]))}
            states = []
            for template in templates:
                for t, key in expand(template, keys):
                    if key is not None:
                        state = key in self.modules[module_name][0]
                    else:
                        state = self._capsule(fn.value)
                        lit = literal(t)
                        if state is None and lit is not None:
                            state = True if lit in self.ported else (
                                False if lit in self.legacy else None)
                    self.named.append((t, state))
                    states.append(state)
            self.states[id(call)] = states

    def _loop_module(self, call: cst.Call) -> str | None:
        """M, where call is in a loop over `M.registrations().items()`."""
        loop = self.enclosing(call, cst.For)
        return registrations_module(loop.iter) if loop is not None else None

    def _capsule(self, fn: cst.BaseExpression) -> bool | None:
        """Whether a registration's capsule is a ported handler (True), a
        legacy kernel (False), or it cannot tell (None): `M.f()` or
        `getattr(M, name)()` of a native module whose functions return
        capsules."""
        if isinstance(fn, cst.Name):
            # a local holding a capsule made by hand (tfc: obj = x.xlaCapsule)
            value = self.names.value(fn)
            if isinstance(value, cst.Attribute) and value.attr.value in self.capsules:
                return self.capsules[value.attr.value]
            return None
        if isinstance(fn, cst.Attribute) and fn.attr.value in self.capsules:
            return self.capsules[fn.attr.value]
        if not isinstance(fn, cst.Call) or fn.args:
            return None
        module = attr = None
        if isinstance(fn.func, cst.Attribute):
            module, attr = self.facts.full(fn.func.value), fn.func.attr.value
        elif isinstance(fn.func, cst.Call) and _dotted(fn.func.func) == "getattr" and \
                len(fn.func.args) == 2:
            module, attr = self.facts.full(fn.func.args[0].value), _string(fn.func.args[1].value)
        key = (module or "").split(".")[-1]
        if key not in self.modules:
            return None
        ported, legacy = self.modules[key]
        if attr is not None:
            return True if attr in ported else (False if attr in legacy else None)
        return True if ported and not legacy else (False if legacy and not ported else None)

    def _followed(self, name: cst.BaseExpression) -> tuple[set[str], set[str], set[str]] | None:
        """The targets a call site's name can be, as (every one, the ported
        ones, those matched by a template with symbolic parts), each written
        as a template (`{...}` for what is known only symbolically), by
        following the name to the module's registrations; None when some
        cannot be followed."""
        templates = self.names.reaching(name)
        if templates is None:
            return None
        every, ported, matched = set(), set(), set()
        for t in templates:
            lit = literal(t)
            states = [st for rt, st in self.named if rt == t]
            if not states and lit is not None and (lit in self.ported or lit in self.legacy):
                states = [lit in self.ported]
            if not states and lit is None:
                found = self._matched(t)
                if found is None:
                    return None
                matched |= set(found)
                ported |= {n for n, ok in found.items() if ok}
                continue
            if not states or None in states:
                return None
            shown = "".join(p if isinstance(p, str) else "{" + _shown(p) + "}" for p in t)
            every.add(shown)
            if all(states):
                ported.add(shown)
        return every | matched, ported, matched

    def _matched(self, t) -> dict[str, bool] | None:
        """The registered names a template with symbolic parts can spell
        (jax-finufft's `f"nufft{ndim}d1{suffix}"`), each with whether it is
        ported: every name the module registers that the template matches,
        a symbolic part matching any text.  None where it cannot tell: a
        registration of the module it cannot read as literal names, a
        template with no literal text, or one that matches none."""
        if not any(isinstance(p, str) for p in t) or \
                any(literal(rt) is None or st is None for rt, st in self.named):
            return None
        pattern = re.compile("".join(re.escape(p) if isinstance(p, str) else ".*" for p in t))
        found: dict[str, bool] = {}
        for rt, st in self.named:
            if pattern.fullmatch(literal(rt)):
                found[literal(rt)] = found.get(literal(rt), True) and st
        return found or None

    # Registration ---------------------------------------------------------
    def _registration(self, node: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        name = _arg(node, 0, "name")
        loop = self.enclosing(node, cst.For)
        module = loop_module(loop.iter) if loop is not None else None
        literal = _string(name.value) if name else None
        where = self.where(node)
        version = None       # the api_version to register with: None for typed (4)
        if module is not None and module in self.modules:
            ported, legacy = self.modules[module]
            self.registered |= ported
            if legacy and ported:
                version = _by_name(name.value, legacy)
                self.problems.append(Problem(where, _partly(module, legacy)))
            elif legacy:
                version = "0"
                self.problems.append(Problem(where, f"registers the legacy targets of {module}, "
                                             "not ported (said above): kept as "
                                             "jax.ffi.register_ffi_target(..., api_version=0)"))
        elif literal is not None and (literal in self.ported or literal in self.legacy):
            self.registered.add(literal)
            if literal in self.legacy:
                version = "0"
                self.problems.append(Problem(where, f"registers '{literal}', not ported (said "
                                             "above): kept as jax.ffi.register_ffi_target(..., "
                                             "api_version=0)"))
        elif any(v == "numba" or v.startswith("numba.") for v in self.facts.aliases.values()):
            self.problems.append(Problem(where, "registers a kernel made at run time by numba "
                                         "(no source in the tree to port): kept as it is"))
            return updated
        elif self.states.get(id(node)) and None not in self.states[id(node)] and \
                len(set(self.states[id(node)])) == 1:
            # a name followed to its capsule: a native module's function
            if not self.states[id(node)][0]:
                version = "0"
                self.problems.append(Problem(where, "registers a legacy kernel, not ported "
                                             "(said above): kept as "
                                             "jax.ffi.register_ffi_target(..., api_version=0)"))
        else:
            what = f"the targets of {module}" if module else (
                f"'{literal}'" if literal else "a name it cannot follow")
            how = self._foreign(_arg(node, 1, "fn"))
            native = self._imported_ported()
            self.unfollowed |= native
            if how:
                why = f"{how}: kernels exported through ctypes or cffi are not ported yet"
            elif native:
                why = (f"with a capsule that may be {' or '.join(sorted(native))}'s: their "
                       "kernels kept legacy with it")
            else:
                why = "whose kernels it found no source for"
            version = "0"
            self.problems.append(Problem(where, f"registers {what}, {why}: kept as "
                                         "jax.ffi.register_ffi_target(..., api_version=0)"))
        args = [a for a in updated.args if not (a.keyword and a.keyword.value == "api_version")]
        if version is not None:
            args[-1] = args[-1].with_changes(comma=cst.Comma(
                whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(cst.Arg(cst.parse_expression(version), keyword=cst.Name("api_version"),
                                equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                      cst.SimpleWhitespace(""))))
        self.changed = True
        return updated.with_changes(func=cst.parse_expression("jax.ffi.register_ffi_target"),
                                    args=args)

    def _imported_ported(self) -> set[str]:
        """The native modules the module imports (as their own names'
        last part) whose kernels the native side ported, or held for an
        earlier pass (this one's hold, made again)."""
        prior = {t for t, _p in self.prior}
        return {key for full in self.facts.aliases.values() for key in [full.split(".")[-1]]
                if key in self.modules and (self.modules[key][0] or self.modules[key][1] & prior)}

    def _foreign(self, fn: cst.Arg | None) -> str | None:
        """How a registered function reaches XLA from a library Python
        loaded itself (ctypes, cffi), said for a message; None where it does
        not: a function of a library the module loads, or a capsule made in
        Python around a pointer (jax.ffi.pycapsule, PyCapsule_New)."""
        if fn is None:
            return None
        library = self._library(fn.value, set())
        if library is not None:
            return f"a kernel of {library[0]}, a library loaded by {library[1]}"
        for call in m.findall(fn.value, m.Call()):
            func = call.func     # (or what a name holds: _new = ctypes.pythonapi.PyCapsule_New)
            held = self.names.value(func) if isinstance(func, cst.Name) else None
            full = self.facts.full(held if isinstance(held, (cst.Name, cst.Attribute)) else
                                   func) or ""
            if full.endswith(("ffi.pycapsule", "PyCapsule_New")):
                return f"a capsule made in Python ({full})"
        return None

    def _library(self, node: cst.BaseExpression, seen: set[int]) -> tuple[str, str] | None:
        """(name, loader) of a name node reads, or a value it is made from
        reads (address = ctypes.cast(lib.f, ctypes.c_void_p).value), that is
        given a library ctypes or cffi's dlopen loads; None where none is."""
        for name in _reads(node):
            for value in self.names.values(name):
                if id(value) in seen:
                    continue
                seen.add(id(value))
                full = self.facts.full(value.func) if isinstance(value, cst.Call) else None
                if full in CTYPES_LOADERS:
                    return name.value, full
                if (full or "").endswith(".dlopen") and \
                        any(v.split(".")[0] == "cffi" for v in self.facts.aliases.values()):
                    return name.value, "cffi's dlopen"
                found = self._library(value, seen)
                if found is not None:
                    return found
        return None

    def _ffi_registration(self, node: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """jax.ffi.register_ffi_target(name, fn, ..., api_version=0) of
        targets that are ported now: registered as typed (the default)."""
        name = _arg(node, 0, "name")
        literal = _string(name.value) if name else None
        names = {literal} if literal is not None else set()
        if literal is None and name is not None and isinstance(name.value, cst.Name):
            loop = self.enclosing(node, cst.For)
            if loop is not None and m.matches(loop.target, m.Name(name.value.value)):
                names = set(_literals(loop.iter) or ())
        where = self.where(node)
        states = self.states.get(id(node))
        if not names and states and None not in states:
            # followed: a loop over a native module's registrations(), or a
            # name made at run time whose capsule is a ported kernel's
            module = self._loop_module(node)
            if any(states) and not all(states) and module in self.modules and name is not None:
                legacy = self.modules[module][1]
                self.problems.append(Problem(where, _partly(module, legacy)))
                self.changed = True
                return _versioned(updated, _by_name(name.value, legacy))
            if not all(states):
                self.problems.append(Problem(where, "registers legacy targets, not ported "
                                             "(said above): kept legacy (api_version=0)"))
                return updated
        elif not names or not names & (self.ported | self.legacy):
            return updated
        elif not names <= self.ported:
            left = ", ".join(sorted(names - self.ported))
            self.problems.append(Problem(where, f"registers {left}, not ported (said above): "
                                         "kept legacy (api_version=0)"))
            return updated
        args = [a for a in updated.args if not (a.keyword and a.keyword.value == "api_version")]
        args[-1] = args[-1].with_changes(comma=updated.args[-1].comma,
                                         whitespace_after_arg=updated.args[-1].whitespace_after_arg)
        self.changed = True
        return updated.with_changes(args=args)

    def _wrapped_registration(self, node: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """The project's own registration function called with api_version=0
        in a loop over an extension's targets (mpi4jax's
        `register_custom_call_target(name, fn, platform=P, api_version=0)`
        over `M.custom_call_targets.items()`): api_version=1 where all of
        M's targets are ported."""
        loop = self.enclosing(node, cst.For)
        it = _dotted(loop.iter.func) if loop is not None and isinstance(loop.iter, cst.Call) \
            else None
        module = it.split(".")[-3] if it and (it.endswith(".custom_call_targets.items") or
                                              it.endswith(".registrations.items")) else None
        if module not in self.modules:
            return updated
        ported, legacy = self.modules[module]
        self.registered |= ported
        if legacy and not ported:
            self.problems.append(Problem(self.where(node), f"registers the legacy targets of "
                                         f"{module} through one call: kept legacy "
                                         "(api_version=0)"))
            return updated
        self.changed = True
        if legacy:
            self.problems.append(Problem(self.where(node), f"registers the targets of {module} "
                                         f"through one call, {', '.join(sorted(legacy))} not "
                                         "ported (said above): those kept legacy "
                                         "(api_version=0)"))
            return _versioned(updated, _by_name(_arg(node, 0, "name").value, legacy))
        return _versioned(updated, "1")
