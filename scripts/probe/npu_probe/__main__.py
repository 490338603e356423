"""`python3 -m npu_probe ...` with scripts/probe on the path: the same as `python3 scripts/probe ...`."""

import sys

from npu_probe.cli import entry

sys.exit(entry())
