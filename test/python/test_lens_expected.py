"""The error budget's expected side and the eps finding, without running a block (issue 29.2, 29.3):

- from_seq_first writes seq-first rows back into an ELF buffer where to_seq_first reads them
  (padding columns and rows beyond them untouched), for the seq-first layout with N padding and
  the head-first FlashAttention layout (q heads-first, v dv-chunked): the hardware twins' pass
  feeds each launch through it;
- tree_eps reads the tree's RMSNorm constant with its line, statically (a computed value or a
  symlinked file gives nothing), and the real tree's is 1e-5 (the issue: the tree's eps 1e-5
  against Qwen's 1e-6).

Needs numpy; the last test needs the real tree.

run: .venv/bin/python -m unittest test.python.test_lens_expected -v
"""

import os
import sys
import tempfile
import unittest

import numpy as np

from test.python.support import PROBE, find_mlir_air, missing_real_tree

sys.path.insert(0, PROBE)

from npu_probe.emulate import table as probe_table  # noqa: E402
from npu_probe.lens import eps as probe_eps  # noqa: E402

NO_TREE = missing_real_tree(probe_eps.EPS_FILE)


class FromSeqFirstTests(unittest.TestCase):
    def check(self, spec, dims, layout, shape):
        rng = np.random.default_rng(3)
        buf = rng.standard_normal(shape).astype(np.float32)
        view = probe_table.to_seq_first(buf, spec, dims, layout)
        rows = rng.standard_normal((dims["seq"] - 2, view.shape[1])).astype(np.float32)
        out = probe_table.from_seq_first(buf, rows, spec, dims, layout)
        self.assertEqual(out.shape, buf.shape)
        got = probe_table.to_seq_first(out, spec, dims, layout)
        self.assertTrue(np.array_equal(got[: rows.shape[0]], rows), "the rows written are read back")
        self.assertTrue(np.array_equal(got[rows.shape[0]:], view[rows.shape[0]:]), "the rows beyond them kept")
        return buf, out

    def test_seq_first_with_padded_columns(self):
        # qwen25_0_5b's Q GEMM output: N padded to 1024, the lens slices q_dim off it
        spec = {"arg": 4, "role": "q", "shape": ["seq", 1024], "cols": "q_dim"}
        dims = {"seq": 6, "q_dim": 896}
        buf, out = self.check(spec, dims, "seq-first", (6, 1024))
        self.assertTrue(np.array_equal(out[:, 896:], buf[:, 896:]), "padding columns untouched")

    def test_head_first_flash_attention(self):
        dims = {"seq": 5, "n_heads": 4, "n_kv_heads": 2, "head_dim": 128, "dv_tile": 64, "dv_chunks": 2}
        self.check({"arg": 0, "role": "q", "shape": ["n_heads", "seq", "head_dim"]}, dims, "head-first", (4, 5, 128))
        self.check({"arg": 2, "role": "v", "shape": ["n_kv_heads*dv_chunks", "seq", "dv_tile"]}, dims, "head-first",
                   (4, 5, 64))


class TreeEpsTests(unittest.TestCase):
    def write(self, root, text):
        path = os.path.join(root, *probe_eps.EPS_FILE.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_the_constant_and_its_line_statically(self):
        with tempfile.TemporaryDirectory() as root:
            self.write(root, '"""doc"""\nimport os\n\nEPS = 2e-6\n\ndef f():\n    EPS = 1\n')
            self.assertEqual(probe_eps.tree_eps(root), (2e-6, 4))
            self.write(root, "import os\nEPS = float(os.environ['X'])\n")
            self.assertIsNone(probe_eps.tree_eps(root), "a computed value is not read (the file is never run)")
            self.write(root, "EPS = (\n")
            self.assertIsNone(probe_eps.tree_eps(root), "a file that does not parse gives nothing")
        with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as other:
            target = self.write(other, "EPS = 1e-5\n")
            link = os.path.join(root, *probe_eps.EPS_FILE.split("/"))
            os.makedirs(os.path.dirname(link))
            os.symlink(target, link)
            self.assertIsNone(probe_eps.tree_eps(root), "a symlinked file is not followed")

    @unittest.skipIf(NO_TREE, NO_TREE)
    def test_the_real_tree_builds_its_norms_with_1e_5(self):
        got = probe_eps.tree_eps(find_mlir_air())
        self.assertIsNotNone(got)
        self.assertEqual(got[0], 1e-5)
        with open(os.path.join(find_mlir_air(), *probe_eps.EPS_FILE.split("/")), encoding="utf-8") as f:
            self.assertRegex(f.read().splitlines()[got[1] - 1], r"^EPS\s*=")


if __name__ == "__main__":
    unittest.main()
