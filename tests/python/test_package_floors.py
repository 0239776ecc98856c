"""The Python package has floors (issue 30): its imports, read from the
source (nested ones too), form no cycle; JAX's internals are touched in one
module; no module takes another subpackage's private names; and the
subcommands that are Python's run in Python, never through the C command.
docs/design.md draws the same floors."""
import ast
import pathlib
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "python" / "ccshim"


def modules() -> dict[str, pathlib.Path]:
    """ccshim's modules by dotted name (a package by its own name)."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = modules()


def _package_of(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def imports(name: str):
    """(imported module, names taken from it, line) for every import in
    module `name` that lands in ccshim."""
    tree = ast.parse(MODULES[name].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES:
                    yield a.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(name).split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target not in MODULES:
                continue
            taken = []
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in MODULES:
                    yield sub, [], node.lineno  # a module, not a name of the package
                else:
                    taken.append(a.name)
            if taken:
                yield target, taken, node.lineno


def graph() -> dict[str, set[str]]:
    return {m: {t for t, _, _ in imports(m) if t != m} for m in MODULES}


def test_the_imports_form_no_cycle():
    g = graph()
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                cycles.append(sorted(scc))

    for v in sorted(g):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles in python/ccshim: {cycles}"
    # The floors: the ctypes layer imports nothing of the package but what
    # ccshim legacy carries to its children (standard library only, read
    # before the library is loaded), and the values above it import only it.
    assert g["ccshim._carried"] == set()
    assert g["ccshim._native"] <= {"ccshim._carried"}
    assert g["ccshim._core"] <= {"ccshim._native", "ccshim._args"}
    assert g["ccshim"] == {"ccshim._core"}


def test_jax_internals_are_touched_in_one_module():
    found = []
    for name, path in MODULES.items():
        if name == "ccshim._jax_internals":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            modules_named = []
            if isinstance(node, ast.Import):
                modules_named = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                modules_named = [node.module or ""]
            elif isinstance(node, ast.Attribute) and node.attr == "_src" and \
                    isinstance(node.value, ast.Name) and node.value.id == "jax":
                modules_named = ["jax._src"]
            found += [f"{name}:{node.lineno}" for m in modules_named
                      if m == "jax._src" or m.startswith("jax._src.")]
    assert not found, f"jax._src used outside ccshim._jax_internals: {found}"
    text = MODULES["ccshim._jax_internals"].read_text()
    for fn in ("ir", "mlir", "jax_ext", "core", "effects", "config", "export_module",
               "serialization", "compiler", "xla_client", "hlo"):
        assert f"``{fn}()``" in text, f"{fn}() is not in the module's table"


def test_no_module_takes_another_subpackages_private_names():
    wrong = []
    for name in MODULES:
        here = _package_of(name)
        for target, taken, line in imports(name):
            there = _package_of(target)
            if there in (here, "ccshim") or here.startswith(there + "."):
                continue  # its own package, or the root's shared floors
            if target != there or any(t.startswith("_") for t in taken):
                wrong.append(f"{name}:{line} takes {target} {taken or ''}")
    assert not wrong, wrong


@pytest.mark.parametrize("command", ["rewrite", "legacy", "port"])
def test_the_python_subcommands_of_the_console_script_never_exec_the_c_command(
        command, monkeypatch, capsys):
    from ccshim import _cli
    monkeypatch.setattr("os.execv", lambda *a: pytest.fail(f"execv{a}"))
    monkeypatch.setattr(sys, "argv", ["ccshim", command, "--help"])
    try:
        rc = _cli.main()
    except SystemExit as e:
        rc = e.code
    assert rc == 0
    assert command in capsys.readouterr().out
