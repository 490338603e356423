"""What the run happened on: interpreter, numpy, platform, device and NPU generation, tree commit."""

import os
import platform
import re
import shutil
import subprocess
import sys

import numpy as np

from npu_probe.core.npu import npu_record


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


_DRIVER_FIELDS = {
    "amdxdna": r"amdxdna\s+Version",
    "npu_firmware": r"NPU\s+Firmware\s+Version",
}


def parse_driver_versions(text):
    """Driver and firmware versions from `xrt-smi examine` output."""
    out = {}
    for key, label in _DRIVER_FIELDS.items():
        m = re.search(r"^\s*" + label + r"\s*:\s*(\S+)", text, re.M)
        if m:
            out[key] = m.group(1)
    return out


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


def xrt_examine(runner=subprocess.run):
    """`xrt-smi examine`'s output, or None when xrt-smi is absent or fails."""
    exe = shutil.which("xrt-smi")
    if exe is None:
        return None
    try:
        res = runner([exe, "examine"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout if res.returncode == 0 else None


def device_info(runner=subprocess.run, text=None):
    """(device, xrt, {amdxdna, npu_firmware}); Nones when xrt-smi is absent or fails."""
    text = xrt_examine(runner) if text is None else text
    if not text:
        return None, None, {}
    device, xrt = parse_xrt_smi(text)
    return device, xrt, parse_driver_versions(text)


def environment(air_root, toolchain=None, emulated=False):
    """What the run happened on. `npu`: the NPU and its generation (npu_probe.core.npu); an
    emulated run ran on no NPU and names none."""
    text = xrt_examine()
    device, xrt, drivers = device_info(text=text or "")
    if drivers:
        toolchain = dict(toolchain or {}, **drivers)
    return {
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "numpy": np.__version__,
        "platform": platform.platform(),
        "device": device,
        "xrt": xrt,
        "npu": None if emulated else npu_record(text),
        "toolchain": toolchain,
        "git_commit": git_commit(air_root),
        "air_root": os.path.abspath(air_root),
    }
