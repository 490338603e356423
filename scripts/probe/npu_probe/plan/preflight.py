"""Preflight: whether this machine can run what the tree imports (Python version, packages,
NPU device, local HF snapshot). Checked without importing anything."""

import glob
import importlib.util
import os
import re
import sys

from npu_probe.core import hfhub
from npu_probe.plan.finding import finding
from npu_probe.plan.static.parse import parse_file, read_text


# Packages that get a preflight finding of their own (others are only listed).
CORE_PACKAGES = ("numpy", "ml_dtypes")
REFERENCE_PACKAGES = ("transformers", "torch")
NPU_PACKAGES = ("air", "aie", "pyxrt")
# A pip install names the interpreter it installs into (the one running this plan, the one the
# run uses): a bare `pip` may be another Python's.
PIP = f"{sys.executable or 'python3'} -m pip install"
PACKAGE_FIX = {
    "numpy": f"{PIP} numpy",
    "ml_dtypes": f"{PIP} ml_dtypes",
    "transformers": f"{PIP} transformers (the HF bf16 reference, verify/runners/hf_runner.py)",
    "torch": f"{PIP} torch (CPU wheel is enough for the HF bf16 reference)",
    "air": "install mlir-air's Python package (build the tree or its wheel) on the NPU host",
    "aie": "install mlir-aie's Python package (the mlir_aie wheel) on the NPU host",
    "pyxrt": "install XRT and `source /opt/xilinx/xrt/setup.sh` on the NPU host",
}


def _version_tuple(text):
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def preflight_python(ctx, closure, pyver):
    """python-version / tree-syntax findings and the imports.unparsed records."""
    running = _version_tuple(pyver)
    unparsed, needs, broken = [], [], []
    for path in closure:
        parsed = parse_file(path)
        if not parsed or not parsed.issues:
            continue
        for issue in parsed.issues:
            rec = {"file": ctx.rel(path), "line": issue.line, "source_line": issue.source_line or issue.line,
                   "error": issue.message,
                   "needs_python": ".".join(map(str, issue.needs)) if issue.needs else None,
                   "fallback": parsed.fallback}
            unparsed.append(rec)
            if issue.needs and running[:2] < issue.needs:
                needs.append((issue, path))
            elif not issue.needs:
                broken.append((issue, path))
    out = []
    if needs:
        top = max(i.needs for i, _ in needs)
        where = ", ".join(f"{ctx.rel(p)}:{i.line}" + (f" (construct on line {i.source_line})"
                                                      if i.source_line and i.source_line != i.line else "")
                          for i, p in needs)
        feats = ", ".join(sorted({i.feature for i, _ in needs}))
        out.append(finding("python-version", "fail", "environment",
                           f"needs Python >= {top[0]}.{top[1]} ({feats}): {where}; running {pyver}",
                           f"run with Python >= {top[0]}.{top[1]} (a {top[0]}.{top[1]} venv with the tree's "
                           "requirements)"))
    else:
        out.append(finding("python-version", "ok", "environment",
                           f"all {len(closure)} imported tree files parse on Python {pyver}"))
    for issue, path in broken:
        out.append(finding("tree-syntax", "fail", "tree",
                           f"{ctx.rel(path)}:{issue.line}: SyntaxError: {issue.message}",
                           "fix the syntax error in the tree (it fails on every Python)"))
    return out, unparsed


def preflight_packages(closure_packages, reference_real, emulate_npu=False):
    """Checked with importlib.util.find_spec on the running interpreter (never imported).
    With `emulate_npu` (--emulate) the NPU packages are the probe's emulated runtime."""
    out = []
    wanted = list(CORE_PACKAGES)
    if reference_real:
        wanted += list(REFERENCE_PACKAGES)
    wanted += [p for p in NPU_PACKAGES if p in closure_packages]
    for name in wanted:
        if emulate_npu and name in NPU_PACKAGES:
            out.append(finding(f"package-{name}", "ok", "environment",
                               f"{name}: emulated by the probe (--emulate: CPU twins of the ELFs)"))
            continue
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        used = name in closure_packages or name in REFERENCE_PACKAGES
        fid = f"package-{name}"
        if found:
            out.append(finding(fid, "ok", "environment", f"{name} is importable"))
        elif not used:
            out.append(finding(fid, "ok", "environment", f"{name} is not installed and the tree does not import it"))
        else:
            out.append(finding(fid, "fail", "environment", f"{name} is not installed (the run imports it)",
                               PACKAGE_FIX.get(name, f"{PIP} {name}")))
    return out


def preflight_device(device_glob, emulated, emulate_npu=False):
    if emulate_npu:
        return finding("npu-device", "ok", "environment", "--emulate: no NPU needed (CPU twins of the ELFs)")
    if glob.glob(device_glob):
        return finding("npu-device", "ok", "environment", f"NPU device present ({device_glob})")
    if emulated:
        return finding("npu-device", "ok", "environment", "emulated tree: no NPU needed")
    return finding("npu-device", "fail", "environment",
                   f"no NPU: {device_glob} missing; this is not an NPU host",
                   "run on an NPU host (amdxdna driver loaded, /dev/accel/accel0 present; if it vanished, "
                   "power-cycle the runner)")


def preflight_hf_cache(model_id, environ):
    fix = (f"huggingface-cli download {model_id} (gated models such as meta-llama/* need a token: "
           "huggingface-cli login or HF_TOKEN)")
    if not model_id:
        return finding("hf-cache", "fail", "environment", "no model id to look up in the HF cache",
                       "pass a model choice or HF id")
    if os.path.isabs(model_id) and os.path.isdir(model_id):
        snap = model_id
    else:
        ref = hfhub.ref_file(model_id, environ)
        rev = (read_text(ref) or "").strip()
        if not rev:
            return finding("hf-cache", "fail", "environment",
                           f"{model_id} is not in the HF cache ({ref} missing)", fix)
        snap = hfhub.snapshot_dir(model_id, rev, environ)
    missing = []
    if not os.path.isfile(os.path.join(snap, "config.json")):
        missing.append("config.json")
    if not any(os.path.isfile(os.path.join(snap, n)) for n in ("tokenizer.json", "tokenizer_config.json")):
        missing.append("tokenizer.json/tokenizer_config.json")
    if missing:
        return finding("hf-cache", "fail", "environment",
                       f"{model_id} snapshot {snap} lacks {', '.join(missing)}", fix)
    return finding("hf-cache", "ok", "environment", f"{model_id} cached at {snap}")
