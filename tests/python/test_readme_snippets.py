"""Every snippet of the README is tested: the JAX block runs as printed in
the wheel test (tests/wheel/use_wheel.py); here each command line names a
subcommand, option or make target that exists, or the wheel make wheel
writes, and each Python block compiles and names only attributes ccshim
has."""
import ast
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, re.S)


def _help(words: list[str]) -> str:
    from conftest import BUILD
    p = subprocess.run([str(BUILD / "tools" / "ccshim"), *words, "--help"], capture_output=True, text=True,
                       timeout=120)
    return p.stdout + p.stderr


def test_the_readme_is_a_front_door():
    assert len(README.split()) <= 1500
    assert {lang for lang, _ in BLOCKS} <= {"sh", "python"}


@pytest.mark.parametrize("line", [line.split("#")[0].strip() for lang, body in BLOCKS
                                  if lang == "sh" for line in body.splitlines()
                                  if line.strip()])
def test_each_command_line_names_what_exists(line):
    words = line.split()
    if words[0] == "make":
        makefile = (ROOT / "Makefile").read_text()
        assert re.search(rf"^{words[1]}:", makefile, re.M), line
        return
    if words[0] == "pip":
        # The wheel make wheel writes, by dev/wheel.py's own name for it.
        import fnmatch
        import importlib.util
        spec = importlib.util.spec_from_file_location("wheel_build", ROOT / "dev" / "wheel.py")
        build = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(build)
        names = [f"dist/{build.wheel_name(build.metadata(), arch)}" for arch in build.TRIPLETS]
        assert words[1] == "install" and len(words) == 3, line
        assert any(fnmatch.fnmatch(n, words[2]) for n in names), (words[2], names)
        return
    assert words[0] == "ccshim", line
    text = _help(words[1:2])
    for option in [w for w in words[2:] if w.startswith("-") and w != "--"]:
        assert option in text, f"{option} is not in `ccshim {words[1]} --help`"
    if words[1] == "legacy":
        from ccshim._legacy_cmd import parse
        mode, rest = parse(words[2:], "usage")  # the README's form is one the runner takes
        assert mode.strict and rest[:3] == ["python", "-m", "pytest"], (mode, rest)


@pytest.mark.parametrize("body", [body for lang, body in BLOCKS if lang == "python"])
def test_each_python_block_names_what_ccshim_has(body):
    import importlib
    tree = ast.parse(body)
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ccshim"):
                    aliases[a.asname or a.name] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in aliases:
            module = importlib.import_module(aliases[node.value.id])
            assert hasattr(module, node.attr), f"{aliases[node.value.id]}.{node.attr}"
