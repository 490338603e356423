"""Entry point: `python3 scripts/probe <plan|config|block|check|bisect> ...` (what src/probe/run.ts
runs). The probe is the npu_probe package beside this file; see README.md."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from npu_probe.cli import entry  # noqa: E402  (stdlib only: --help and plan need no numpy)

if __name__ == "__main__":
    sys.exit(entry())
