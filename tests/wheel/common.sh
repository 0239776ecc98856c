# shellcheck shell=bash
# Sourced by tests/wheel/test_portable.sh, no_libffi.sh and test_wheel.sh:
#
#   install_wheel DIR PYTHON WHEELHOUSE WHEEL
#                        a venv DIR/venv of PYTHON, the wheel and the
#                        wheelhouse's requirements installed into it with no
#                        index and no bytecode; pip's log in DIR/pip.log, its
#                        end printed when it fails (1)
#   as_a_user COMMAND... COMMAND with no CCSHIM_* variable and no PYTHONPATH
#                        (in a subshell: the caller's are kept)

install_wheel() {
  local dir=$1 py=$2 wh=$3 wheel=$4
  mkdir -p "$dir" && "$py" -m venv "$dir/venv" || { echo "$py -m venv failed"; return 1; }
  if ! "$dir/venv/bin/python" -m pip --isolated install -q --no-index --no-compile \
       --find-links "$wh" "$wheel" -r "$wh/requirements.txt" >"$dir/pip.log" 2>&1; then
    tail -n 20 "$dir/pip.log"
    return 1
  fi
}

as_a_user() (
  for v in $(compgen -e | grep '^CCSHIM_'); do unset "$v"; done
  exec env -u PYTHONPATH "$@"
)
