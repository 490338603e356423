"""Verify adapter for tiny_qwen3 (air-mini): its checkpoints and prefill length.

The contract's functions (resolve_model, hf_reference, build_config,
build_runner, tokenize, prompts) are bound to a VerifyAdapter over this
model's modules; shared/infra/adapter.py documents them.
"""

import sys
from pathlib import Path

_LLMS_DIR = str(Path(__file__).resolve().parent.parent)
if _LLMS_DIR not in sys.path:
    sys.path.insert(0, _LLMS_DIR)

from shared.infra.adapter import VerifyAdapter, put_model_on_path  # noqa: E402

put_model_on_path(__file__)
import tiny_qwen3_prefill  # noqa: E402
import tiny_qwen3_weights  # noqa: E402
from tiny_qwen3_prefill import run_transformer_block_qwen3 as run_prefill_block  # noqa: E402,F401 - called by name, as the real adapters do

MODEL_KEY = "tiny_qwen3"
MODEL_CHOICES = {
    "base": "air-mini/tiny-qwen3",
    "instruct": "air-mini/tiny-qwen3-instruct",
}
DEFAULT_MODEL = "instruct"
PREFILL_SEQ_LEN = 128  # NPU prefill length (multiple of 64); prompts are padded to it

_ADAPTER = VerifyAdapter(MODEL_KEY, __file__, MODEL_CHOICES, PREFILL_SEQ_LEN,
                         weights=tiny_qwen3_weights, prefill=tiny_qwen3_prefill, module=sys.modules[__name__])
resolve_model = _ADAPTER.resolve_model
hf_reference = _ADAPTER.hf_reference  # bf16: the reference is the same checkpoint
build_config = _ADAPTER.build_config  # tiny_qwen3_weights.LlamaConfig()
build_runner = _ADAPTER.build_runner  # -> NpuRunner
tokenize = _ADAPTER.tokenize
prompts = _ADAPTER.prompts
default_cache_dir = _ADAPTER.default_cache_dir
NpuRunner = _ADAPTER.NpuRunner
