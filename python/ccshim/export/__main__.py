"""``python -m ccshim.export``: the same as ``ccshim rewrite``."""

import sys

from ._cli import main

sys.exit(main())
