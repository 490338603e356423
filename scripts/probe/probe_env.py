"""What the run happened on: interpreter, numpy, platform, device, tree commit."""

import os
import platform
import re
import shutil
import subprocess
import sys

import numpy as np


def git_commit(path):
    try:
        res = subprocess.run(
            ["git", "-C", path, "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = res.stdout.strip()
    return out if res.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", out) else None


def parse_xrt_smi(text):
    """(device, xrt version) from `xrt-smi examine` output, best effort."""
    xrt = None
    device = None
    m = re.search(r"^\s*XRT\s*$.*?^\s*Version\s*:\s*(\S+)", text, re.M | re.S)
    if m:
        xrt = m.group(1)
    m = re.search(r"^\s*\|?\s*\[([0-9a-fA-F:.]+)\]\s*\|?\s*:?\s*\|?\s*([^|\n]+?)\s*\|", text, re.M)
    if m:
        device = f"{m.group(2).strip()} [{m.group(1)}]"
    else:
        m = re.search(r"^\s*\[([0-9a-fA-F:.]+)\]\s*:\s*(.+?)\s*$", text, re.M)
        if m:
            device = f"{m.group(2).strip()} [{m.group(1)}]"
    return device, xrt


def device_info(runner=subprocess.run):
    exe = shutil.which("xrt-smi")
    if exe is None:
        return None, None
    try:
        res = runner([exe, "examine"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None, None
    if res.returncode != 0:
        return None, None
    return parse_xrt_smi(res.stdout)


def environment(air_root, toolchain=None):
    device, xrt = device_info()
    return {
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "numpy": np.__version__,
        "platform": platform.platform(),
        "device": device,
        "xrt": xrt,
        "toolchain": toolchain,
        "git_commit": git_commit(air_root),
        "air_root": os.path.abspath(air_root),
    }
