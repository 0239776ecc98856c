"""What each capsule of an extension module answers to XLA's metadata query
(ccshim's embedded runtime sends it as XLA does at registration): a typed
FFI handler gives its API version; a legacy kernel could not answer.

    python capsule_metadata_program.py TREE DOTTED.MODULE DICT_NAME

loads DOTTED.MODULE from the built TREE (its parent packages not run) and
prints one line per capsule of its dict DICT_NAME: name, status, major,
minor."""
import ctypes
import sys

from project_modules import load_package_module
from ccshim._native import Metadata, lib

get = ctypes.pythonapi.PyCapsule_GetPointer
get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
module = load_package_module(sys.argv[1], sys.argv[2])
for name, capsule in sorted(getattr(module, sys.argv[3]).items()):
    md = Metadata()
    status = lib.ccshim_query_metadata(
        ctypes.c_void_p(get(capsule, b"xla._CUSTOM_CALL_TARGET")), ctypes.byref(md))
    print(name, status, md.major, md.minor)
