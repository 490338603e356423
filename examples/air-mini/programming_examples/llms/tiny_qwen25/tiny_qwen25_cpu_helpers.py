"""CPU (float32 numpy) helpers for tiny_qwen25: the bisect's CPU equivalents.

`rms_norm` with tiny_qwen25's eps (1e-6) by default; the implementations
(and `attention_reference`, `softmax`) are shared/infra/cpu_ops.py.
"""

import sys
from pathlib import Path

_LLMS = str(Path(__file__).resolve().parent.parent)
if _LLMS not in sys.path:
    sys.path.insert(0, _LLMS)

from shared.infra import cpu_ops  # noqa: E402
from shared.infra.cpu_ops import attention_reference, softmax  # noqa: E402,F401


def rms_norm(x, weight, eps=1e-6):
    """x / sqrt(mean(x^2) + eps) * weight, in float32. x: (M, N), weight: (N,)."""
    return cpu_ops.rms_norm(x, weight, eps)
