"""Which NPU a run is on: its generation (contract.json `npu`, the table npu-block-gate keys history
rows and regression baselines by), its name, PCI id, driver, firmware and XRT versions.

From sysfs (the AMD NPU's PCI device id and revision, mapped as the amdxdna driver maps them; its
vbnv and fw_version attributes) and `xrt-smi examine` (the device table's name, the versions);
Hawk Point has Phoenix's PCI id and is told apart by the CPU model. Standard library only; every
path is read under `root` so tests can hand in a fake machine.
"""

import os
import re

from npu_probe.core.contract import CONTRACT

GENERATIONS = tuple(CONTRACT["npu"]["generations"])
_BY_PCI = {key: g for g in GENERATIONS for key in g["pci"]}
# Longest first: "NPU Strix Halo" before "NPU Strix".
_BY_NAME = sorted(((n.lower(), g) for g in GENERATIONS for n in g["names"]), key=lambda x: -len(x[0]))


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _hex(s, width):
    t = (s or "").strip().lower()
    return (t[2:] if t.startswith("0x") else t).zfill(width)


def cpu_model(root="/"):
    """/proc/cpuinfo's first model name, e.g. "AMD Ryzen 7 8845HS w/ Radeon 780M Graphics"."""
    m = re.search(r"^model name\s*:\s*(.+)$", _read(os.path.join(root, "proc/cpuinfo")) or "", re.M)
    return m.group(1).strip() if m else None


def _refine(g, cpu):
    if cpu:
        for other in GENERATIONS:
            if other.get("refines") == g["id"] and other.get("cpu") and re.search(other["cpu"], cpu):
                return other
    return g


def generation_of_pci(device, revision, cpu=None):
    g = _BY_PCI.get(f"{_hex(device, 4)}:{_hex(revision, 2)}")
    return _refine(g, cpu) if g else None


def generation_of_name(name, cpu=None):
    n = (name or "").strip().lower()
    if not n:
        return None
    for key, g in _BY_NAME:
        if n == key or key in n:
            return _refine(g, cpu)
    return None


def pci_npus(root="/"):
    """The AMD NPUs on the PCI bus: [{bdf, device, revision, vbnv, fw_version}], from sysfs."""
    base = os.path.join(root, "sys/bus/pci/devices")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    known = {key.split(":")[0] for key in _BY_PCI}
    out = []
    for bdf in names:
        d = os.path.join(base, bdf)
        if _hex(_read(os.path.join(d, "vendor")), 4) != "1022":
            continue
        device = _hex(_read(os.path.join(d, "device")), 4)
        if device not in known:
            continue
        out.append({"bdf": bdf, "device": device, "revision": _hex(_read(os.path.join(d, "revision")), 2),
                    "vbnv": _read(os.path.join(d, "vbnv")), "fw_version": _read(os.path.join(d, "fw_version"))})
    return out


def xrt_devices(text):
    """(bdf, name) of each device in `xrt-smi examine`'s table (XRT 2.17 to current layouts)."""
    out = []
    for line in (text or "").splitlines():
        m = re.match(r"^\s*\|\s*\[([0-9a-fA-F:.]+)\]\s*\|([^|]*)\|", line) or re.match(r"^\s*\[([0-9a-fA-F:.]+)\]\s+:\s+(\S.*?)\s*$", line)
        if m:
            out.append((m.group(1), m.group(2).strip()))
    return out


def _xrt_value(text, label):
    m = re.search(r"^\s*" + label + r"\s*:\s*([^\s,]+)", text or "", re.M)
    return m.group(1) if m and m.group(1).lower() not in ("n/a", "unknown") else None


def npu_record(xrt_text=None, root="/"):
    """probe.json environment.npu: the NPU this host runs on, or None when neither sysfs nor
    xrt-smi shows one. `source` says where the generation came from: pci, name, or none."""
    npus = pci_npus(root)
    devices = xrt_devices(xrt_text)
    if not npus and not devices:
        return None
    cpu = cpu_model(root)
    if npus:
        n = npus[0]
        listed = [name for bdf, name in devices if bdf.lower().endswith(n["bdf"].lower().split(":", 1)[-1])]
        name = n["vbnv"] or (listed[0] if listed else None)
        # The driver's board name first (boards share PCI ids: a "NPU Krackan 1" can sit on 17f0:10,
        # xdna-driver 01891bd5), then the PCI id: the rule src/npu/generation.ts and the agent follow.
        g, source = generation_of_name(name, cpu), "name"
        if g is None:
            g, source = generation_of_pci(n["device"], n["revision"], cpu), "pci"
        bdf, pci, firmware = n["bdf"], f"1022:{n['device']} rev {n['revision']}", n["fw_version"]
    else:
        bdf, name = devices[0]
        g, source = generation_of_name(name, cpu), "name"
        pci, firmware = None, None
    xrt = None
    m = re.search(r"^\s*XRT\s*$.*?^\s*Version\s*:\s*(\S+)", xrt_text or "", re.M | re.S)
    if m:
        xrt = m.group(1)
    return {
        "generation": g["id"] if g else None,
        "name": name,
        "pci": pci,
        "bdf": bdf,
        "driver": _xrt_value(xrt_text, r"(?:amdxdna|AMDXDNA)(?:\s+Version)?"),
        "firmware": firmware or _xrt_value(xrt_text, r"(?:NPU\s+)?Firmware\s+Version"),
        "xrt": xrt,
        "source": source if g else "none",
    }
