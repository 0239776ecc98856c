"""C++ names as a kernel's entry in a capsule export gives them."""

from __future__ import annotations

import re


def base_name(function: str) -> str:
    """A kernel's own name: without its qualification and template
    arguments (cpu_kepler for kepler_jax::cpu_kepler<float>)."""
    return re.sub(r"<.*", "", function).split("::")[-1].strip()
