"""A lowering rule split by platform, where one rule lowers its targets for
several platforms and their kernels were ported on some of them only.

mpi4jax writes one rule per collective for CUDA and SYCL, registered through
a wrapper per platform::

    def mpi_allreduce_xla_encode_device(ctx, x, ...):
        ... custom_call(b"mpi_allreduce", ..., backend_config=descriptor) ...

    mpi_allreduce_xla_encode_xpu = translation_rule_xpu(mpi_allreduce_xla_encode_device)
    mpi_allreduce_xla_encode_cuda = translation_rule_cuda(mpi_allreduce_xla_encode_device)

Its CUDA kernels are ported and its SYCL ones (a void* stream) are not.  One
custom call cannot be typed for one platform and legacy for the other, so
the rule is split: it stays as it was, a legacy call, for the platforms whose
kernels stay legacy, and a copy of it, ``<rule>_ffi``, has the typed call;
the wrappers and registrations of the ported platforms name the copy.

A rule is split only where every use of it is for platforms of one side:
``W = wrap(rule)`` or a function that calls it (mpi4jax's sendrecv), with W
or that function registered (``register_lowering(p, W, platform=P)``), or
``register_lowering(p, rule, platform=P)`` itself; a wrapper or a caller
registered for no platform, or for both sides, keeps it whole.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import libcst as cst

from . import _gpu_lowering

SUFFIX = "_ffi"


@dataclass
class Split:
    rule: str
    name: str                          # the copy's name
    typed: set[str]                    # the platforms the copy lowers for
    legacy: set[str]                   # those the rule keeps
    users: set[str]                    # the wrappers and callers now of the copy
    spelled: tuple[str, str]           # each side's platforms, as registered
    # (node in the ported rule, the node it replaced): what the legacy rule
    # keeps where the copy has its typed call
    swaps: list[tuple[cst.CSTNode, cst.CSTNode]] = field(default_factory=list)


def plan(rule: str | None, names: set[str], rules: _gpu_lowering.Rules,
         kernels: dict[str, dict[str, bool]], prior: set[tuple[str, str]],
         taken: set[str]) -> Split | None:
    """The split of rule, whose site lowers names: None where it cannot be
    split (see the module's docstring), or needs none."""
    if rule is None or rule + SUFFIX in taken:
        return None
    users = {u: rules.platforms.get(u, set()) for u in rules.users(rule)}
    if any(not ps for ps in users.values()):
        return None
    every = set(rules.platforms.get(rule, set())).union(*users.values())
    typed = {p for p in every if all(kernels.get(n, {}).get(p) and (n, p) not in prior
                                     for n in names)}
    if not typed or typed == every or (_gpu_lowering.CPU in typed and typed != {
            _gpu_lowering.CPU}):
        return None
    # each wrapper or caller on one side; a direct registration is of one platform
    if any(ps & typed and not ps <= typed for ps in users.values()):
        return None
    spelled = tuple(", ".join(sorted({raw for user in [rule, *users]
                                      for raw in rules.spelled.get(user, ())
                                      if _gpu_lowering.platform(raw) in want}))
                    for want in (typed, every - typed))
    return Split(rule, rule + SUFFIX, typed, every - typed,
                 {u for u, ps in users.items() if ps <= typed}, spelled)


def said(split: Split, names: set[str]) -> str:
    """Why the rule stays legacy for some platforms."""
    legacy = {(n, p) for n in names for p in split.legacy}
    return (f"lowers {_gpu_lowering.shown(legacy)}, not ported: {split.rule} is kept legacy "
            f"for it; its copy {split.name} lowers the ported ones ({split.spelled[0]}) typed")


class _Swap(cst.CSTTransformer):
    """Puts back, in a ported rule, the nodes its typed call replaced."""

    def __init__(self, swaps: list[tuple[cst.CSTNode, cst.CSTNode]]):
        super().__init__()
        self.back = {id(new): old for new, old in swaps}

    def on_leave(self, original, updated):
        return self.back.get(id(original), updated)


def _note(text: str) -> list[cst.EmptyLine]:
    return [cst.EmptyLine(comment=cst.Comment(f"# {line}"))
            for line in textwrap.wrap(text, width=77, break_on_hyphens=False)]


def functions(split: Split, original: cst.FunctionDef,
              ported: cst.FunctionDef) -> cst.FlattenSentinel:
    """The rule kept legacy and its ported copy, each with a line that says
    for which platforms."""
    legacy = ported.visit(_Swap(split.swaps))
    typed, kept = split.spelled
    legacy = legacy.with_changes(leading_lines=[
        *original.leading_lines,
        *_note(f"The legacy custom call, for {kept}, whose kernels are not ported; "
               f"the typed one, for {typed}, is {split.name} below.")])
    copy = ported.with_changes(name=cst.Name(split.name), leading_lines=[
        cst.EmptyLine(), cst.EmptyLine(),
        *_note(f"{split.rule} with a typed (FFI) custom call, for {typed}, whose "
               "kernels are typed handlers.")])
    return cst.FlattenSentinel([legacy, copy])


class Retarget(cst.CSTTransformer):
    """The wrappers, callers and registrations of the ported platforms name
    the copies: `W = wrap(rule)`, `rule(...)` in a caller, and
    `register_lowering(p, rule, platform=P)`."""

    def __init__(self, splits: dict[str, Split]):
        super().__init__()
        self.splits = splits
        self.functions: list[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node.name.value)

    def leave_FunctionDef(self, original, updated):
        self.functions.pop()
        return updated

    def _copy(self, arg: cst.Arg) -> cst.Arg:
        split = self.splits.get(arg.value.value) if isinstance(arg.value, cst.Name) else None
        return arg.with_changes(value=cst.Name(split.name)) if split else arg

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        value = updated.value
        if len(updated.targets) != 1 or not isinstance(updated.targets[0].target, cst.Name) or \
                not isinstance(value, cst.Call) or len(value.args) != 1:
            return updated
        wrapper = updated.targets[0].target.value
        if not any(wrapper in s.users for s in self.splits.values()):
            return updated
        return updated.with_changes(value=value.with_changes(args=[self._copy(value.args[0])]))

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        func = updated.func
        called = self.splits.get(func.value) if isinstance(func, cst.Name) else None
        if called is not None and self.functions and self.functions[-1] in called.users:
            return updated.with_changes(func=cst.Name(called.name))
        found = _gpu_lowering.registration(updated)
        split = self.splits.get(found[0]) if found else None
        if split is None or _gpu_lowering.platform(found[1]) not in split.typed:
            return updated
        args = list(updated.args)
        args[1] = self._copy(args[1])
        return updated.with_changes(args=args)
