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
import sys
from collections.abc import Callable, Mapping
from typing import Any


class ModuleError(ValueError):
    """A module or attribute that is not there, or not kernels."""


def load_module(name_or_path: str):
    """Imports a module by name, or loads it from a .py or extension path
    (under its own file name, beside whatever else is imported).  A module
    loaded from a path is kept in sys.modules, as an import keeps it: its
    kernels may look up its globals while they run, long after this call."""
    path = pathlib.Path(name_or_path)
    try:
        if path.suffix in (".so", ".py", ".pyd") or os.sep in name_or_path:
            if not path.exists():
                raise ModuleError(f"{path} does not exist")
            name = path.name.split(".")[0]
            resolved = path.resolve()
            for key in (name, f"{name}@{resolved}"):  # loaded already: the same module
                known = getattr(sys.modules.get(key), "__file__", None)
                if known and pathlib.Path(known).resolve() == resolved:
                    return sys.modules[key]
            if path.suffix == ".py":
                loader = importlib.machinery.SourceFileLoader(name, str(path))
            else:
                loader = importlib.machinery.ExtensionFileLoader(name, str(path))
            spec = importlib.util.spec_from_file_location(name, path, loader=loader)
            module = importlib.util.module_from_spec(spec)
            # Under its own name unless that is another module's.
            key = name if name not in sys.modules else f"{name}@{resolved}"
            sys.modules[key] = module
            try:
                loader.exec_module(module)
            except BaseException:
                del sys.modules[key]
                raise
            return module
        return importlib.import_module(name_or_path)
    except ModuleError:
        raise
    except Exception as e:  # ImportError, or whatever the module raised
        first = (str(e).strip() or type(e).__name__).splitlines()[0][:300]
        raise ModuleError(f"cannot import {name_or_path}: {first}") from None


def offered(spec: str, init: str | None = None, *,
            run_init: bool = True) -> tuple[Any, str, Callable[[], Any] | None]:
    """What MODULE[:ATTR] offers, the attribute's name (ATTR, default
    registrations; called when it is a function) and MODULE.init, which is
    called first unless run_init is false (conform calls it in its child
    processes, where it cannot end or hang the command)."""
    module_name, _, attr = spec.partition(":")
    if not module_name:
        raise ModuleError(f"{spec!r}: expected MODULE[:ATTR]")
    module = load_module(module_name)
    init_fn = None
    if init:
        init_fn = getattr(module, init, None)
        if not callable(init_fn):
            raise ModuleError(f"--init {init}: {module_name} has no function of that name")
        if run_init:
            init_fn()
    attr = attr or "registrations"
    if not hasattr(module, attr):
        raise ModuleError(f"{spec!r}: {module_name} has no attribute {attr!r}")
    value = getattr(module, attr)
    if callable(value) and not isinstance(value, Mapping) and not is_kernel(value):
        value = value()
    return value, attr, init_fn


def is_kernel(value: Any) -> bool:
    """A capsule or a ctypes function: something that holds a kernel's address."""
    import ctypes
    return type(value).__name__ == "PyCapsule" or isinstance(value, ctypes._CFuncPtr)


def registrations(spec: str, init: str | None = None) -> Mapping:
    """A module's mapping of target name to kernel (MODULE[:ATTR])."""
    value, attr, _ = offered(spec, init)
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
    from ._core import parse_platform
    want = parse_platform(platform)[0]
    for where, entry_name, kernel, _ in entries(mapping):
        if entry_name == name and (where is None or parse_platform(where)[0] == want):
            return kernel
    return None
