"""Entry point: `python3 scripts/probe <plan|config|block|check|bisect> ...` (what src/probe/run.ts
runs). The probe is the npu_probe package beside this file; see README.md."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from npu_probe.cli import entry  # noqa: E402  (stdlib only: --help and plan need no numpy)


def _device_opened():
    """Whether XRT's Python bindings were loaded in this process (a real device may be open then;
    the emulated NPU's stand-ins are gone from sys.modules once its run is over)."""
    return any(name == "pyxrt" or name.startswith(("pyxrt.", "xrt")) for name in sys.modules)


if __name__ == "__main__":
    code = entry()
    # Only after a run that loaded numpy (plan and --help load none and have little to tear down).
    if "numpy" in sys.modules and not _device_opened():
        # Everything the probe writes is written and closed by now: skip the interpreter's teardown
        # (module and thread finalisation, torch's and numpy's included: 0.015 s quiet, 0.04-0.09 s
        # under load, issue 30). Never after a device was opened: XRT must release it itself.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed or broken pipe: nothing more to say
                pass
        os._exit(code if isinstance(code, int) else 1)
    sys.exit(code)
