"""The platforms of a lowering site, and the GPU form of its port.

A legacy call site lowers its target names for the platforms its rule is
registered for (``register_lowering(prim, rule, platform=P)``, through
``partial(rule, "name")`` or through a wrapper ``rule_p = wrap(rule)``).  The
native side says, for each target, on which platforms its kernel was
ported.  A site is ported when every (name, platform) it lowers is: in the
CPU form when it lowers for the CPU only, in the GPU form when it lowers for
GPU platforms only.  The GPU form passes the legacy ``backend_config`` bytes
as the attribute ``opaque``, an array of uint8 that the handler reads:

    jax.ffi.ffi_lowering(name, ..., skip_ffi_layout_processing=True)(
        ctx, *OPS, opaque=np.frombuffer(OPAQUE, dtype=np.uint8))

Where a site mixes ported and legacy (name, platform) pairs it stays legacy,
and so must the ported ones (their registration and their handlers): they
are *held*, and the port is made again without them (``__init__``).
"""

from __future__ import annotations

import sys

import libcst as cst

CPU, GPU = "cpu", ("cuda", "rocm", "other")


def platform(name: str | None) -> str | None:
    """A platform's spelling in registrations and lowerings, as the kernels'
    platforms are named: cpu, cuda, rocm, or other (SYCL, XPU, ...)."""
    if name is None:
        return None
    key = name.lower()
    return {"cpu": CPU, "host": CPU, "cuda": "cuda", "gpu": "cuda", "rocm": "rocm"}.get(key,
                                                                                        "other")


