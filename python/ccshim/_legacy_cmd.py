"""``ccshim legacy [--strict] [--report FILE] -- CMD [ARGS...]``: runs any
command with zero-change mode on in every Python it starts, nothing of it
edited.

The command runs with, first on PYTHONPATH, ccshim.legacy's boot folder
(whose sitecustomize enables zero-change mode as soon as a program has
imported jax), for --strict its marker ``_boot/strict``, the entries that
carry where this ccshim's library is and, with --report, the report file
and the command's LD_PRELOAD (ccshim/_carried.py), and the folder holding
this ccshim package: so that a Python of another venv, or one started with
nothing of the environment but PYTHONPATH, imports the same ccshim with the
same library and mode, and has the libraries its parent preloaded loaded
first.  Also
CCSHIM_LEGACY (``on``, or ``strict``) for a program that imports
ccshim.legacy itself, and with --report, CCSHIM_LEGACY_REPORT (the file,
made absolute), to which each of those Pythons adds a line for each typed
target it registers (``REPORT_FIELDS`` below).
``python -m ccshim.legacy`` is the same for one Python program.  Kept out of
ccshim.legacy itself, which imports JAX: the command starts no JAX of its
own before it hands over to CMD.
"""

from __future__ import annotations

import os
import sys
from typing import NamedTuple, Sequence

from . import _carried

USAGE = ("usage: ccshim legacy [--strict] [--report FILE] -- COMMAND [ARGS...]\n"
         "  runs COMMAND with zero-change mode on in every Python it starts: legacy\n"
         "  registrations recorded, legacy calls run through ccshim's typed targets,\n"
         "  JAX's removed custom-call plumbing restored (docs/legacy.md); --strict makes\n"
         "  a legacy call that would still reach XLA an error; --report FILE adds a line\n"
         "  to FILE for each typed target a Python of COMMAND registers\n"
         "  e.g. ccshim legacy --strict -- python -m pytest tests/")


# A line of CCSHIM_LEGACY_REPORT, tab-separated: the process, the platform,
# the typed target registered, the legacy target it runs and its api_version.
# Here, not in ccshim.legacy, whose import turns zero-change mode on.
REPORT_FIELDS = ("pid", "platform", "typed", "target", "api_version")


class Mode(NamedTuple):
    strict: bool = False
    report: str | None = None  # the file each Python reports its typed targets to


_PACKAGE = os.path.dirname(os.path.abspath(__file__))
BOOT = _carried.BOOT


def environment(mode: Mode, env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) as a command run in zero-change
    mode gets it."""
    from . import _native
    env = dict(os.environ if env is None else env)
    env["CCSHIM_LEGACY"] = "strict" if mode.strict else "on"
    report = os.path.abspath(mode.report) if mode.report is not None else None
    if report is not None:
        env["CCSHIM_LEGACY_REPORT"] = report
    marker = os.path.join(BOOT, "strict")
    carried = _carried.entries({"library": os.path.abspath(_native.library_path()),
                                "report": report,
                                "preload": env.get("LD_PRELOAD") or None})
    ours = [BOOT, *([marker] if mode.strict else []), *carried, os.path.dirname(_PACKAGE)]
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
            if p and p not in ours and p != marker and not _carried.is_entry(p)]
    env["PYTHONPATH"] = os.pathsep.join(ours + rest)
    return env


def report_file() -> str | None:
    """The file this Python reports its typed targets to: CCSHIM_LEGACY_REPORT,
    else the one carried on its path (a child whose environment was not
    passed on)."""
    return os.environ.get("CCSHIM_LEGACY_REPORT") or _carried.read().get("report")


def parse(argv: Sequence[str], usage: str) -> tuple[Mode, list[str]]:
    """``[--strict] [--report FILE] [--] REST...`` -> (Mode, REST);
    SystemExit(2) with the usage when REST is empty or an option is unknown
    or lacks its value."""
    argv = list(argv)
    mode = Mode()
    while argv and argv[0].startswith("-") and argv[0] != "-":
        option = argv.pop(0)
        if option == "--":
            break
        if option == "--strict":
            mode = mode._replace(strict=True)
        elif option == "--report" or option.startswith("--report="):
            value = option.partition("=")[2] if "=" in option else (argv.pop(0) if argv else "")
            if not value:
                print(f"ccshim legacy: --report needs a file\n{usage}", file=sys.stderr)
                raise SystemExit(2)
            mode = mode._replace(report=value)
        elif option in ("-h", "--help"):
            print(usage)
            raise SystemExit(0)
        elif option in ("-m", "-c"):
            argv.insert(0, option)  # python -m ccshim.legacy's own
            break
        else:
            print(f"ccshim legacy: unknown option {option!r}\n{usage}", file=sys.stderr)
            raise SystemExit(2)
    if not argv:
        print(f"ccshim legacy: no command given\n{usage}", file=sys.stderr)
        raise SystemExit(2)
    return mode, argv


def main(argv: Sequence[str] | None = None) -> int:
    mode, command = parse(sys.argv[1:] if argv is None else argv, USAGE)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(command[0], command, environment(mode))
    except OSError as e:
        print(f"ccshim legacy: cannot run {command[0]!r}: {e.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
