"""The lens's NPU side keeps the real rows only (npu_probe.lens.boundaries.npu_boundaries), on
recorded launches built here, without a block or a tree:

- every boundary a launch holds is its first real_len rows, seq-first, whatever the launch's
  padded seq; the block's returned dict is cut the same way;
- row-chunked launches (qwen25_3b's swiglu) are placed at their row offsets before the cut;
- so each pairs with the HF side, which holds the real rows only: a padded NPU side would be
  left unpaired ("different shapes") and the lens would silently lose the boundary.

Needs numpy only. run: python3 -m unittest test.python.test_lens_rows -v
"""

import sys
import tempfile
import types
import unittest

import numpy as np

from test.python.support import PROBE

sys.path.insert(0, PROBE)

from npu_probe.emulate import table as probe_table  # noqa: E402
from npu_probe.lens.boundaries import RefSide, npu_boundaries, write_boundaries  # noqa: E402
from npu_probe.lens.capture import Launch  # noqa: E402

CFG = types.SimpleNamespace(emb_dim=128, hidden_dim=256, n_heads=2, n_kv_heads=1, head_dim=64)
DIMS = {"emb": 128, "hidden": 256, "q_dim": 128, "kv_dim": 64}


def rows(seq, cols, tag, first=0):
    """A [seq, cols] buffer whose row r holds first + r + tag / 100 (so a row says where it came from)."""
    return np.repeat((np.arange(first, first + seq, dtype=np.float32) + np.float32(tag / 100))[:, None], cols, axis=1)


def launch(elf, name, seq, index=0, first=0):
    """One recorded launch of `elf` with `seq` rows: every seq-shaped arg a `rows` buffer, the rest zeros."""
    shapes, inputs, outputs = [], {}, {}
    for a in elf["args"]:
        plain = all(d == "seq" or d in DIMS for d in a["shape"])  # not a LUT's flattened product
        dims = [seq if d == "seq" else DIMS[d] for d in a["shape"]] if plain else [1]
        arr = rows(seq, dims[1], a["arg"], first) if a["shape"][:1] == ["seq"] and len(dims) == 2 else np.zeros(dims, np.float32)
        shapes.append(tuple(arr.shape))
        inputs[a["arg"]] = arr
        outputs[a["arg"]] = arr.copy()
    return Launch(index=index, name=name, occurrence=index, shapes=shapes, dtypes=[], static=set(), inputs=inputs, outputs=outputs)


class LensRowsTests(unittest.TestCase):
    def test_launch_boundaries_hold_the_real_rows_only(self):
        spec = probe_table.model_spec("llama32_1b")
        elf = spec["elfs"]["rms_gemms_rope"]
        rec = types.SimpleNamespace(launches=[launch(elf, "rms_gemms_rope", seq=64)], names=["rms_gemms_rope"])
        out = npu_boundaries(rec, spec, CFG, 5, returned={"ffn_out": rows(64, 128, 99)})
        by_arg = {a["boundary"]: a for a in elf["args"] if a.get("boundary")}
        self.assertEqual(set(by_arg) | {"ffn_out"}, set(out))
        for name, b in out.items():
            with self.subTest(boundary=name):
                tag = 99 if name == "ffn_out" else by_arg[name]["arg"]
                self.assertEqual(b.array.shape[0], 5, "real rows only")
                np.testing.assert_array_equal(b.array[:, 0], rows(5, 1, tag)[:, 0])
        # The HF side holds the real rows only: every boundary pairs with it.
        ref = {name: b.array.copy() for name, b in out.items()}
        with tempfile.TemporaryDirectory() as d:
            record = write_boundaries(d, out, RefSide(arrays=ref, capture="test"), "test", True)
        self.assertEqual(record["unpaired"], [])
        self.assertEqual(sorted(e["name"] for e in record["entries"]), sorted(out))

    def test_row_chunked_launches_are_placed_before_the_cut(self):
        spec = probe_table.model_spec("qwen25_3b")
        elf = spec["elfs"]["swiglu"]
        # Two chunks of 64 rows: the real rows (70) run into the second chunk.
        rec = types.SimpleNamespace(launches=[launch(elf, "swiglu", 64, 0, 0), launch(elf, "swiglu", 64, 1, 64)], names=["swiglu", "swiglu"])
        out = npu_boundaries(rec, spec, CFG, 70)
        self.assertEqual(out["swiglu"].array.shape, (70, 256))
        np.testing.assert_array_equal(out["swiglu"].array[:, 0], rows(70, 1, 2)[:, 0])


if __name__ == "__main__":
    unittest.main()