def registration(call: cst.Call) -> tuple[str, str] | None:
    """(the rule's name, the platform as written) of `register_lowering(p,
    rule, platform=P)` (or P by position); None for any other call, or one
    whose rule is not a name or whose platform is not a literal."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else (
        func.value if isinstance(func, cst.Name) else "")
    if name != "register_lowering" or len(call.args) < 2:
        return None
    rule = call.args[1].value
    where = next((a for a in call.args if a.keyword and a.keyword.value == "platform"),
                 call.args[2] if len(call.args) > 2 and call.args[2].keyword is None else None)
    if not isinstance(rule, cst.Name) or where is None or \
            not isinstance(where.value, cst.SimpleString):
        return None
    return rule.value, where.value.evaluated_value


class Rules(cst.CSTVisitor):
    """The platforms each lowering rule (a function's name) is registered
    for, through `wrapped = wrap(rule)` assignments."""

    def __init__(self) -> None:
        self.platforms: dict[str, set[str]] = {}
        self.spelled: dict[str, set[str]] = {}   # (the platforms as written)
        self.wraps: dict[str, str] = {}     # wrapped -> rule
        self.calls: dict[str, set[str]] = {}  # function -> the names it calls
        self.functions: list[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node.name.value)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if (len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and
                isinstance(value, cst.Call) and len(value.args) == 1 and
                isinstance(value.args[0].value, cst.Name)):
            self.wraps[node.targets[0].target.value] = value.args[0].value.value

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if self.functions and isinstance(func, cst.Name):
            self.calls.setdefault(self.functions[-1], set()).add(func.value)
        found = registration(node)
        if found is None:
            return
        rule, raw = found
        self.platforms.setdefault(rule, set()).add(platform(raw))
        self.spelled.setdefault(rule, set()).add(raw)

    def users(self, rule: str) -> list[str]:
        """The wrappers of rule (`w = wrap(rule)`) and the functions that
        call it."""
        return [w for w, inner in self.wraps.items() if inner == rule] + \
            [f for f, called in self.calls.items() if rule in called and f != rule]

    def of(self, rule: str) -> set[str]:
        """The platforms rule is registered for: itself, wrapped, or called
        by a rule that is (one level)."""
        found = set(self.platforms.get(rule, ()))
        for user in self.users(rule):
            found |= self.platforms.get(user, set())
        return found


def pairs(names: set[str], rule: str | None, bound: list[tuple[str, str | None]],
          rules: Rules, kernels: dict[str, dict[str, bool]],
          reached: set[str] | None = None) -> set[tuple[str, str]]:
    """The (name, platform) pairs a site lowers: from the partial bindings of
    its rule (of its names, or reached: the platforms of the bindings under
    which the site runs), else from the rule's registrations, else every
    platform the names have a kernel for."""
    by_binding = {(n, platform(p)) for n, p in bound if n in names and p}
    if by_binding and {n for n, _ in by_binding} == names:
        return by_binding
    if not by_binding and reached:
        return {(n, platform(p)) for n in names for p in reached}
    registered = rules.of(rule) if rule else set()
    if registered:
        return {(n, p) for n in names for p in registered}
    return {(n, p) for n in names for p in kernels.get(n, {})}


def form(lowered: set[tuple[str, str]],
         kernels: dict[str, dict[str, bool]]) -> tuple[str, set[tuple[str, str]]]:
    """('cpu' | 'gpu', set()) when every pair is ported; ('mixed', the ported
    pairs, to hold) when some are not; ('legacy', set()) when none is;
    ('both', every pair, to hold) when a site lowers ported targets for CPU
    and GPU: one custom call cannot be both forms."""
    ported = {(n, p) for n, p in lowered if kernels.get(n, {}).get(p)}
    if not ported:
        return "legacy", set()
    if ported != lowered:
        return "mixed", ported
    platforms = {p for _, p in lowered}
    if platforms == {CPU}:
        return "cpu", set()
    if CPU in platforms:
        return "both", lowered
    return "gpu", set()


def shown(pairs: set[tuple[str, str]]) -> str:
    return ", ".join(sorted(f"{n} ({'another GPU platform' if p == 'other' else p})"
                            for n, p in pairs))


def refusal(shape: str, lowered: set[tuple[str, str]], hold: set[tuple[str, str]]) -> str:
    """Why a site of that form stays legacy."""
    if shape == "both":
        return "one custom call lowers its targets for CPU and GPU: kept legacy (a rule per " \
               "platform is ported)"
    if shape == "mixed":
        return f"lowers ported and legacy targets ({shown(lowered - hold)} not ported): " \
               "kept legacy"
    if shape == "held":
        return f"lowers {shown(lowered)}, kept legacy for another of their lowerings (said " \
               "there): kept a legacy custom call"
    return f"lowers {shown(lowered)}, not ported: kept a legacy custom call"


def opaque(config: cst.BaseExpression | None, numpy: str) -> cst.Arg:
    """`opaque=np.frombuffer(CONFIG, dtype=np.uint8)`: the legacy opaque
    bytes (b"" where the call had none; a str literal as its UTF-8 bytes,
    as mlir.custom_call encoded it)."""
    if config is None:
        config = cst.SimpleString('b""')
    elif isinstance(config, cst.SimpleString) and isinstance(config.evaluated_value, str):
        config = cst.SimpleString(repr(config.evaluated_value.encode()))
    value = cst.parse_expression(f"{numpy}.frombuffer(X, dtype={numpy}.uint8)")
    value = value.with_changes(args=[cst.Arg(config, comma=value.args[0].comma),
                                     value.args[1]])
    return cst.Arg(value, keyword=cst.Name("opaque"),
                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def _imported(stmt: cst.CSTNode) -> list[str]:
    """The top-level modules a statement imports (none for __future__, a
    relative import's: "."), [] for a statement that imports nothing."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return []
    found = []
    for x in stmt.body:
        if isinstance(x, cst.Import):
            found += [cst.Module([]).code_for_node(a.name).split(".")[0] for a in x.names]
        elif isinstance(x, cst.ImportFrom):
            top = cst.Module([]).code_for_node(x.module).split(".")[0] if x.module else ""
            if top != "__future__":
                found.append("." if x.relative else top)
    return found


def import_name(module: cst.Module, name: str) -> cst.Module:
    """module with `import NAME`: a module of Python's own (os, sys) before
    its first import, another (numpy) before its first import of a module
    that is not Python's own, as a maintainer sorts them (after its
    docstring and __future__ imports)."""
    body = list(module.body)
    first = next((i for i, s in enumerate(body) if _imported(s)), 0)
    at = first
    if name not in sys.stdlib_module_names:
        at = next((i for i, s in enumerate(body)
                   if any(m not in sys.stdlib_module_names for m in _imported(s))),
                  max((i + 1 for i, s in enumerate(body) if _imported(s)), default=first))
    line = cst.parse_statement(f"import {name}\n")
    if at < len(body) and at != first:
        # the blank lines that open the third-party block stay above it
        line = line.with_changes(leading_lines=body[at].leading_lines)
        body[at] = body[at].with_changes(leading_lines=())
    body.insert(at, line)
    return module.with_changes(body=body)
