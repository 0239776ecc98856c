#!/usr/bin/env bash
# A machine where libffi.so.8 does not exist, as on RHEL 8 or Ubuntu 20.04
# (whose libffi is libffi.so.6 or .7), made inside a mount namespace of its
# own (tests/wheel/test_portable.sh starts this with unshare --mount, so
# nothing here is seen outside it):
#
# - every libffi.so.8 the loader can find is covered by an empty file, and
#   LD_LIBRARY_PATH names an empty folder;
# - Python's ctypes, which needs a libffi, gets this one's copy under another
#   name (as those machines' Pythons have theirs): its _ctypes module, patched
#   to need libffi-python.so.8 (patchelf), covers the original.
#
# There the portable wheel is installed with pip --no-index into a fresh
# venv, ldd shows that its library and command need nothing outside the
# wheel but glibc, and tests/wheel/use_wheel.py runs STEP...
#
# usage: no_libffi.sh REPO_ROOT WHEEL PYTHON WHEELHOUSE PATCHELF WORK STEP...
set -u
root=$1 wheel=$2 py=$3 wh=$4 patchelf=$5 work=$6
shift 6
fail() { echo "FAIL: $*"; exit 1; }
. "$root/tests/wheel/common.sh"

# What is covered: each libffi.so.8 in the loader's cache and its folders.
mapfile -t libffi < <({ ldconfig -p | awk '$1 == "libffi.so.8" {print $NF}'
                        ls /lib*/libffi.so.8* /usr/lib*/libffi.so.8* \
                           /lib*/*-linux-gnu/libffi.so.8* /usr/lib*/*-linux-gnu/libffi.so.8* \
                           /usr/local/lib*/libffi.so.8* 2>/dev/null; } |
                      xargs -r readlink -f | sort -u)
[ ${#libffi[@]} -gt 0 ] || echo "(no libffi.so.8 on this machine to begin with)"
ctypes_so=$("$py" -c 'import _ctypes; print(_ctypes.__file__)') ||
  fail "$py cannot import _ctypes to begin with"
mkdir -p "$work/python-libffi" "$work/nothing" && : >"$work/empty" || fail "cannot write $work"
if ldd "$ctypes_so" | grep -q 'libffi\.so\.8'; then
  src=$(ldd "$ctypes_so" | awk '/libffi\.so\.8/ {print $3}')
  cp "$src" "$work/python-libffi/libffi-python.so.8" &&
    "$patchelf" --set-soname libffi-python.so.8 "$work/python-libffi/libffi-python.so.8" &&
    cp "$ctypes_so" "$work/python-libffi/_ctypes.so" &&
    "$patchelf" --replace-needed libffi.so.8 libffi-python.so.8 \
      --set-rpath "$work/python-libffi" "$work/python-libffi/_ctypes.so" &&
    mount --bind "$work/python-libffi/_ctypes.so" "$ctypes_so" ||
    fail "could not give Python's _ctypes a libffi of its own"
fi
for lib in "${libffi[@]}"; do
  mount --bind "$work/empty" "$lib" || fail "could not cover $lib"
  echo "covered: $lib"
done
export LD_LIBRARY_PATH=$work/nothing
# The premise, checked: libffi.so.8 does not load, Python's ctypes does.
"$py" -c 'import ctypes' || fail "ctypes does not import here"
if "$py" -c 'import ctypes; ctypes.CDLL("libffi.so.8")' 2>/dev/null; then
  fail "libffi.so.8 still loads here"
fi
echo "libffi.so.8 does not load here; Python's ctypes does, with its own libffi"

install_wheel "$work" "$py" "$wh" "$wheel" || fail "a venv with the wheel installed"
echo "pip install --no-index $(basename "$wheel"): installed"
package=$("$work/venv/bin/python" -c 'import ccshim, os; print(os.path.dirname(ccshim.__file__))') ||
  fail "import ccshim"
for elf in "$package/lib/libccshim.so" "$package/bin/ccshim"; do
  out=$(ldd "$elf" 2>&1) || fail "ldd $elf: $out"
  if grep -qE 'not found|libffi\.so' <<<"$out"; then
    echo "$out"
    fail "$elf needs what is not here, or libffi"
  fi
done
echo "ldd: libccshim.so and the ccshim command need nothing here but glibc and the wheel"
cd "$work" && "$work/venv/bin/python" "$root/tests/wheel/use_wheel.py" "$root" "$@"
