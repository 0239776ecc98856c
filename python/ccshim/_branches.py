"""Which platforms reach each custom call of a module.

A module exported for several platforms (``jax.export`` with ``platforms=
("cpu", "cuda")``) takes the index of the platform it runs on as main's
first argument, tagged ``jax.global_constant = "_platform_index"``, and picks
each platform's lowering with ``stablehlo.case`` ops on values computed from
it (JAX's ``lower_per_platform``: a first case maps the platform's index to
the index of its lowering rule, a second one branches on that).  When JAX
calls such a module it passes the index as a constant, and XLA folds the
cases away: a call in another platform's branch is never compiled, let alone
run.  So a legacy BLAS call in the CPU branch of a ``(cpu, cuda)`` program
needs a kernel on the CPU only.

``reaching`` finds that out as XLA would, without running anything: with
the index set to each platform's in turn, it follows the scalar integer
values the cases branch on (constants, conversions, reshapes, and what cases
and function calls return), enters only the branch a known index picks, and
notes every custom call it meets.  Where a value is not known, every branch
is entered: a call may be reported for a platform that would not run it,
never missed for one that would.
"""

from __future__ import annotations

from typing import Any

from . import _jax_internals

PLATFORM_INDEX = '"_platform_index"'


def reaching(module, platforms, *, ordered: bool = True) -> dict[Any, tuple[str, ...]]:
    """{custom-call operation: the platforms (of ``platforms``) on which it
    is reached}.  ``ordered``: ``platforms`` are the module's own, in the
    order its platform index counts them (a jax.export artifact's); when
    not, the index is taken as unknown.  A module with no platform index
    runs alike on each platform: a call then lists them all, unless a case
    with a constant index skips it.  A call that no platform reaches (in a
    branch never taken, or a function never called) is left out."""
    funcs = _functions(module)
    main = funcs.get("main")
    if main is None:  # not a program: every call counts everywhere
        from ._hlo import walk
        return {op: tuple(platforms) for op in walk(module.operation)
                if op.name == "stablehlo.custom_call"}
    if not (ordered and _has_platform_index(main)):  # one walk serves every platform
        walker = _Walker(funcs)
        walker.run(walker.function(main, {}))
        return {op: tuple(platforms) for op in walker.reached}
    found: dict[Any, list[str]] = {}
    for i, platform in enumerate(platforms):
        walker = _Walker(funcs)
        walker.run(walker.function(main, {0: i}))
        for op in walker.reached:
            found.setdefault(op, []).append(platform)
    return {op: tuple(p) for op, p in found.items()}


def _functions(module) -> dict[str, Any]:
    out = {}
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func":
            out[str(op.attributes["sym_name"]).strip('"')] = op
    return out


def _has_platform_index(func) -> bool:
    if "arg_attrs" not in func.attributes:
        return False
    attrs = func.attributes["arg_attrs"]
    return len(attrs) > 0 and PLATFORM_INDEX in str(attrs[0])


class _Walker:
    """One walk of a module with some of main's arguments known.

    ``function`` and ``block`` are generators that yield what they need
    walked first, a block or a function, and get back what it returns;
    ``run`` drives them with a stack of its own, so that regions nested
    thousands deep do not exhaust Python's."""

    def __init__(self, funcs):
        self.funcs = funcs
        self.reached: set = set()
        # (function, its known arguments) -> what it returns (None: unknown)
        self.done: dict[tuple, list] = {}
        self.open: set[tuple] = set()

    def run(self, walk) -> list:
        stack, value = [walk], None
        while stack:
            try:
                need = stack[-1].send(value)
            except StopIteration as finished:
                stack.pop()
                value = finished.value
                continue
            stack.append(need)
            value = None
        return value

    def function(self, func, known_args: dict[int, int]):
        """Walks ``func`` with its arguments at those indices known; returns
        its results' known values (None where not known)."""
        name = str(func.attributes["sym_name"]).strip('"')
        key = (name, tuple(sorted(known_args.items())))
        if key in self.done:
            return self.done[key]
        if key in self.open:  # a call cycle: nothing known of what it returns
            return []
        self.open.add(key)
        body = func.regions[0].blocks[0]
        env = {body.arguments[i]: v for i, v in known_args.items()
               if i < len(body.arguments)}
        returned = yield self.block(body, env)
        self.open.discard(key)
        self.done[key] = returned
        return returned

    def block(self, block, env: dict):
        """Walks the operations of ``block`` in order; returns the known
        values of what its terminator returns."""
        returned: list = []
        for op in block.operations:
            op = op.operation
            name = op.name
            if name == "stablehlo.custom_call":
                self.reached.add(op)
            if name == "stablehlo.constant":
                if _is_integer_scalar(op.results[0].type):
                    env[op.results[0]] = _scalar(op)
            elif name in ("stablehlo.convert", "stablehlo.reshape"):
                value = env.get(op.operands[0])
                if value is not None and _is_integer_scalar(op.results[0].type):
                    env[op.results[0]] = value
            elif name in ("stablehlo.case", "stablehlo.if"):
                yield self.branches(op, env)
            elif name == "func.call":
                callee = self.funcs.get(str(op.attributes["callee"]).lstrip("@"))
                if callee is None:
                    continue
                known = {i: env[v] for i, v in enumerate(op.operands) if v in env}
                values = yield self.function(callee, known)
                for result, value in zip(op.results, values):
                    if value is not None:
                        env[result] = value
            elif name in ("func.return", "stablehlo.return"):
                returned = [env.get(v) for v in op.operands]
            else:  # while, reduce, sort, ...: every region, nothing known of its arguments
                for region in op.regions:
                    for inner in region.blocks:
                        yield self.block(inner, env)
        return returned

    def branches(self, op, env: dict):
        """A case (or if) enters the branch its known index picks, or all."""
        count = len(op.regions)
        index = env.get(op.operands[0])
        if index is not None and op.name == "stablehlo.if":
            index = 0 if index else 1
        if index is not None and not 0 <= index < count:
            index = count - 1  # stablehlo.case: an index out of range takes the last
        chosen = range(count) if index is None else (index,)
        for i in chosen:
            returned = yield self.block(op.regions[i].blocks[0], env)
            if index is not None:
                for result, value in zip(op.results, returned):
                    if value is not None:
                        env[result] = value


def _is_integer_scalar(t) -> bool:
    ir = _jax_internals.ir()
    try:
        ranked = ir.RankedTensorType(t)
    except (ValueError, TypeError):
        return False
    element = str(ranked.element_type)  # i1, i32, ui8, ...
    return (ranked.has_static_shape and all(d == 1 for d in ranked.shape)
            and element.lstrip("u").startswith("i") and element.lstrip("ui").isdigit())


def _scalar(constant) -> int:
    """The value of a one-element integer constant."""
    ir = _jax_internals.ir()
    return int(ir.DenseIntElementsAttr(constant.attributes["value"])[0])
