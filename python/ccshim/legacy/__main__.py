"""``python -m ccshim.legacy [--strict] [--report FILE] (-m MODULE | -c CODE | SCRIPT) [ARGS...]``:
one Python program run as ``python -m MODULE ...`` (or ``-c``, or a script)
would run, with zero-change mode on from before its first import, and the
same environment as ``ccshim legacy`` gives, so that the Pythons it starts
(pytest's subprocesses, MPI ranks) run with it too."""

import os
import runpy
import sys

from .._legacy_cmd import environment, parse

USAGE = ("usage: python -m ccshim.legacy [--strict] [--report FILE] (-m MODULE | -c CODE | "
         "SCRIPT) [ARGS...]\n"
         "  e.g. python -m ccshim.legacy --strict -m pytest tests/")


def main() -> None:
    mode, program = parse(sys.argv[1:], USAGE)
    os.environ.update(environment(mode))
    from . import enable
    enable(strict=mode.strict)
    if program[0] == "-m" and len(program) > 1:
        sys.argv = program[1:]
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
    elif program[0] == "-c" and len(program) > 1:
        sys.argv = ["-c", *program[2:]]
        exec(compile(program[1], "<string>", "exec"), {"__name__": "__main__"})
    elif not program[0].startswith("-"):
        sys.argv = program
        sys.path[0] = os.path.dirname(os.path.abspath(program[0]))
        runpy.run_path(program[0], run_name="__main__")
    else:
        print(f"python -m ccshim.legacy: {program[0]} needs an argument\n{USAGE}",
              file=sys.stderr)
        raise SystemExit(2)


main()
