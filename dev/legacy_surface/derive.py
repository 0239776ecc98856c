"""Derives the legacy surface of JAX from its released packages: every
public name, in the module families a legacy custom-call extension and its
tests touch, that a release of jax or jaxlib had and a later one dropped.

Run by hand (not by `make test`): it downloads jax releases (small) and a
few jaxlib wheels (50-150 MB each, only their Python files are kept) with
pip into the per-user cache ($CCSHIM_CACHE, else ~/.cache/ccshim), under
jax-history/, and reads each module's names with `ast` (nothing is
imported).  It writes dev/legacy_surface/surface.json; render.py turns that
and ccshim.legacy's tables into docs/legacy-surface.md.

    python3 dev/legacy_surface/derive.py [--changelog CHANGELOG.md --changelog-from WHERE]

Releases: a spread of jax releases (the first and last of each minor from
0.2.0 on), then, for each name whose presence changes between two sampled
releases, a binary search over the releases between them, so that the
release named is the first without the name.  jaxlib: PyPI keeps jaxlib
wheels from 0.4.13 on only, so jaxlib.xla_client's names are read from
0.4.13 on (what it had before is what 0.4.13 still had, plus what an older
jaxlib dropped, which this cannot see).  --changelog: JAX's CHANGELOG.md
(from the jax repository), whose first line naming each removed name is
kept beside it.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "surface.json"

# The families, and the modules of each: public modules whose names a
# legacy extension's registration, lowering, rules and tests use.
FAMILIES = {
    "registration": ("jax.lib", "jax.lib.xla_client", "jax.ffi", "jax.extend.ffi",
                     "jaxlib.xla_client"),
    "lowering": ("jax.interpreters.mlir", "jax.interpreters.xla", "jaxlib.hlo_helpers",
                 "jaxlib.mhlo_helpers"),
    "primitives": ("jax.core", "jax.abstract_arrays", "jax.interpreters.ad",
                   "jax.interpreters.batching", "jax.extend.core", "jax.linear_util"),
    "test-config": ("jax.config", "jax.test_util", "jax.experimental", "jax.lib.xla_bridge"),
}

# Every jax release on PyPI from 0.2.0, oldest first (pip index versions jax).
JAX_RELEASES = """
0.2.0 0.2.1 0.2.2 0.2.3 0.2.4 0.2.5 0.2.6 0.2.7 0.2.8 0.2.9 0.2.10 0.2.11 0.2.12 0.2.13
0.2.14 0.2.15 0.2.16 0.2.17 0.2.18 0.2.19 0.2.20 0.2.21 0.2.22 0.2.24 0.2.25 0.2.26 0.2.27
0.2.28 0.3.0 0.3.1 0.3.2 0.3.3 0.3.4 0.3.5 0.3.6 0.3.7 0.3.8 0.3.9 0.3.10 0.3.11 0.3.12
0.3.13 0.3.14 0.3.15 0.3.16 0.3.17 0.3.19 0.3.20 0.3.21 0.3.22 0.3.23 0.3.24 0.3.25 0.4.1
0.4.2 0.4.3 0.4.4 0.4.5 0.4.6 0.4.7 0.4.8 0.4.9 0.4.10 0.4.11 0.4.12 0.4.13 0.4.14 0.4.16
0.4.17 0.4.18 0.4.19 0.4.20 0.4.21 0.4.22 0.4.23 0.4.24 0.4.25 0.4.26 0.4.27 0.4.28 0.4.29
0.4.30 0.4.31 0.4.33 0.4.34 0.4.35 0.4.36 0.4.37 0.4.38 0.5.0 0.5.1 0.5.2 0.5.3 0.6.0 0.6.1
0.6.2 0.7.0 0.7.1 0.7.2 0.8.0 0.8.1 0.8.2 0.8.3 0.9.0 0.9.0.1 0.9.1 0.9.2 0.10.0 0.10.1
0.10.2 0.11.0 0.11.1 0.11.2 0.12.0 0.12.0.1
""".split()

# Every jaxlib release on PyPI (from 0.4.13: the older ones are gone from it).
JAXLIB_RELEASES = """
0.4.13 0.4.18 0.4.19 0.4.20 0.4.21 0.4.22 0.4.23 0.4.24 0.4.25 0.4.26 0.4.27 0.4.28 0.4.29
0.4.30 0.4.31 0.4.33 0.4.34 0.4.35 0.4.36 0.4.38 0.5.0 0.5.1 0.5.3 0.6.0 0.6.1 0.6.2 0.7.0
0.7.1 0.7.2 0.8.0 0.8.1 0.8.2 0.8.3 0.9.0 0.9.0.1 0.9.1 0.9.2 0.10.0 0.10.1 0.10.2 0.11.0
0.11.1 0.11.2 0.12.0 0.12.0.1
""".split()

PYTHONS = ("3.11", "3.12", "3.13", "3.9", "3.8", "3.10", "3.14")
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64",
             "manylinux_2_28_x86_64", "manylinux2010_x86_64")


def cache_dir() -> Path:
    root = os.environ.get("CCSHIM_CACHE") or Path.home() / ".cache" / "ccshim"
    return Path(root) / "jax-history"


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


# ---------------------------------------------------------------- packages

def _pip_download(spec: str, dest: Path, binary_only: bool) -> Path:
    """One release's distribution file, downloaded by pip (wheel first)."""
    dest.mkdir(parents=True, exist_ok=True)
    tries = []
    for python in PYTHONS:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dest),
               "--only-binary=:all:", "--python-version", python]
        for platform in PLATFORMS:
            cmd += ["--platform", platform]
        tries.append(cmd + [spec])
    if not binary_only:
        tries.append([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                      "--no-binary=:all:", "-d", str(dest), spec])
    for cmd in tries:
        if subprocess.run(cmd, capture_output=True).returncode == 0:
            name, version = spec.split("==")
            for f in dest.iterdir():
                if f.name.startswith(f"{name}-{version}") and f.suffix in (".whl", ".gz"):
                    return f
    raise RuntimeError(f"derive: pip could not download {spec} (tried Pythons "
                       f"{', '.join(PYTHONS)}{'' if binary_only else ' and the sdist'})")


