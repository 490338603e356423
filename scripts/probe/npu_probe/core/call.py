"""Calling into the user's tree: signatures, exceptions, and the arrays it returns.

Everything the tree raises becomes a TreeCrash (exit 3, traceback in probe.log);
every array it returns is copied at once, because the real KernelCache hands out
views of buffers that the next launch overwrites (shared_nonstatic=True).
"""

import contextlib
import inspect
import os

import numpy as np

from npu_probe.core.errors import ProbeError, TreeCrash


def accepts(func, name):
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    if name in params:
        return params[name].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())


def missing_required(func, offered):
    """Required parameters of `func` that `offered` keywords cannot fill."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in params
        if p.default is inspect.Parameter.empty
        and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_ONLY)
        and (p.name not in offered or p.kind is inspect.Parameter.POSITIONAL_ONLY)
    ]


def filter_kwargs(func, candidates):
    return {k: v for k, v in candidates.items() if accepts(func, k)}


def default_of(func, name):
    """The default of parameter `name` in `func`'s signature, or None."""
    try:
        p = inspect.signature(func).parameters.get(name)
    except (TypeError, ValueError):
        return None
    return None if p is None or p.default is inspect.Parameter.empty else p.default


def call_tree(where, func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except (ProbeError, TreeCrash):
        raise
    except Exception as exc:
        raise TreeCrash(where, exc) from exc


def block_output(ret):
    """The layer-0 output from whatever a block function returns: an array,
    (out, intermediates) or an intermediates dict. `ffn_out` wins when present."""
    if isinstance(ret, dict):
        return ret.get("ffn_out")
    if isinstance(ret, (tuple, list)):
        if len(ret) >= 2 and isinstance(ret[1], dict) and ret[1].get("ffn_out") is not None:
            return ret[1]["ffn_out"]
        return ret[0] if ret else None
    return ret


def copy_f32(x):
    """Copy NOW: the real tree's outputs are views into a buffer every later
    NPU call reuses (shared_nonstatic=True)."""
    return np.array(x, dtype=np.float32, copy=True)


def copy_block_return(ret):
    """A block function's return value with every array in it copied, in the
    tree's own dtype: `(out, {name: array})`, a dict, or an array. Used where the
    tree keeps a block's outputs across later launches (the adapters' layer
    loops), so what they keep is what the block produced."""
    if isinstance(ret, np.ndarray):
        return np.array(ret, copy=True)
    if isinstance(ret, dict):
        return {k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in ret.items()}
    if isinstance(ret, tuple):
        return tuple(copy_block_return(v) if isinstance(v, (np.ndarray, dict)) else v for v in ret)
    if isinstance(ret, list):
        return [copy_block_return(v) if isinstance(v, (np.ndarray, dict)) else v for v in ret]
    return ret


def _is_bf16(t):
    try:
        return np.dtype(t).name == "bfloat16"
    except TypeError:
        return False


def bf16_type(*modules):
    """The bfloat16 dtype the tree itself uses (its modules import ml_dtypes'
    bfloat16), else ml_dtypes if installed, else None (stay float32)."""
    for m in modules:
        t = getattr(m, "bfloat16", None) if m is not None else None
        if t is not None and _is_bf16(t):
            return t
    try:
        from ml_dtypes import bfloat16  # noqa: PLC0415 - optional, the tree's dependency

        return bfloat16
    except ImportError:
        return None


@contextlib.contextmanager
def working_dir(path, created=None):
    """chdir into `path` (created if missing; each dir this creates is appended
    to `created` so the caller can remove it again if it stays empty)."""
    prev = os.getcwd()
    try:
        made = makedirs_tracked(path)
    except OSError as exc:
        raise ProbeError(path, f"cannot create build dir: {exc.strerror or exc}") from exc
    if created is not None:
        created.extend(made)
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(prev)


def makedirs_tracked(path):
    """os.makedirs, returning the dirs it created (outermost first)."""
    missing = []
    p = os.path.abspath(path)
    while not os.path.exists(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    os.makedirs(path, exist_ok=True)
    return list(reversed(missing))


def remove_if_empty(dirs):
    """Remove each dir (innermost first) that is empty: a failed run leaves no
    empty build_peano/ or cache dir behind in the user's model dir."""
    for d in sorted(set(dirs), key=len, reverse=True):
        try:
            os.rmdir(d)
        except OSError:
            pass
