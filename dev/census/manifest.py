"""The census's manifest: one TOML file a project in dev/census/projects/,
read and checked here (dev/census/README.md says what each key means).

Standard library only (tomllib: Python 3.11 on): it is read by the census
runner, by tests/python/project_suites.py in every venv a project's suite
runs in, old JAX releases' included, and by make test's own tests.
"""

from __future__ import annotations

import pathlib
import tomllib

HERE = pathlib.Path(__file__).resolve().parent
PROJECTS = HERE / "projects"

STATUSES = ("runs", "gpu-only", "not-run")
# The keys a project's file may have, with their types; those without a
# default must be there.
_KEYS = {
    "name": str, "version": str, "released": str, "repository": str, "platforms": list,
    "forms": str, "found_by": list, "status": str, "why": str, "quick": bool,
    "quick_ranks": list,
    "requires": list, "ranks": list, "targets": list, "reaching": str, "stopped_from": str,
    "package": dict, "suite": dict, "reference": dict, "runs": list, "files": list,
    "build": dict, "lost": list, "gpu": dict, "pypi": str, "scan": str, "license": str,
    "published": str, "port": dict,
}
_REQUIRED = ("name", "version", "released", "platforms", "forms", "found_by", "status")
_NEEDED_TO_RUN = ("package", "suite", "reference", "runs")


class ManifestError(ValueError):
    """A project's file that does not say what the census needs."""


def _check(data: dict, path: pathlib.Path) -> dict:
    where = path.relative_to(HERE.parents[1]) if HERE.parents[1] in path.parents else path
    for key, value in data.items():
        if key not in _KEYS:
            raise ManifestError(f"{where}: unknown key {key!r}; expected one of "
                                f"{', '.join(sorted(_KEYS))}")
        if not isinstance(value, _KEYS[key]):
            raise ManifestError(f"{where}: {key} is {type(value).__name__}, expected "
                                f"{_KEYS[key].__name__}")
    missing = [k for k in _REQUIRED if k not in data]
    if data.get("status") == "runs":
        missing += [k for k in _NEEDED_TO_RUN if k not in data]
    elif "why" not in data:
        missing.append("why (a project the census does not run says why)")
    if missing:
        raise ManifestError(f"{where}: lacks {', '.join(missing)}")
    if data.get("published", "pypi") not in ("pypi", "repository"):
        raise ManifestError(f"{where}: published {data['published']!r}; expected pypi (the "
                            "default) or repository (never released on PyPI)")
    if data["status"] not in STATUSES:
        raise ManifestError(f"{where}: status {data['status']!r}; expected one of "
                            f"{', '.join(STATUSES)}")
    if path.stem != data["name"]:
        raise ManifestError(f"{where}: the file of {data['name']!r} is named {path.name}")
    for f in data.get("files", []):
        for k in ("file", "sha256", "folder"):
            if k not in f:
                raise ManifestError(f"{where}: a [[files]] entry lacks {k}: {f}")
        if len(f["sha256"]) != 64:
            raise ManifestError(f"{where}: {f['file']}'s sha256 is not 64 hex digits")
    for run in data.get("runs", []):
        if "jax" not in run or not ("venv" in run or "python" in run):
            raise ManifestError(f"{where}: a [[runs]] entry needs jax and venv or python: {run}")
    git = data.get("suite", {}).get("git")
    if isinstance(git, dict):
        lacking = [k for k in ("repository", "commit", "path", "tree") if k not in git]
        if lacking:
            raise ManifestError(f"{where}: [suite] git lacks {', '.join(lacking)}")
    return data


def load(path: pathlib.Path) -> dict:
    with open(path, "rb") as f:
        try:
            data = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ManifestError(f"{path}: not TOML: {e}") from None
    data = _check(data, path)
    data["key"] = f"{data['name']}-{data['version']}"
    return data


def projects() -> dict[str, dict]:
    """Every project of the census, by key ("celerite2-0.3.2"), in name order."""
    found = {}
    for path in sorted(PROJECTS.glob("*.toml")):
        data = load(path)
        found[data["key"]] = data
    return found


def jax_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3])