def sources(package: str, version: str) -> dict[str, str]:
    """The package's Python files of one release, path -> text, kept in the
    cache (the distribution itself is deleted once read)."""
    kept = cache_dir() / f"{package}-{version}.json"
    if kept.exists():
        return json.loads(kept.read_text())
    tmp = cache_dir() / "download" / f"{package}-{version}"
    dist = _pip_download(f"{package}=={version}", tmp, binary_only=package == "jaxlib")
    files: dict[str, str] = {}
    if dist.suffix == ".whl":
        with zipfile.ZipFile(dist) as z:
            for member in z.namelist():
                if member.startswith(f"{package}/") and member.endswith(".py") \
                        and "/mlir/" not in member:
                    files[member] = z.read(member).decode("utf-8", "replace")
    else:
        with tarfile.open(dist) as t:
            for member in t.getmembers():
                path = member.name.split("/", 1)[-1]
                if path.startswith(f"{package}/") and path.endswith(".py") and member.isfile():
                    files[path] = t.extractfile(member).read().decode("utf-8", "replace")
    dist.unlink()
    kept.write_text(json.dumps(files))
    return files


# ------------------------------------------------------------------ names

def _module_path(files: dict[str, str], module: str) -> str | None:
    base = module.replace(".", "/")
    for path in (f"{base}.py", f"{base}/__init__.py"):
        if path in files:
            return path
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _deprecations(node: ast.stmt) -> dict[str, bool] | None:
    """A `_deprecations = {name: (message, value)}` table: name -> whether
    the name still gives a value (False: its value is None, an error)."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "_deprecations" and isinstance(node.value, ast.Dict)):
        return None
    table = {}
    for key, value in zip(node.value.keys, node.value.values):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            alive = not (isinstance(value, ast.Tuple) and len(value.elts) == 2
                         and isinstance(value.elts[1], ast.Constant)
                         and value.elts[1].value is None)
            table[key.value] = alive
    return table


def names_of(files: dict[str, str], module: str, depth: int = 0) -> dict[str, str] | None:
    """The public names a module of one release gives: name -> "" or
    "deprecated" (still given, with a warning); None: no such module."""
    path = _module_path(files, module)
    if path is None:
        return None
    try:
        tree = ast.parse(files[path])
    except SyntaxError:
        return None
    names: dict[str, str] = {}

    def visit(body):
        for node in body:
            if isinstance(node, ast.If):
                visit(node.orelse if _is_type_checking(node.test) else node.body + node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body + node.orelse + node.finalbody
                      + [s for h in node.handlers for s in h.body])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names[node.name] = ""
            elif isinstance(node, ast.Assign):
                table = _deprecations(node)
                if table is not None:
                    for name, alive in table.items():
                        if alive:
                            names[name] = "deprecated"
                        else:
                            names.pop(name, None)
                for target in node.targets:
                    for t in ast.walk(target):
                        if isinstance(t, ast.Name):
                            names[t.id] = ""
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names[node.target.id] = ""
            elif isinstance(node, ast.Import):
                # `import jax._src.x as x` gives a name; `import numpy as np` is
                # the module's own helper, not JAX's API
                for alias in node.names:
                    if alias.asname and _ours(alias.name):
                        names[alias.asname] = ""
            elif isinstance(node, ast.ImportFrom):
                if not (node.level or _ours(node.module or "")):
                    continue  # from typing import Callable: a helper
                for alias in node.names:
                    if alias.name == "*":
                        source = _absolute(module, path, node)
                        if source and depth < 3:
                            names.update(names_of(files, source, depth + 1) or {})
                    else:
                        names[alias.asname or alias.name] = ""
            elif isinstance(node, ast.Delete):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        names.pop(target.id, None)
    visit(tree.body)
    return {n: how for n, how in names.items() if not n.startswith("_")}


def _ours(module: str) -> bool:
    return module.split(".")[0] in ("jax", "jaxlib")


def _absolute(module: str, path: str, node: ast.ImportFrom) -> str | None:
    if not node.level:
        return node.module
    package = module.split(".") if path.endswith("__init__.py") else module.split(".")[:-1]
    package = package[:len(package) - node.level + 1]
    return ".".join(package + ([node.module] if node.module else []))


# --------------------------------------------------------------- history

class History:
    """Names of one package's tracked modules, release by release (read
    lazily, each release once)."""

    def __init__(self, package: str, releases: list[str], modules: list[str]):
        self.package, self.releases, self.modules = package, releases, modules
        self._seen: dict[str, dict[str, dict[str, str] | None]] = {}

    def at(self, version: str) -> dict[str, dict[str, str] | None]:
        if version not in self._seen:
            print(f"derive: reading {self.package} {version}", file=sys.stderr)
            files = sources(self.package, version)
            self._seen[version] = {m: names_of(files, m) for m in self.modules}
        return self._seen[version]

    def state(self, version: str, module: str, name: str | None) -> str | None:
        """None: absent; "" present; "deprecated"; for a module (name None):
        "" or None."""
        names = self.at(version)[module]
        if name is None:
            return None if names is None else ""
        return None if names is None else names.get(name)

    def boundary(self, lo: int, hi: int, module: str, name: str | None) -> int:
        """Index of the first release after lo (where the item is present)
        up to hi (where it is absent) without it: binary search."""
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.state(self.releases[mid], module, name) is None:
                hi = mid
            else:
                lo = mid
        return hi


def sampled(releases: list[str]) -> list[int]:
    """Indices of the first and last release of each minor."""
    picks: dict[tuple[int, ...], list[int]] = {}
    for i, v in enumerate(releases):
        picks.setdefault(version_key(v)[:2], []).append(i)
    return sorted({i for group in picks.values() for i in (group[0], group[-1])})


def removals(history: History) -> list[dict]:
    """Each name (and module) of the tracked modules that a sampled release
    had and the newest release lacks, with the first release without it,
    found by binary search between the last sampled release with it and the
    first sampled one without; and the first release that deprecated it."""
    picks = sampled(history.releases)
    newest = len(history.releases) - 1
    found = []
    items: set[tuple[str, str | None]] = set()
    for i in picks:
        for module, names in history.at(history.releases[i]).items():
            if names is not None:
                items.add((module, None))
                items.update((module, n) for n in names)
    for module, name in sorted(items, key=lambda x: (x[0], x[1] or "")):
        if name is not None and f"{module}.{name}" in history.modules:
            continue  # a submodule's name on its parent: the module's own row
        if history.state(history.releases[newest], module, name) is not None:
            continue
        present = [i for i in picks if history.state(history.releases[i], module, name)
                   is not None]
        last = present[-1]
        first_absent = next(i for i in picks if i > last)
        removed = history.boundary(last, first_absent, module, name)
        deprecated = next((history.releases[i] for i in picks if i <= last and
                           history.state(history.releases[i], module, name) == "deprecated"),
                          None)
        if deprecated is not None:  # the first, to the release: search back
            j = history.releases.index(deprecated)
            while j > 0 and history.state(history.releases[j - 1], module, name) == "deprecated":
                j -= 1
            deprecated = history.releases[j]
        found.append({"name": f"{module}.{name}" if name else module,
                      "kind": "name" if name else "module", "module": module,
                      "package": history.package, "deprecated": deprecated,
                      "last_with": history.releases[removed - 1],
                      "removed": history.releases[removed]})
    return found


def changelog_lines(path: Path | None, entries: list[dict]) -> None:
    """The first line of JAX's CHANGELOG.md (newest first) that names each
    entry (whole, or its last two components, in backquotes) beside the word
    removed, and the release it is under, kept as "changelog"."""
    if path is None:
        return
    lines, release = [], ""
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            release = line[3:].split("(")[0].strip()
        lines.append((release, line.strip()))
    for entry in entries:
        parts = entry["name"].split(".")
        keys = [f"`{entry['name']}`", f"`{'.'.join(parts[-2:])}`"]
        entry["changelog"] = next((f"{rel}: {ln}" for rel, ln in lines
                                   if any(k in ln for k in keys) and "remov" in ln.lower()),
                                  None)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changelog", type=Path, help="JAX's CHANGELOG.md")
    parser.add_argument("--changelog-from", default=None,
                        help="where that CHANGELOG.md came from (kept in the data)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    cache_dir().mkdir(parents=True, exist_ok=True)
    family_of = {m: f for f, modules in FAMILIES.items() for m in modules}
    jax_modules = [m for m in family_of if m.startswith("jax.")]
    jaxlib_modules = [m for m in family_of if m.startswith("jaxlib.")]
    entries = removals(History("jax", JAX_RELEASES, jax_modules)) + \
        removals(History("jaxlib", JAXLIB_RELEASES, jaxlib_modules))
    for entry in entries:
        entry["family"] = family_of[entry["module"]]
    changelog_lines(args.changelog, entries)
    data = {"derived_by": "dev/legacy_surface/derive.py",
            "jax_releases": [JAX_RELEASES[0], JAX_RELEASES[-1]],
            "jaxlib_releases": [JAXLIB_RELEASES[0], JAXLIB_RELEASES[-1]],
            "changelog_from": args.changelog_from if args.changelog else None,
            "families": {f: list(m) for f, m in FAMILIES.items()},
            "removed": sorted(entries, key=lambda e: (e["family"], e["name"]))}
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"derive: {len(entries)} removed names and modules -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
