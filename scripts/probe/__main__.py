"""Entry point: `python3 scripts/probe <config|block> ...`."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from probe_cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
