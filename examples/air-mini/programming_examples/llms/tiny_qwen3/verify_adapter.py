"""Verify adapter for tiny_qwen3 (air-mini).

Same API as a real mlir-air `<model>/verify_adapter.py`: MODEL_CHOICES,
DEFAULT_MODEL, resolve_model, hf_reference, build_config and build_runner (an
NpuRunner whose prefill() returns a PrefillRecord of the emulated NPU). There is
no build_hf_model: as for the real bf16 models, the reference is HfRunner on
the same checkpoint (verify/runners/hf_runner.py finds it by id). Extra for air-mini: `tokenize(prompt)`, a deterministic toy
tokenizer (shared/infra/toy_tokenizer.py) standing in for
AutoTokenizer.from_pretrained(name).encode(prompt), and PREFILL_SEQ_LEN, the
length the NPU input is zero-padded to (the real adapters use 2048).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np

_THIS_DIR = Path(__file__).resolve().parent
_LLMS_DIR = _THIS_DIR.parent
_VERIFY = _LLMS_DIR / "verify"
for _p in (str(_LLMS_DIR), str(_VERIFY), str(_THIS_DIR)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from shared.infra.cache import KernelCache  # noqa: E402
from shared.infra import toy_tokenizer  # noqa: E402
from tiny_qwen3_prefill import compile_all_kernels, run_prefill  # noqa: E402
from tiny_qwen3_weights import LlamaConfig, load_weights, generate_rope_lut  # noqa: E402
from runners._records import PrefillRecord  # noqa: E402

MODEL_KEY = "tiny_qwen3"
MODEL_CHOICES = {
    "base": "air-mini/tiny-qwen3",
    "instruct": "air-mini/tiny-qwen3-instruct",
}
DEFAULT_MODEL = "instruct"
PREFILL_SEQ_LEN = 128  # NPU prefill length (multiple of 64); prompts are padded to it


def resolve_model(model_choice_or_id: str) -> str:
    """A MODEL_CHOICES key (base/instruct) or an id -> the id."""
    return MODEL_CHOICES.get(model_choice_or_id, model_choice_or_id)


def hf_reference(npu_model_name: str) -> str:
    """bf16 model: its HF reference is the same checkpoint."""
    return npu_model_name


def build_config():
    return LlamaConfig()


def tokenize(prompt: str) -> list:
    """Toy tokenizer: BOS + one id per word/punctuation piece (see toy_tokenizer)."""
    return toy_tokenizer.encode(prompt, build_config().vocab_size)


def prompts(style: str = "base") -> list:
    """The prompts of verify/prompts/<style>.txt (first = canonical)."""
    return toy_tokenizer.read_prompts(_VERIFY / "prompts" / f"{style}.txt")


def default_cache_dir() -> Path:
    env = os.environ.get("AIR_MINI_CACHE_DIR")
    if env:
        return Path(env) / MODEL_KEY / "prefill_kernel_cache"
    return _THIS_DIR / "build_peano" / "prefill_kernel_cache"


def _make_cache(cache_dir=None):
    d = Path(cache_dir) if cache_dir else default_cache_dir()
    try:
        return KernelCache(cache_dir=d)
    except OSError:
        return KernelCache(cache_dir=tempfile.mkdtemp(prefix=f"air-mini-{MODEL_KEY}-"))


def build_runner(model_name, config, max_seq, tokenizer=None, *, npu_attn=True,
                 lite_mode=False, cache_dir=None):
    """Load the weights, compile the kernels, return an NpuRunner."""
    weights = load_weights(model_name, config=config)
    return NpuRunner(weights, config, max_seq, tokenizer, npu_attn=npu_attn,
                     lite_mode=lite_mode, cache_dir=cache_dir)


class NpuRunner:
    """Prefill on the emulated NPU; compiles every kernel at construction."""

    name = "npu_bf16"

    def __init__(self, weights, config, max_seq, tokenizer=None, npu_attn=True,
                 lite_mode=False, cache_dir=None):
        self.weights = weights
        self.config = config
        self.max_seq = int(max_seq)
        self.npu_attn = npu_attn
        self.cpu_attn = not npu_attn
        self.lite_mode = lite_mode
        self._tokenizer = tokenizer
        cap = -(-min(self.max_seq, PREFILL_SEQ_LEN) // 64) * 64
        self.seq_len = max(64, cap)
        self.cache = _make_cache(cache_dir)
        compile_all_kernels(self.cache, config, self.seq_len, cpu_attn=self.cpu_attn)
        self.rope_lut = generate_rope_lut(config, self.seq_len)

    def prefill(self, prompt_tokens) -> PrefillRecord:
        tokens = np.asarray(prompt_tokens, dtype=np.int64).reshape(-1)
        n = tokens.size
        if n == 0 or n > self.seq_len:
            raise ValueError(f"prompt has {n} tokens; this runner pads to {self.seq_len}")
        outs, final, logits = run_prefill(self.weights, self.config, self.cache, tokens,
                                          self.seq_len, rope_lut=self.rope_lut,
                                          cpu_attn=self.cpu_attn)
        top1 = int(np.argmax(logits))
        if self.lite_mode:
            return PrefillRecord([], np.empty((0,), np.float32), logits, top1)
        inter = [{"ffn_out": np.array(o[:n], dtype=np.float32)} for o in outs[:-1]]
        inter.append({})
        return PrefillRecord(inter, np.array(final[:n], dtype=np.float32), logits, top1)
