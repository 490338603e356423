"""Baseline for `npm run bench`: mlir-air's comparator definitions, written here with numpy.

Definitions (mlir-air programming_examples/llms/verify/comparators.py, as DESIGN.md "Numbers"
quotes them): per-row cosine in float32 with 0.0 where either row norm is 0; its aggregate
(min, p5, median, mean); error metrics max_abs, mean_abs, max_rel, mean_rel with the relative
denominator max(|ref|, 1e-6) in float32; whole-tensor cosine accumulated in float64.

usage: python3 numpy_compare.py RUNS DTYPE NPU_1 REF_1 [NPU_2 REF_2 ...]
DTYPE is f32 or bf16 (a <u2 payload holding bfloat16 bits). Prints one JSON line:
{"seconds": [one total per run, over every pair], "check": {...metrics of the last pair}}.
Each run loads every file with np.load (warm page cache) and computes everything above.
"""

import json
import sys
import time

import numpy as np


def load(path, dtype):
    x = np.load(path)
    if dtype == "bf16":
        # bfloat16 bits are the high half of a float32: widen exactly.
        x = (x.astype(np.uint32) << 16).view(np.float32)
    return x.reshape(x.shape[0], -1)


def row_cosines(a, b):
    dot = np.einsum("ij,ij->i", a, b)
    na = np.sqrt(np.einsum("ij,ij->i", a, a))
    nb = np.sqrt(np.einsum("ij,ij->i", b, b))
    den = na * nb
    cos = np.zeros(a.shape[0], dtype=np.float32)
    nz = den > 0
    cos[nz] = dot[nz] / den[nz]
    return cos


def summary(cos):
    c = cos.astype(np.float64)
    return {"min": float(c.min()), "p5": float(np.percentile(c, 5)), "median": float(np.median(c)), "mean": float(c.mean())}


def errors(a, b):
    diff = np.abs(a - b)
    rel = diff / np.maximum(np.abs(b), np.float32(1e-6))
    return {"max_abs": float(diff.max()), "mean_abs": float(diff.mean()), "max_rel": float(rel.max()), "mean_rel": float(rel.mean())}


def whole(a, b):
    a64 = a.astype(np.float64).ravel()
    b64 = b.astype(np.float64).ravel()
    den = np.sqrt(a64 @ a64) * np.sqrt(b64 @ b64)
    return float(a64 @ b64 / den) if den > 0 else 0.0


def judge(npu_path, ref_path, dtype):
    a = load(npu_path, dtype)
    b = load(ref_path, dtype)
    cos = row_cosines(a, b)
    return {"per_position": summary(cos), "errors": errors(a, b), "whole_cosine": whole(a, b)}


def main():
    runs = int(sys.argv[1])
    dtype = sys.argv[2]
    paths = sys.argv[3:]
    pairs = list(zip(paths[0::2], paths[1::2]))
    seconds = []
    check = None
    for _ in range(runs):
        t0 = time.perf_counter()
        for npu, ref in pairs:
            check = judge(npu, ref, dtype)
        seconds.append(time.perf_counter() - t0)
    print(json.dumps({"seconds": seconds, "check": check}))


if __name__ == "__main__":
    main()
