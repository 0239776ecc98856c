"""What a port could not do, said with where and why."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    where: str   # path:line, relative to the tree's root
    why: str

    def __str__(self) -> str:
        return f"{self.where}: not ported: {self.why}"


def unified(path: str, old: str | None, new: str) -> str:
    """A git-style unified diff of one file (old None: a new file)."""
    a = [] if old is None else old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    for lines in (a, b):
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n\\ No newline at end of file\n"
    head = f"diff --git a/{path} b/{path}\n"
    if old is None:
        head += "new file mode 100644\n"
    body = "".join(difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{path}",
                                        f"b/{path}", n=3))
    return head + body if body else ""
