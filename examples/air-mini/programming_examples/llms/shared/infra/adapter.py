"""The verify adapter's machinery, shared by every air-mini model.

Each `<model>/verify_adapter.py` has the API of a real mlir-air adapter:
MODEL_CHOICES, DEFAULT_MODEL, resolve_model, hf_reference, build_config and
build_runner (an NpuRunner whose prefill() returns a PrefillRecord of the
emulated NPU). There is no build_hf_model: as for the real bf16 models, the
reference is HfRunner on the same checkpoint (verify/runners/hf_runner.py
finds it by id). Extra for air-mini: `tokenize(prompt)`, a deterministic toy
tokenizer (shared/infra/toy_tokenizer.py) standing in for
AutoTokenizer.from_pretrained(name).encode(prompt), and PREFILL_SEQ_LEN, the
length the NPU input is zero-padded to (the real adapters use 2048).

A model's adapter declares what is its own (MODEL_CHOICES, DEFAULT_MODEL,
PREFILL_SEQ_LEN, its `<model>_weights` and `<model>_prefill` modules), builds
a `VerifyAdapter` from them and binds the contract's functions to that
adapter's methods, so every model answers the contract with this code.
`NpuRunner` compiles every kernel at construction, as the real adapters do.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import toy_tokenizer
from .bf16 import to_bf16
from .block import embed_tokens
from .cache import KernelCache


def put_model_on_path(model_file):
    """Put llms/, llms/verify/ and the model dir first on sys.path (the model
    dir first), as verify_runner does: the adapters import `runners._records`
    and their sibling modules by bare name."""
    model_dir = Path(model_file).resolve().parent
    llms_dir = model_dir.parent
    for p in (str(llms_dir), str(llms_dir / "verify"), str(model_dir)):
        if p not in sys.path:
            sys.path.insert(0, p)


class VerifyAdapter:
    """The verify_runner contract for one model.

    model_key: the model dir's name (e.g. "tiny_llama").
    model_file: the adapter's `__file__` (locates the model dir and verify/).
    choices: MODEL_CHOICES, {"base": id, "instruct": id}.
    prefill_seq_len: the length the NPU input is zero-padded to (multiple of 64).
    weights: the model's `<model>_weights` module (LlamaConfig, load_weights,
        generate_rope_lut).
    prefill: the model's `<model>_prefill` module (compile_all_kernels, run_prefill).
    module: the `verify_adapter` module itself; its global `run_prefill_block` is
        the block function the runner's layer loop calls, looked up at call time
        as a real adapter's loop does.
    """

    def __init__(self, model_key, model_file, choices, prefill_seq_len, *, weights, prefill, module=None):
        self.model_key = model_key
        self.model_dir = Path(model_file).resolve().parent
        self.verify_dir = self.model_dir.parent / "verify"
        self.choices = choices
        self.prefill_seq_len = prefill_seq_len
        self.weights = weights
        self.prefill_module = prefill
        self.module = module
        # This model's runner class, so that `verify_adapter.NpuRunner(weights,
        # config, max_seq, ...)` works as it does in a real adapter.
        self.NpuRunner = type("NpuRunner", (NpuRunner,), {"model": self})

    def resolve_model(self, model_choice_or_id: str) -> str:
        """A MODEL_CHOICES key (base/instruct) or an id -> the id."""
        return self.choices.get(model_choice_or_id, model_choice_or_id)

    def hf_reference(self, npu_model_name: str) -> str:
        """bf16 model: its HF reference is the same checkpoint."""
        return npu_model_name

    def build_config(self):
        return self.weights.LlamaConfig()

    def tokenize(self, prompt: str) -> list:
        """Toy tokenizer: BOS + one id per word/punctuation piece (see toy_tokenizer)."""
        return toy_tokenizer.encode(prompt, self.build_config().vocab_size)

    def prompts(self, style: str = "base") -> list:
        """The prompts of verify/prompts/<style>.txt (first = canonical)."""
        return toy_tokenizer.read_prompts(self.verify_dir / "prompts" / f"{style}.txt")

    def default_cache_dir(self) -> Path:
        env = os.environ.get("AIR_MINI_CACHE_DIR")
        if env:
            return Path(env) / self.model_key / "prefill_kernel_cache"
        return self.model_dir / "build_peano" / "prefill_kernel_cache"

    def make_cache(self, cache_dir=None):
        d = Path(cache_dir) if cache_dir else self.default_cache_dir()
        try:
            return KernelCache(cache_dir=d)
        except OSError:
            return KernelCache(cache_dir=tempfile.mkdtemp(prefix=f"air-mini-{self.model_key}-"))

    def build_runner(self, model_name, config, max_seq, tokenizer=None, *, npu_attn=True,
                     lite_mode=False, cache_dir=None):
        """Load the weights, compile the kernels, return an NpuRunner."""
        weights = self.weights.load_weights(model_name, config=config)
        return self.NpuRunner(weights, config, max_seq, tokenizer, npu_attn=npu_attn,
                              lite_mode=lite_mode, cache_dir=cache_dir)


class NpuRunner:
    """Prefill on the emulated NPU; compiles every kernel at construction.

    `model` (a VerifyAdapter) is bound by VerifyAdapter.NpuRunner."""

    name = "npu_bf16"
    model: VerifyAdapter = None

    def __init__(self, weights, config, max_seq, tokenizer=None, npu_attn=True,
                 lite_mode=False, cache_dir=None):
        from runners._records import PrefillRecord  # verify/ is on sys.path (put_model_on_path)

        self._record = PrefillRecord
        self.weights = weights
        self.config = config
        self.max_seq = int(max_seq)
        self.npu_attn = npu_attn
        self.cpu_attn = not npu_attn
        self.lite_mode = lite_mode
        self._tokenizer = tokenizer
        cap = -(-min(self.max_seq, self.model.prefill_seq_len) // 64) * 64
        self.seq_len = max(64, cap)
        self.cache = self.model.make_cache(cache_dir)
        self.model.prefill_module.compile_all_kernels(self.cache, config, self.seq_len,
                                                      cpu_attn=self.cpu_attn)
        self.rope_lut = self.model.weights.generate_rope_lut(config, self.seq_len)

    def prefill(self, prompt_tokens):
        tokens = np.asarray(prompt_tokens, dtype=np.int64).reshape(-1)
        n = tokens.size
        if n == 0 or n > self.seq_len:
            raise ValueError(f"prompt has {n} tokens; this runner pads to {self.seq_len}")
        outs, final, logits = self.model.prefill_module.run_prefill(
            self.weights, self.config, self.cache, tokens, self.seq_len,
            rope_lut=self.rope_lut, cpu_attn=self.cpu_attn)
        top1 = int(np.argmax(logits))
        if self.lite_mode:
            return self._record([], np.empty((0,), np.float32), logits, top1)
        inter = self._layer_intermediates(tokens)
        inter[-1] = {}  # the last layer's cell is the post-final-norm hidden (final_hidden_normed)
        return self._record(inter, np.array(final[:n], dtype=np.float32), logits, top1)

    def _layer_intermediates(self, tokens):
        """The real adapters' diagnosis loop, kept as they write it: each layer's
        ffn_out is `np.asarray(ints["ffn_out"])[:prompt_len]`, NOT a copy. The
        block returns views of one KernelCache output buffer that the next layer
        overwrites, so a caller that wants every layer must copy each block's
        outputs when they are produced (npu-block-gate's probe does)."""
        run_block = getattr(self.model.module, "run_prefill_block", None) if self.model.module else None
        if run_block is None:
            run_block = self.model.prefill_module.run_transformer_block
        n = tokens.size
        x = to_bf16(embed_tokens(self.weights, tokens, self.seq_len))
        inter = []
        for li, lw in enumerate(self.weights.layers):
            x, ints = run_block(x, lw, self.rope_lut, self.config, self.cache, layer_idx=li,
                                cpu_attn=self.cpu_attn, verbose=False)
            inter.append({"ffn_out": np.asarray(ints["ffn_out"])[:n]})
        return inter
