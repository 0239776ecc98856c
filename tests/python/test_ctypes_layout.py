"""The Python package's ctypes mirrors of ccshim's C structs have the C
layout: every field's offset and size, and each struct's size, compared with
what the C compiler says of the real headers.  A field added, moved or
widened on one side only fails here, not later as a silent misread."""

import ctypes
import os
import shutil
import subprocess

import pytest

from ccshim import _native
from conftest import ROOT

# ctypes mirror -> (C type, {ctypes field: C member expression})
MIRRORS = {
    _native.WrapOptions: ("ccshim_wrap_options", {
        f: f for f in ("struct_size", "opaque_attr", "tuple_operands", "ffi_major", "ffi_minor", "traits",
                       "entry", "allow_wx", "layouts")}),
    _native.Shape: ("ccshim_shape", {
        f: f for f in ("is_tuple", "dtype", "rank", "dims", "num_children", "children",
                       "num_leaves", "first_leaf", "layout", "dim_names", "any_dims", "name",
                       "elements_name")}),
    _native.SignatureStruct: ("ccshim_signature", {
        f: f for f in ("num_operands", "operands", "result", "num_arg_leaves", "arg_leaves",
                       "num_ret_leaves", "ret_leaves", "has_tuple_operand", "num_dim_names",
                       "dim_names", "dim_operands", "is_static", "dim_elements")}),
    _native.ContextOptions: ("ccshim_context_options", {
        f: f for f in ("struct_size", "platform", "stream", "device_ordinal", "run_id", "num_threads",
                       "alloc", "free", "alloc_user")}),
    _native.Metadata: ("XLA_FFI_Metadata", {
        "struct_size": "struct_size",
        "version_struct_size": "api_version.struct_size",
        "version_extension_start": "api_version.extension_start",
        "major": "api_version.major_version",
        "minor": "api_version.minor_version",
        "traits": "traits",
        "state_type_id": "state_type_id"}),
}


# Versioned mirror -> the C macro its struct_size must equal.
STRUCT_SIZES = {
    _native.WrapOptions: "CCSHIM_WRAP_OPTIONS_STRUCT_SIZE",
    _native.ContextOptions: "CCSHIM_CONTEXT_OPTIONS_STRUCT_SIZE",
}


def c_layout(build_dir, tmp_path):
    """{(C type, member): (offset, size)} and {C type: size}, from the compiler."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.skip("no C compiler")
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "ccshim/ccshim.h"',
             "int main(void) {"]
    for ctype, fields in MIRRORS.values():
        lines.append(f'  printf("%s %zu\\n", "{ctype}", sizeof({ctype}));')
        for member in fields.values():
            lines.append(f'  printf("%s %s %zu %zu\\n", "{ctype}", "{member}", '
                         f"offsetof({ctype}, {member}), sizeof((({ctype}*)0)->{member}));")
    for macro in STRUCT_SIZES.values():
        lines.append(f'  printf("%s %zu\\n", "{macro}", (size_t)({macro}));')
    lines += ["  return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    includes = [ROOT / d / "include" for d in ("base", "core", "compat", "adapters")]
    includes.append(build_dir / "include")
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", *[f"-I{d}" for d in includes], str(src), "-o", str(exe)],
                   check=True)
    sizes, fields = {}, {}
    for line in subprocess.run([str(exe)], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            sizes[parts[0]] = int(parts[1])
        else:
            fields[(parts[0], parts[1])] = (int(parts[2]), int(parts[3]))
    return sizes, fields


def test_mirrors_have_the_c_layout(build_dir, tmp_path):
    sizes, fields = c_layout(build_dir, tmp_path)
    checked = 0
    for mirror, (ctype, members) in MIRRORS.items():
        mirrored = {name for name, *_ in mirror._fields_}
        assert mirrored == set(members), f"{mirror.__name__}: fields {sorted(mirrored)}"
        for name, member in members.items():
            want = fields[(ctype, member)]
            got = (getattr(mirror, name).offset, getattr(mirror, name).size)
            assert got == want, f"{mirror.__name__}.{name}: ctypes {got}, C {ctype}.{member} {want}"
            checked += 1
        assert ctypes.sizeof(mirror) == sizes[ctype], mirror.__name__
    assert checked == 51


def test_versioned_mirrors_set_the_c_struct_size(build_dir, tmp_path):
    sizes, _ = c_layout(build_dir, tmp_path)
    for mirror, macro in STRUCT_SIZES.items():
        assert mirror().struct_size == sizes[macro], f"{mirror.__name__} vs {macro}"
        assert mirror.struct_size_of_this_version() == sizes[macro]
