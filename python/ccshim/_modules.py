"""Kernels as projects ship them: a Python module (by name, or by the path
of its .py or extension .so) and what it offers, its registrations()
mapping or a capsule attribute.  For ``ccshim rewrite --kernels`` and
``ccshim conform --python``."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import pathlib
from collections.abc import Mapping
from typing import Any


class ModuleError(ValueError):
    """A module or attribute that is not there, or not kernels."""


def load_module(name_or_path: str):
    """Imports a module by name, or loads it from a .py or extension path
    (under its own file name, beside whatever else is imported)."""
    path = pathlib.Path(name_or_path)
    try:
        if path.suffix in (".so", ".py", ".pyd") or os.sep in name_or_path:
            if not path.exists():
                raise ModuleError(f"{path} does not exist")
            name = path.name.split(".")[0]
            if path.suffix == ".py":
                loader = importlib.machinery.SourceFileLoader(name, str(path))
            else:
                loader = importlib.machinery.ExtensionFileLoader(name, str(path))
            spec = importlib.util.spec_from_file_location(name, path, loader=loader)
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            return module
        return importlib.import_module(name_or_path)
    except ModuleError:
        raise
    except Exception as e:  # ImportError, or whatever the module raised
        first = (str(e).strip() or type(e).__name__).splitlines()[0][:300]
        raise ModuleError(f"cannot import {name_or_path}: {first}") from None


def offered(spec: str, init: str | None = None) -> tuple[Any, str]:
    """What MODULE[:ATTR] offers, and the attribute's name: ATTR (default
    registrations), called when it is a function, after MODULE.init()."""
    module_name, _, attr = spec.partition(":")
    if not module_name:
        raise ModuleError(f"{spec!r}: expected MODULE[:ATTR]")
    module = load_module(module_name)
    if init:
        fn = getattr(module, init, None)
        if not callable(fn):
            raise ModuleError(f"--init {init}: {module_name} has no function of that name")
        fn()
    attr = attr or "registrations"
    if not hasattr(module, attr):
        raise ModuleError(f"{spec!r}: {module_name} has no attribute {attr!r}")
    value = getattr(module, attr)
    if callable(value) and not isinstance(value, Mapping) and not _is_kernel(value):
        value = value()
    return value, attr


def _is_kernel(value: Any) -> bool:
    import ctypes
    return type(value).__name__ == "PyCapsule" or isinstance(value, ctypes._CFuncPtr)


def registrations(spec: str, init: str | None = None) -> Mapping:
    """A module's mapping of target name to kernel (MODULE[:ATTR])."""
    value, attr = offered(spec, init)
    if not isinstance(value, Mapping):
        raise ModuleError(f"{spec!r}: {attr} gave {type(value).__name__}; expected a mapping "
                          "of target name to capsule")
    return value


def entries(registrations: Mapping) -> list[tuple[str | None, str, Any, bool]]:
    """(platform, name, kernel, is typed) for every entry of a legacy
    extension's registrations(), in either shape jaxlib has used:

    * {name: capsule}, old jaxlib and most third-party extensions (platform
      None: the mapping does not say): an entry is typed when its value is a
      dict of stage handlers or, by jaxlib's own convention (which its
      lapack.py applied), when its name ends in "_ffi";
    * {platform: [(name, capsule, api_version), ...]}, jaxlib from 0.4.31:
      api_version 0 is legacy, 1 typed, as register_ffi_target reads it.
    """
    from . import _args
    out = []
    for key, value in registrations.items():
        if isinstance(value, (list, tuple)) and all(
                isinstance(e, (list, tuple)) and len(e) == 3 for e in value):
            for name, kernel, version in value:
                if isinstance(version, bool) or not isinstance(version, int) or version < 0:
                    raise ValueError(f"registrations()[{key!r}]: {name!r} has api_version "
                                     f"{version!r}; expected 0 (legacy) or 1 (typed FFI)")
                _args.text("registrations() name", name)
                out.append((key, name, kernel, version >= 1 or isinstance(kernel, Mapping)))
        else:
            _args.text("registrations() name", key)
            out.append((None, key, value, isinstance(value, Mapping) or key.endswith("_ffi")))
    return out


def entry(mapping: Mapping, name: str, platform: str = "cpu") -> Any:
    """The kernel registered under ``name`` for ``platform`` in a
    registrations() mapping of either shape (``entries``), or None."""
    from . import parse_platform
    want = parse_platform(platform)[0]
    for where, entry_name, kernel, _ in entries(mapping):
        if entry_name == name and (where is None or parse_platform(where)[0] == want):
            return kernel
    return None
