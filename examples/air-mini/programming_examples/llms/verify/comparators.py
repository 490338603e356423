"""Comparators with the same definitions as mlir-air's verify/comparators.py."""

import numpy as np


def per_position_cosine(a, b):
    """Row-wise cosine in float32; 0.0 where either row norm is 0."""
    a = np.asarray(a, dtype=np.float32).reshape(np.asarray(a).shape[0], -1)
    b = np.asarray(b, dtype=np.float32).reshape(np.asarray(b).shape[0], -1)
    dot = np.sum(a * b, axis=1)
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    den = na * nb
    out = np.zeros(a.shape[0], dtype=np.float32)
    ok = den > 0
    out[ok] = dot[ok] / den[ok]
    return out


def aggregate(cosines):
    c = np.asarray(cosines, dtype=np.float64)
    return {"min": float(np.min(c)), "p5": float(np.percentile(c, 5)),
            "median": float(np.median(c)), "mean": float(np.mean(c))}


def error_metrics(a, b):
    """a: candidate, b: reference."""
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    d = np.abs(a - b)
    rel = d / np.maximum(np.abs(b), 1e-6)
    return {"max_abs": float(d.max()), "mean_abs": float(d.mean()),
            "max_rel": float(rel.max()), "mean_rel": float(rel.mean())}


def whole_cosine(a, b):
    """sum(a*b) / (|a| |b|), accumulated in float64 (npu-block-gate's G1)."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    den = np.linalg.norm(a) * np.linalg.norm(b)
    return float(np.dot(a, b) / den) if den > 0 else 0.0
