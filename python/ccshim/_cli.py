"""The ``ccshim`` console script of a pip installation.  ``ccshim rewrite``,
``ccshim legacy`` and ``ccshim port`` are Python's own business and run here; the other
subcommands are the C command installed in the package's bin/ folder, run
with the same arguments (and told to start this Python where it needs one:
``scan``'s artifacts, ``conform``'s sides in Python)."""

import os
import sys

# The subcommands that are Python's: run here, never through the C command.
_IN_PYTHON = {"rewrite": "ccshim.export", "legacy": "ccshim._legacy_cmd",
              "port": "ccshim.port"}


def main() -> int:
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command in _IN_PYTHON:
        import importlib
        return importlib.import_module(_IN_PYTHON[command]).main(sys.argv[2:])
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "ccshim")
    if not os.access(exe, os.X_OK):
        print(f"ccshim: the command is not installed at {exe}; this ccshim runs from a "
              "source tree (use build/tools/ccshim there)", file=sys.stderr)
        return 2
    os.environ.setdefault("CCSHIM_PYTHON", sys.executable)
    os.execv(exe, [exe, *sys.argv[1:]])
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main())
