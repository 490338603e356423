"""The peer's path for bench/report.ts: what mlir-air's own diagnosis does once it holds the
per-layer tensors, from a fresh interpreter, so that it can be timed from process start to exit
against `npu-block-gate report`.

usage: python3 mlir_air_report.py VERIFY_DIR DTYPE OUT_DIR NPU_0 REF_0 [NPU_1 REF_1 ...]

Imports numpy, then verify/comparators.py and verify/report.py from the tree the way
verify_runner.py does (VERIFY_DIR first on sys.path), and for layer i: np.load both files (bf16
stored <u2 viewed as ml_dtypes.bfloat16, as the tree holds bf16 arrays; ml_dtypes is imported
only for bf16, and when it is not installed the bits are widened to float32 here instead, exactly,
as bench/mlir_air_compare.py does), report.add(compare_pair(name="ffn_out", npu=a, hf=b, layer=i)); then
report.dump_json and report.dump_markdown into OUT_DIR, as _run_diagnosis and main do.
"""

import os
import sys

import numpy as np


def main():
    verify_dir, dtype, out_dir = sys.argv[1:4]
    paths = sys.argv[4:]
    sys.path.insert(0, verify_dir)
    from comparators import compare_pair
    from report import Report

    view = lambda x: x
    if dtype == "bf16":
        try:
            import ml_dtypes

            view = lambda x: x.view(ml_dtypes.bfloat16)
        except ImportError:
            view = lambda x: (x.astype(np.uint32) << 16).view(np.float32)
    report = Report(config={"mode": "diagnosis", "runner": "bench", "model": "bench", "model_name": "bench", "npu_attn": True, "prompt": "bench"})
    for i, (npu_path, ref_path) in enumerate(zip(paths[0::2], paths[1::2])):
        a = view(np.load(npu_path))
        b = view(np.load(ref_path))
        report.add(compare_pair(name="ffn_out", npu=a, hf=b, layer=i))
    report.dump_json(os.path.join(out_dir, "diagnosis.json"))
    report.dump_markdown(os.path.join(out_dir, "diagnosis.md"))


if __name__ == "__main__":
    main()
