"""Tests for npu_probe.core.npu (which NPU a run is on, for probe.json environment.npu) and for
`probe plans` (every model's plan in one process, for npu-block-gate affected).

Run from the repo root: python3 -m unittest test.python.test_probe_npu
"""

import json
import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts", "probe"))

from npu_probe.core import npu  # noqa: E402
from test.python.support import run_probe  # noqa: E402

# `xrt-smi examine` of XRT 2.19 (the layout of test/fixtures/agent/xrt-smi.ts), device name filled in.
XRT_219 = """System Configuration
  OS Name              : Linux
  Release              : 6.11.0-19-generic

XRT
  Version              : 2.19.0
  Branch               : 2.19
  amdxdna              : 2.19.0_20250330, 7c1d273ef9946848a9f236f1216cfda10d9465cb
  NPU Firmware Version : 1.0.0.63

Device(s) Present
|BDF             |Name          |
|----------------|--------------|
|[0000:c5:00.1]  |{name}  |
"""


def fake_machine(device=None, revision=None, vbnv=None, fw=None, cpu=None):
    root = tempfile.mkdtemp(prefix="npu-root-")
    if device:
        d = os.path.join(root, "sys/bus/pci/devices/0000:c5:00.1")
        os.makedirs(d)
        for name, value in (("vendor", "0x1022"), ("device", device), ("revision", revision), ("vbnv", vbnv), ("fw_version", fw)):
            if value is not None:
                with open(os.path.join(d, name), "w") as f:
                    f.write(value + "\n")
        # Another AMD function on the bus that is not an NPU.
        other = os.path.join(root, "sys/bus/pci/devices/0000:c5:00.0")
        os.makedirs(other)
        for name, value in (("vendor", "0x1022"), ("device", "0x15c8"), ("revision", "0x00")):
            with open(os.path.join(other, name), "w") as f:
                f.write(value + "\n")
    if cpu:
        os.makedirs(os.path.join(root, "proc"))
        with open(os.path.join(root, "proc/cpuinfo"), "w") as f:
            f.write(f"processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: {cpu}\n")
    return root


class NpuRecordTest(unittest.TestCase):
    def test_from_the_pci_id_and_revision(self):
        root = fake_machine("0x17f0", "0x10", vbnv="NPU Strix", fw="1.1.2.64")
        r = npu.npu_record(XRT_219.format(name="NPU Strix"), root=root)
        self.assertEqual(r, {"generation": "strix", "name": "NPU Strix", "pci": "1022:17f0 rev 10", "bdf": "0000:c5:00.1",
                             "driver": "2.19.0_20250330", "firmware": "1.1.2.64", "xrt": "2.19.0", "source": "name"})
        self.assertEqual(npu.npu_record(None, root=fake_machine("0x17f0", "0x20"))["generation"], "krackan")
        self.assertEqual(npu.npu_record(None, root=fake_machine("0x17f0", "0x11"))["generation"], "strix-halo")

    def test_the_board_name_first_then_the_pci_id(self):
        # Issue 28: boards share PCI ids (amd/xdna-driver 01891bd5, npu4_regs.c): the driver's board name decides.
        krk = npu.npu_record(None, root=fake_machine("0x17f0", "0x10", vbnv="NPU Krackan 1"))
        self.assertEqual((krk["generation"], krk["source"]), ("krackan", "name"))
        gpt = npu.npu_record(None, root=fake_machine("0x17f0", "0x10", vbnv="NPU Gorgon Point 2"))
        self.assertEqual((gpt["generation"], gpt["source"]), ("gorgon-point", "name"))
        # No name: the PCI id.
        self.assertEqual(npu.npu_record(None, root=fake_machine("0x17f0", "0x10"))["generation"], "strix")

    def test_hawk_point_by_the_cpu_model(self):
        hawk = fake_machine("0x1502", "0x00", cpu="AMD Ryzen 7 8845HS w/ Radeon 780M Graphics")
        phoenix = fake_machine("0x1502", "0x00", cpu="AMD Ryzen 9 7940HS w/ Radeon 780M Graphics")
        self.assertEqual(npu.npu_record(None, root=hawk)["generation"], "hawk-point")
        self.assertEqual(npu.npu_record(None, root=phoenix)["generation"], "phoenix")

    def test_from_the_xrt_smi_name_when_sysfs_shows_none(self):
        r = npu.npu_record(XRT_219.format(name="NPU Kracken"), root=fake_machine())
        self.assertEqual((r["generation"], r["source"], r["pci"], r["bdf"], r["firmware"]), ("krackan", "name", None, "0000:c5:00.1", "1.0.0.63"))
        # An unknown revision is not guessed: the name the driver gives decides, else none.
        unknown = npu.npu_record(None, root=fake_machine("0x17f0", "0x99", vbnv="RyzenAI-npu4"))
        self.assertEqual((unknown["generation"], unknown["source"]), ("strix", "name"))
        nothing = npu.npu_record(None, root=fake_machine("0x17f0", "0x99"))
        self.assertEqual((nothing["generation"], nothing["source"]), (None, "none"))

    def test_no_npu_at_all(self):
        self.assertIsNone(npu.npu_record(None, root=fake_machine()))
        self.assertIsNone(npu.npu_record("XRT\n  Version : 2.19.0\n", root=fake_machine()))

    def test_every_generation_id_is_one_the_records_accept(self):
        ids = [g["id"] for g in npu.GENERATIONS]
        self.assertEqual(len(ids), len(set(ids)))
        for i in ids:
            self.assertRegex(i, r"^[a-z0-9][a-z0-9-]{0,31}$")


AIR_MINI = os.path.join(REPO, "examples", "air-mini", "programming_examples", "llms")


class PlansCommandTest(unittest.TestCase):
    def test_every_model_in_one_process_a_bad_dir_is_its_own_entry(self):
        dirs = [os.path.join(AIR_MINI, m) for m in ("tiny_llama", "tiny_qwen3")] + [os.path.join(AIR_MINI, "no_such_model")]
        r = run_probe("plans", *[a for d in dirs for a in ("--model-dir", d)])
        self.assertEqual(r.returncode, 0, r.stderr)
        plans = json.loads(r.stdout)["plans"]
        self.assertEqual([p["model_dir"] for p in plans], dirs)
        self.assertEqual([p["exit"] for p in plans[:2]], [0, 0])
        self.assertIn("programming_examples/llms/tiny_llama/tiny_llama_prefill.py", plans[0]["plan"]["kernel_cache"]["inputs"]["files"])
        single = json.loads(run_probe("plan", "--model-dir", dirs[0], "--json").stdout)
        self.assertEqual(plans[0]["plan"]["imports"], single["imports"], "the same plan as `plan --json`")
        self.assertEqual(plans[2]["exit"], 2)
        self.assertNotIn("plan", plans[2])
        self.assertIn("no_such_model", plans[2]["error"])


if __name__ == "__main__":
    unittest.main()
