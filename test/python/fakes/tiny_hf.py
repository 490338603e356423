"""The tiny checkpoint builder the tests share with `npx npu-block-gate fixture hf-tiny`: the one in
scripts/fixture/tiny_hf.py, loaded from there (one builder for the users and the tests)."""

import importlib.util
import os
import sys

_NAME = "npu_block_gate_fixture_tiny_hf"
_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "fixture", "tiny_hf.py")

if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, os.path.normpath(_PATH))
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _mod  # dataclasses look their module up while the file runs
    _spec.loader.exec_module(_mod)
globals().update({k: v for k, v in vars(sys.modules[_NAME]).items() if not k.startswith("__")})
