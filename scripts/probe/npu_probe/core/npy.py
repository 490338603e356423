"""Atomic writes into the run dir: temp file in the same dir, then rename."""

import json
import os
import tempfile

import numpy as np


def atomic_write_bytes(path, writer):
    """Call writer(fileobj) on a temp file beside `path`, then rename it into place."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; files here are for others to read
        with os.fdopen(fd, "wb") as f:
            writer(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def as_f32_c(array):
    """Little-endian float32, C order: the only tensor layout the probe writes."""
    return np.ascontiguousarray(np.asarray(array, dtype="<f4"))


def write_npy(path, array):
    """Write `array` as a .npy v1.0 `<f4` C-order file, atomically. Returns the array written."""
    arr = as_f32_c(array)
    atomic_write_bytes(path, lambda f: np.lib.format.write_array(f, arr, version=(1, 0), allow_pickle=False))
    return arr


def write_json(path, obj):
    data = (json.dumps(obj, indent=2, allow_nan=False) + "\n").encode("utf-8")
    atomic_write_bytes(path, lambda f: f.write(data))


def tensor_entry(file_name, array):
    return {"file": file_name, "dtype": "f32", "shape": [int(d) for d in array.shape]}
