"""The setup.py edit of a Cython port (python/ccshim/port/_cython_setup.py,
libcst): each handler source after its .pyx in the sources that name it,
XLA's headers given after cythonize, `import os` and `import sys` where the
file lacks them; the file's comments and layout kept.  veros's and mpi4jax's
setup.py are edited the same way in their kept patches (test_port.py,
test_port_mpi4jax.py)."""
import sys
import types

from conftest import ROOT

sys.path.insert(0, str(ROOT / "python"))
from ccshim.port._cython_setup import setup_py  # noqa: E402

SETUP = '''\
"""A Cython build."""
from setuptools import Extension, setup  # the build
from Cython.Build import cythonize


def extensions():
  exts = [
    Extension("pkg.k", ["pkg/k.pyx"]),  # CPU kernels
    Extension("pkg.g", sources=['pkg/g.pyx', "pkg/g_kernels.cu"]),
  ]
  # made by Cython
  exts = cythonize(exts)
  return exts


setup(ext_modules=extensions())
'''

WANT = '''\
"""A Cython build."""
import os
import sys
from setuptools import Extension, setup  # the build
from Cython.Build import cythonize


def extensions():
  exts = [
    Extension("pkg.k", ["pkg/k.pyx", "pkg/k_ffi.cpp"]),  # CPU kernels
    Extension("pkg.g", sources=['pkg/g.pyx', 'pkg/g_ffi.cpp', "pkg/g_kernels.cu"]),
  ]
  # made by Cython
  exts = cythonize(exts)

  # XLA's FFI headers, as jaxlib ships them, for the typed XLA FFI handlers
  # compiled beside the Cython kernels (k_ffi.cpp, g_ffi.cpp).
  from jax import ffi as jax_ffi

  handlers = ("k_ffi.cpp", "g_ffi.cpp")
  for ext in exts:
    if any(os.path.basename(source) in handlers for source in ext.sources):
      ext.include_dirs.append(jax_ffi.include_dir())
  return exts


setup(ext_modules=extensions())
'''


def _exts(tmp_path, *names):
    return [types.SimpleNamespace(path=tmp_path / "pkg" / f"{n}.pyx", stem=n) for n in names]


def test_handler_sources_and_headers_are_added_with_the_files_layout_kept(tmp_path):
    (tmp_path / "setup.py").write_text(SETUP)
    problems = []
    assert setup_py(tmp_path, _exts(tmp_path, "k", "g"), problems) == WANT
    assert problems == []


def test_a_pyx_not_named_in_a_list_of_sources_is_said_and_the_build_left(tmp_path):
    (tmp_path / "setup.py").write_text(SETUP.replace('["pkg/k.pyx"]', 'sources="pkg/k.pyx"'))
    problems = []
    assert setup_py(tmp_path, _exts(tmp_path, "k"), problems) is None
    assert [(p.where, p.why) for p in problems] == [(
        "setup.py:1", "no Extension here names pkg/k.pyx: its build is not ported (add "
        "k_ffi.cpp to its sources)")]


def test_modules_named_by_a_comprehension_get_their_source_after_cythonize(tmp_path):
    (tmp_path / "setup.py").write_text(
        "import os, sys\nfrom Cython.Build import cythonize\n\n"
        "exts = [Extension(f'pkg.{mod}', sources=[f'pkg/{mod}.pyx'])\n"
        "        for mod in ('k', 'other')]\nexts = cythonize(exts)\n")
    problems = []
    text = setup_py(tmp_path, _exts(tmp_path, "k"), problems)
    assert problems == [] and text.startswith("import os, sys\nfrom Cython"), text
    assert "    # The handlers' source joins the module's (named by a comprehension).\n" \
        "    for source in list(ext.sources):\n" in text
    assert '        if stem in ("k",):\n' in text
