"""Entry point: `python3 scripts/probe <plan|config|block|check|bisect> ...`."""

import json
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from probe_args import build_parser  # noqa: E402  (stdlib only: --help and plan need no numpy)
from npu_probe.core.contract import EVENT_PREFIX, EXIT_NO_NUMPY  # noqa: E402

if __name__ == "__main__":
    # Under uid isolation the probe runs as another user in the runner's group: what it creates
    # (build dirs, the run dir's files) stays writable for the runner, which cleans it up.
    if os.environ.get("NPU_BLOCK_GATE_UMASK", "").strip() in ("002", "0002"):
        os.umask(0o002)
    args = build_parser().parse_args()
    if args.command != "plan":
        try:
            import numpy
        except ImportError as exc:
            # Its own exit code: the TypeScript side then tries the next Python.
            sys.stderr.write(
                f"probe: error: numpy: {type(exc).__name__}: {exc} (run the probe with the mlir-air environment's python)\n"
            )
            sys.exit(EXIT_NO_NUMPY)
        # The probe's own clock starts here (probe.json timings.total): interpreter start-up
        # and the numpy import before it are the tool's overhead, not the probe's.
        args.t0 = time.monotonic()
        if getattr(args, "events", False):
            info = {"event": "python", "executable": sys.executable, "version": sys.version.split()[0],
                    "numpy": numpy.__version__}
            sys.stderr.write(EVENT_PREFIX + json.dumps(info, sort_keys=True) + "\n")
            sys.stderr.flush()
    from probe_cli import main

    sys.exit(main(args=args))
