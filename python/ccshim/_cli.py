"""The ``ccshim`` console script of a pip installation: runs the ccshim
command installed in the package's bin/ folder with the same arguments
(and, for the subcommands that run Python, this Python); ``ccshim legacy``
runs here, in Python."""

import os
import sys


def main() -> int:
    if sys.argv[1:2] == ["legacy"]:
        # Python's own business: no need of the C command to run it.
        from ._legacy_cmd import main as legacy
        return legacy(sys.argv[2:])
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "ccshim")
    if not os.access(exe, os.X_OK):
        print(f"ccshim: the command is not installed at {exe}; this ccshim runs from a "
              "source tree (use build/tools/ccshim there)", file=sys.stderr)
        return 2
    # `ccshim rewrite` runs Python again: this one, which has ccshim.
    os.environ.setdefault("CCSHIM_PYTHON", sys.executable)
    os.execv(exe, [exe, *sys.argv[1:]])
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main())
