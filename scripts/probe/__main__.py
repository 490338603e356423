"""Entry point: `python3 scripts/probe <config|block|bisect> ...`."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from probe_args import build_parser  # noqa: E402  (stdlib only: --help needs no numpy)

if __name__ == "__main__":
    args = build_parser().parse_args()
    try:
        import numpy  # noqa: F401 - the probe's one dependency; say so in one line
    except ImportError as exc:
        sys.stderr.write(
            f"probe: error: numpy: {type(exc).__name__}: {exc} (run the probe with the mlir-air environment's python)\n"
        )
        sys.exit(3)
    from probe_cli import main

    sys.exit(main(args=args))
