"""Baseline for the compare bench: mlir-air's real comparator, the code a user's diagnosis runs.

Imports programming_examples/llms/verify/comparators.py from an mlir-air tree by file path
(importlib.util.spec_from_file_location), so nothing else of the tree is imported, and per pair
does what `make diagnosis` does with two probe files: np.load both, then
compare_pair(name="ffn_out", npu=a, hf=b, layer=i).

usage: python3 mlir_air_compare.py COMPARATORS_PY DTYPE NPU_1 REF_1 [NPU_2 REF_2 ...]
DTYPE is f32 or bf16 (a <u2 payload holding bfloat16 bits). For bf16 the loaded array is viewed
as ml_dtypes.bfloat16 when ml_dtypes imports (the real tree holds bf16 arrays; comparators.py
casts them to float32 itself), else widened to float32 here (the bits are the high half of a
float32, so exactly) and the header says so.

A server, so the bench can interleave its runs with the other contenders': it prints one JSON
header line {"python", "numpy", "ml_dtypes", "bf16": how bf16 is fed, "tree_modules": other
modules of the tree that got imported (must be empty)}, then for every line "run" on stdin runs
every pair once and prints {"seconds": the run's total, "check": [per pair {"min": cosine min,
"max_abs": ...}]}. Timed: np.load of both files + compare_pair, per pair; not the interpreter
start or the imports. It exits at the end of stdin.
"""

import importlib.util
import json
import os
import platform
import sys
import time

import numpy as np


def import_comparators(path):
    spec = importlib.util.spec_from_file_location("mlir_air_verify_comparators", path)
    mod = importlib.util.module_from_spec(spec)
    # dataclasses resolves the module's string annotations through sys.modules.
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def bf16_loader():
    try:
        import ml_dtypes
    except ImportError:
        return None, "float32 (ml_dtypes not importable: bfloat16 bits widened to float32)", lambda x: (x.astype(np.uint32) << 16).view(np.float32)
    bf16 = ml_dtypes.bfloat16
    return ml_dtypes.__version__, f"ml_dtypes.bfloat16 (ml_dtypes {ml_dtypes.__version__})", lambda x: x.view(bf16)


def main():
    comparators_py = sys.argv[1]
    dtype = sys.argv[2]
    paths = sys.argv[3:]
    pairs = list(zip(paths[0::2], paths[1::2]))

    before = set(sys.modules)
    comparators = import_comparators(comparators_py)
    tree = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(comparators_py)))))
    tree_modules = sorted(
        name
        for name in set(sys.modules) - before
        if name != "mlir_air_verify_comparators"
        and os.path.realpath(getattr(sys.modules[name], "__file__", None) or "/").startswith(tree + os.sep)
    )
    compare_pair = comparators.compare_pair

    ml_dtypes_version, how, bf16_view = bf16_loader()
    if dtype == "bf16":
        view = bf16_view
    else:
        how, view = None, lambda x: x

    print(json.dumps({
        "python": f"{sys.executable} (Python {platform.python_version()})",
        "numpy": np.__version__,
        "ml_dtypes": ml_dtypes_version,
        "bf16": how,
        "tree_modules": tree_modules,
    }), flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            continue
        check = []
        t0 = time.perf_counter()
        for i, (npu_path, ref_path) in enumerate(pairs):
            a = view(np.load(npu_path))
            b = view(np.load(ref_path))
            rec = compare_pair(name="ffn_out", npu=a, hf=b, layer=i)
            check.append({"min": rec.cosine["min"], "max_abs": rec.errors["max_abs"]})
        seconds = time.perf_counter() - t0
        print(json.dumps({"seconds": seconds, "check": check}), flush=True)


if __name__ == "__main__":
    main()
