# Sourced by dev/setup.sh and dev/test_matrix.sh: finding a Python of a
# given version, and making this tree's python/ importable in a venv.

# A Python of version $1 (e.g. 3.12) that runs and can make venvs, or
# nothing: pyenv's install of it first (its shim on PATH may name a version
# that is not selected), then pythonX.Y on PATH.
python_of() {
  local want=$1 p
  for p in "$(pyenv root 2>/dev/null)"/versions/"$want"*/bin/python"$want" \
           "$(command -v "python$want" 2>/dev/null)"; do
    [ -n "$p" ] && [ -x "$p" ] && "$p" -c 'import venv, ensurepip' 2>/dev/null &&
      { echo "$p"; return; }
  done
}

# A .pth file in venv $1's site-packages that makes $2 (python/) importable,
# which is all an editable install does, without a build backend or the
# network; rewritten only when it names another folder.
add_source_path() {
  "$1/bin/python" - "$2" <<'PY'
import pathlib, site, sys
pth = pathlib.Path(site.getsitepackages()[0]) / "ccshim-source.pth"
if not pth.exists() or pth.read_text().strip() != sys.argv[1]:
    pth.write_text(sys.argv[1] + "\n")
PY
}
