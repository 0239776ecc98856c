"""What a module binds, read with libcst for the port's Python side: its
imports (each local name's dotted origin), the names `partial(rule, "name")`
binds for `register_lowering`, its JVP rules; and the small readers of
literals and call arguments the other passes share."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from .._names import if_value as _test  # noqa: F401  (port's passes take it here)
from .._pyread import arg as _arg, dotted as _dotted, string as _string

_XLA_CLIENT = {"jax.lib.xla_client", "jaxlib.xla_client", "jax._src.lib.xla_client"}


def _literals(node: cst.BaseExpression | None) -> list[str] | None:
    """The strings of a tuple or list of string literals; None otherwise."""
    if not isinstance(node, (cst.Tuple, cst.List)):
        return None
    found = [_string(e.value) for e in node.elements]
    return None if not found or None in found else found


class _Facts(cst.CSTVisitor):
    """Names the module binds: its imports, its rules' partial bindings, its
    JVP rules."""

    def __init__(self, package: str = "") -> None:
        # The dotted package the module is in ("" when not known), against
        # which its relative imports are resolved.
        self.package = package
        self.aliases: dict[str, str] = {}      # local name -> dotted module or object
        self.bound: dict[str, list[tuple[str, str | None]]] = {}  # rule -> [(name, platform)]
        self.bound_full: dict[str, list[tuple[str, str | None]]] = {}  # (by its full name)
        self.jvps: set[str] = set()              # functions given as JVP rules

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _dotted(alias.name)
            local = alias.asname.name.value if alias.asname else full.split(".")[0]
            self.aliases[local] = full if alias.asname else local

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        base = _dotted(node.module) if node.module is not None else None
        if node.relative:     # from .x import f, from .. import m: from the package up
            parts = self.package.split(".") if self.package else []
            up = len(node.relative) - 1
            if up > len(parts):
                return
            base = ".".join(parts[:len(parts) - up] + ([base] if base else []))
        if not base:
            return
        for alias in node.names:
            name = _dotted(alias.name)
            local = alias.asname.name.value if alias.asname else name
            self.aliases[local] = f"{base}.{name}"

    def visit_Assign(self, node: cst.Assign) -> None:
        # ad.primitive_jvps[prim] = rule  (or partial(rule, ...))
        rule = node.value
        if isinstance(rule, cst.Call) and self.full(rule.func) in ("functools.partial",
                                                                   "partial") and rule.args:
            rule = rule.args[0].value
        for target in node.targets:
            if (isinstance(target.target, cst.Subscript) and
                    (self.full(target.target.value) or "").endswith("ad.primitive_jvps") and
                    isinstance(rule, cst.Name)):
                self.jvps.add(rule.value)

    def visit_Call(self, node: cst.Call) -> None:
        # register_lowering(prim, partial(rule, "name"), platform="p")
        if not (_dotted(node.func) or "").endswith("register_lowering"):
            return
        rule = _arg(node, 1, "rule")
        platform = _string(_arg(node, 2, "platform").value) if _arg(node, 2, "platform") else None
        if rule is None or not isinstance(rule.value, cst.Call):
            return
        inner = rule.value
        if self.full(inner.func) not in ("functools.partial", "partial") or len(inner.args) < 2:
            return
        fn, name = _dotted(inner.args[0].value), _string(inner.args[1].value)
        if fn is not None and name is not None:
            self.bound.setdefault(fn, []).append((name, platform))
            self.bound_full.setdefault(self.full(inner.args[0].value), []).append(
                (name, platform))

    def full(self, node: cst.BaseExpression) -> str | None:
        """node's dotted name with its first part resolved through imports."""
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.aliases.get(head, head)
        return f"{base}.{rest}" if rest else base

    def local(self, full: str) -> str | None:
        """The module's name for what it imports as full (a dotted module or
        object), if it imports it."""
        return next((k for k, v in self.aliases.items() if v == full), None)


def package_of(dotted: str, path: Path) -> str:
    """The package a module of that dotted name and file is in: its own
    name for a package's __init__.py, its parent's otherwise."""
    return dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]


def bound_elsewhere(tree: dict[str, Path]) -> dict[str, dict[str, list[tuple[str, str | None]]]]:
    """The partial bindings of each module's rules made in another module of
    the tree (jax-finufft's ops.py: `register_lowering(p, partial(
    lowering.lowering, "cpu"), platform="cpu")`): {module: {rule: [(value,
    platform)]}}."""
    found: dict[str, dict[str, list[tuple[str, str | None]]]] = {}
    for dotted, path in tree.items():
        try:
            text = path.read_text(errors="replace")
            if "register_lowering" not in text or "partial" not in text:
                continue
            module = cst.parse_module(text)
        except (OSError, cst.ParserSyntaxError):
            continue
        facts = _Facts(package_of(dotted, path))
        module.visit(facts)
        for full, bindings in facts.bound_full.items():
            owner, _, rule = (full or "").rpartition(".")
            if owner in tree and owner != dotted:
                found.setdefault(owner, {}).setdefault(rule, []).extend(bindings)
    return found
