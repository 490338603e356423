"""Tiny random HuggingFace checkpoints in the HF hub cache layout, for offline tests.

`build(arch, hub_dir)` writes

    <hub_dir>/models--<org>--<name>/blobs/<hash>
    <hub_dir>/models--<org>--<name>/snapshots/<40-hex rev>/{config.json, generation_config.json,
        model.safetensors, tokenizer.json, tokenizer_config.json, ...}   (symlinks into blobs/)
    <hub_dir>/models--<org>--<name>/refs/main                          (the rev, no newline)

so that, with HF_HUB_OFFLINE=1 and HF_HUB_CACHE=<hub_dir> in the environment *before*
huggingface_hub is imported, `AutoModelForCausalLM.from_pretrained("<org>/<name>")`,
`AutoTokenizer.from_pretrained("<org>/<name>")` and the tree's own
`snapshot_download(..., local_files_only=True)` load it with no network.

Architectures (the real models' config.json fields, in their hub (transformers 4.x) form,
at small sizes):
  llama  LlamaForCausalLM like meta-llama/Llama-3.2-1B-Instruct: GQA, rope_theta 500000 with
         llama3 rope_scaling, tie_word_embeddings, head_dim 64; the tokenizer adds a bos.
  smollm2  LlamaForCausalLM like HuggingFaceTB/SmolLM2-1.7B-Instruct: MHA (kv heads = heads),
         rope_theta 130000, no rope scaling, tied embeddings; no bos added.
  qwen2  Qwen2ForCausalLM like Qwen/Qwen2.5-0.5B-Instruct: q/k/v bias, rope_theta 1e6,
         vocab padded beyond the tokenizer (as 151936 > 151665); no bos added.
  qwen3  Qwen3ForCausalLM like Qwen/Qwen3-0.6B: q_norm/k_norm, head_dim 128 independent of
         hidden_size / num_attention_heads.

Weights are random (seeded: the same arch and seed give the same bytes and the same
revision) and stored as bf16. RMSNorm weights (incl. q_norm/k_norm) and the Qwen2 q/k/v
biases are randomised too (transformers initialises them to ones / zeros), so a reference
that skipped them would show. `TinyCheckpoint.config` has the tree's LlamaConfig field names.

Importable without torch: torch, transformers and tokenizers are imported inside functions.
"""

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile

ORG = "npu-block-gate-tests"

# Text the byte-level BPE is trained on: the kind of prompt verify/prompts/*.txt holds.
TRAINING_TEXT = [
    "Introduce me what is GPU",
    "Briefly describe the major milestones in the development of artificial intelligence from 1950 to 2020.",
    "Compare and contrast artificial intelligence with human intelligence in terms of processing information.",
    "Describe the basic components of a neural network and how it can be trained.",
    "Write a short story about a robot that dreams for the first time.",
    "The capital of France is Paris, and the capital of Germany is Berlin.",
    "A neural processing unit runs the transformer block: attention, then the feed-forward network.",
    "Once upon a time there was a small model that learned to count: one, two, three, four, five.",
    "def add(a, b):\n    return a + b\n",
]
BPE_VOCAB_SIZE = 640  # before special tokens (256 byte symbols + merges)

# The pre-tokenizer split patterns of the real tokenizer.json files (Llama 3 groups digits
# by up to three, Qwen splits every digit).
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")

LLAMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{{ m['content'] | trim }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
QWEN_CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# Per architecture: the hub id, the real model it imitates, its special tokens (appended after
# the BPE vocabulary, as the real ones sit at the end), and config.json at a small size.
ARCHS = {
    "llama": {
        "name": "tiny-llama-3.2-instruct",
        "like": "meta-llama/Llama-3.2-1B-Instruct",
        "specials": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                     "<|eom_id|>", "<|eot_id|>"],
        "bos": "<|begin_of_text|>",
        "eos": "<|eot_id|>",
        "pad": None,
        "add_bos": True,
        "normalizer": None,
        "split_regex": LLAMA3_SPLIT,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 131072,
        "chat_template": LLAMA_CHAT_TEMPLATE,
        "vocab_multiple": 1,  # Llama 3.2: vocab_size 128256 == the tokenizer's size
        "config": {
            "architectures": ["LlamaForCausalLM"],
            "attention_bias": False,
            "attention_dropout": 0.0,
            "head_dim": 64,
            "hidden_act": "silu",
            "hidden_size": 256,
            "initializer_range": 0.02,
            "intermediate_size": 512,
            "max_position_embeddings": 131072,
            "mlp_bias": False,
            "model_type": "llama",
            "num_attention_heads": 4,
            "num_hidden_layers": 3,
            "num_key_value_heads": 2,
            "pretraining_tp": 1,
            "rms_norm_eps": 1e-05,
            "rope_scaling": {
                "factor": 32.0,
                "high_freq_factor": 4.0,
                "low_freq_factor": 1.0,
                "original_max_position_embeddings": 8192,
                "rope_type": "llama3",
            },
            "rope_theta": 500000.0,
            "tie_word_embeddings": True,
            "torch_dtype": "bfloat16",
            "transformers_version": "4.45.0.dev0",
            "use_cache": True,
        },
        "generation": {"do_sample": True, "temperature": 0.6, "top_p": 0.9},
    },
    "smollm2": {
        "name": "tiny-smollm2-instruct",
        "like": "HuggingFaceTB/SmolLM2-1.7B-Instruct",
        "specials": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        "bos": "<|im_start|>",
        "eos": "<|im_end|>",
        "pad": "<|im_end|>",
        "add_bos": False,
        "normalizer": None,
        "split_regex": LLAMA3_SPLIT,
        "tokenizer_class": "GPT2Tokenizer",
        "model_max_length": 8192,
        "chat_template": QWEN_CHAT_TEMPLATE,
        "vocab_multiple": 1,
        "config": {
            "architectures": ["LlamaForCausalLM"],
            "attention_bias": False,
            "attention_dropout": 0.0,
            "head_dim": 64,
            "hidden_act": "silu",
            "hidden_size": 256,
            "initializer_range": 0.02,
            "intermediate_size": 512,
            "max_position_embeddings": 8192,
            "mlp_bias": False,
            "model_type": "llama",
            "num_attention_heads": 4,
            "num_hidden_layers": 3,
            "num_key_value_heads": 4,  # MHA, as SmolLM2-1.7B (32/32)
            "pretraining_tp": 1,
            "rms_norm_eps": 1e-05,
            "rope_scaling": None,
            "rope_theta": 130000.0,
            "tie_word_embeddings": True,
            "torch_dtype": "bfloat16",
            "transformers_version": "4.42.3",
            "use_cache": True,
        },
        "generation": {"do_sample": True, "temperature": 0.2, "top_p": 0.9},
    },
    "qwen2": {
        "name": "tiny-qwen2.5-instruct",
        "like": "Qwen/Qwen2.5-0.5B-Instruct",
        "specials": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        "bos": None,
        "eos": "<|im_end|>",
        "pad": "<|endoftext|>",
        "add_bos": False,
        "normalizer": "NFC",
        "split_regex": QWEN_SPLIT,
        "tokenizer_class": "Qwen2Tokenizer",
        "model_max_length": 131072,
        "chat_template": QWEN_CHAT_TEMPLATE,
        "vocab_multiple": 128,  # Qwen2.5: 151936 in config.json, 151665 in the tokenizer
        "config": {
            "architectures": ["Qwen2ForCausalLM"],
            "attention_dropout": 0.0,
            "hidden_act": "silu",
            "hidden_size": 256,
            "initializer_range": 0.02,
            "intermediate_size": 512,
            "max_position_embeddings": 32768,
            "max_window_layers": 3,
            "model_type": "qwen2",
            "num_attention_heads": 4,
            "num_hidden_layers": 3,
            "num_key_value_heads": 2,
            "rms_norm_eps": 1e-06,
            "rope_theta": 1000000.0,
            "sliding_window": 32768,
            "tie_word_embeddings": True,
            "torch_dtype": "bfloat16",
            "transformers_version": "4.43.1",
            "use_cache": True,
            "use_sliding_window": False,
        },
        "generation": {"do_sample": True, "repetition_penalty": 1.05, "temperature": 0.7, "top_k": 20, "top_p": 0.8},
    },
    "qwen3": {
        "name": "tiny-qwen3",
        "like": "Qwen/Qwen3-0.6B",
        "specials": ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"],
        "bos": None,
        "eos": "<|im_end|>",
        "pad": "<|endoftext|>",
        "add_bos": False,
        "normalizer": "NFC",
        "split_regex": QWEN_SPLIT,
        "tokenizer_class": "Qwen2Tokenizer",
        "model_max_length": 131072,
        "chat_template": QWEN_CHAT_TEMPLATE,
        "vocab_multiple": 128,
        "config": {
            "architectures": ["Qwen3ForCausalLM"],
            "attention_bias": False,
            "attention_dropout": 0.0,
            "head_dim": 128,  # != hidden_size / num_attention_heads (64), as in Qwen3-0.6B
            "hidden_act": "silu",
            "hidden_size": 256,
            "initializer_range": 0.02,
            "intermediate_size": 512,
            "max_position_embeddings": 40960,
            "max_window_layers": 3,
            "model_type": "qwen3",
            "num_attention_heads": 4,
            "num_hidden_layers": 3,
            "num_key_value_heads": 2,
            "rms_norm_eps": 1e-06,
            "rope_scaling": None,
            "rope_theta": 1000000,
            "sliding_window": None,
            "tie_word_embeddings": True,
            "torch_dtype": "bfloat16",
            "transformers_version": "4.51.0",
            "use_cache": True,
            "use_sliding_window": False,
        },
        "generation": {"do_sample": True, "temperature": 0.6, "top_k": 20, "top_p": 0.95},
    },
}


@dataclasses.dataclass
class TreeConfig:
    """The field names of the tree's `<model>_weights.LlamaConfig` (Qwen's extras included)."""

    n_layers: int
    emb_dim: int
    n_heads: int
    head_dim: int
    n_kv_heads: int
    hidden_dim: int
    vocab_size: int
    rope_base: float
    qkv_bias: bool = False
    qk_norm: bool = False
    tie_word_embeddings: bool = True
    dtype: object = None  # ml_dtypes.bfloat16 when importable (the tree's own choice)


@dataclasses.dataclass
class TinyCheckpoint:
    arch: str
    hf_id: str  # "<org>/<name>", what from_pretrained takes
    hub_dir: str  # the HF_HUB_CACHE to set
    repo_dir: str  # <hub_dir>/models--<org>--<name>
    snapshot: str  # <repo_dir>/snapshots/<revision>
    revision: str
    config: TreeConfig
    hf_config: dict  # config.json as written
    like: str  # the real model imitated

    def as_dict(self):
        d = dataclasses.asdict(self)
        d["config"] = {k: v for k, v in d["config"].items() if k != "dtype"}
        return d


def offline_env(hub_dir):
    """Environment for a process that must load these checkpoints with no network. Set it
    before huggingface_hub is imported: it reads these variables once, at import."""
    return {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_CACHE": os.path.abspath(hub_dir),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_XET": "1",
    }


def hf_id_for(arch):
    return f"{ORG}/{ARCHS[arch]['name']}"


def tree_config(hf_config):
    """TreeConfig from a config.json dict (hub form)."""
    c = hf_config
    heads = c["num_attention_heads"]
    try:
        import ml_dtypes  # noqa: PLC0415 - optional

        dtype = ml_dtypes.bfloat16
    except ImportError:
        dtype = None
    return TreeConfig(
        n_layers=c["num_hidden_layers"],
        emb_dim=c["hidden_size"],
        n_heads=heads,
        head_dim=c.get("head_dim") or c["hidden_size"] // heads,
        n_kv_heads=c.get("num_key_value_heads", heads),
        hidden_dim=c["intermediate_size"],
        vocab_size=c["vocab_size"],
        rope_base=float(c["rope_theta"]),
        qkv_bias=c["model_type"] == "qwen2" or bool(c.get("attention_bias", False)),
        qk_norm=c["model_type"] == "qwen3",
        tie_word_embeddings=bool(c.get("tie_word_embeddings", False)),
        dtype=dtype,
    )


# ---------------------------------------------------------------------------
# Tokenizer


def _tokenizer_files(spec):
    """({filename: bytes}, len(tokenizer), {special: id}) of a byte-level BPE trained on
    TRAINING_TEXT with the real family's pipeline (Llama 3: split regex + ByteLevel, bos by
    TemplateProcessing; Qwen: NFC + split regex + ByteLevel, no bos), the special tokens
    appended after the BPE vocabulary, saved with PreTrainedTokenizerFast.save_pretrained."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: PLC0415
    from transformers import PreTrainedTokenizerFast  # noqa: PLC0415

    tok = Tokenizer(models.BPE())
    if spec["normalizer"] == "NFC":
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(spec["split_regex"]), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=BPE_VOCAB_SIZE,
        min_frequency=1,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator(TRAINING_TEXT, trainer=trainer)
    tok.add_special_tokens(spec["specials"])
    byte_level = processors.ByteLevel(trim_offsets=False)
    if spec["add_bos"]:
        bos = spec["bos"]
        bos_id = tok.token_to_id(bos)
        tok.post_processor = processors.Sequence([
            byte_level,
            processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bos_id)]),
        ])
    else:
        tok.post_processor = byte_level
    kwargs = {"tokenizer_object": tok, "eos_token": spec["eos"], "model_max_length": spec["model_max_length"]}
    for key in ("bos", "pad"):
        if spec[key]:
            kwargs[f"{key}_token"] = spec[key]
    fast = PreTrainedTokenizerFast(**kwargs)
    fast.chat_template = spec["chat_template"]
    with tempfile.TemporaryDirectory(prefix="tiny-hf-tok-") as d:
        fast.save_pretrained(d)
        files = {}
        for name in sorted(os.listdir(d)):
            with open(os.path.join(d, name), "rb") as f:
                files[name] = f.read()
    # transformers 5 writes its own backend class name ("TokenizersBackend"); write the class
    # the real hub checkpoint names. (5.x ignores the hub's class for qwen2 and loads
    # Qwen2Tokenizer, which rebuilds NFC + split + ByteLevel from vocab/merges: the Qwen
    # pipeline above is that one, so either path gives the same ids.)
    tc = json.loads(files["tokenizer_config.json"])
    tc["tokenizer_class"] = spec["tokenizer_class"]
    files["tokenizer_config.json"] = (json.dumps(tc, indent=2, sort_keys=True) + "\n").encode()
    ids = {t: tok.token_to_id(t) for t in spec["specials"]}
    return files, len(fast), ids


# ---------------------------------------------------------------------------
# Weights


def _weights_bytes(hf_config, seed):
    """model.safetensors bytes: a seeded random model of `hf_config`, bf16, tied lm_head left out."""
    import torch  # noqa: PLC0415
    from safetensors.torch import save  # noqa: PLC0415
    from transformers import AutoConfig, AutoModelForCausalLM  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="tiny-hf-cfg-") as d:
        with open(os.path.join(d, "config.json"), "w", encoding="utf-8") as f:
            json.dump(hf_config, f)
        cfg = AutoConfig.from_pretrained(d)  # what transformers itself reads from config.json
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):  # input/post_attention/final norm, q_norm, k_norm
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):  # Qwen2 q/k/v: zeros at init
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
    state = {}
    for name, t in model.state_dict().items():
        if name == "lm_head.weight" and hf_config.get("tie_word_embeddings"):
            continue  # the hub checkpoints of tied models store only embed_tokens
        state[name] = t.detach().to(torch.bfloat16).contiguous()
    return save(state, metadata={"format": "pt"})


# ---------------------------------------------------------------------------
# Hub layout


def _git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _write_repo(repo_dir, files):
    """blobs/ (LFS files by sha256, others by git blob sha1, as the hub names them),
    snapshots/<rev>/ symlinks, refs/main. Returns (revision, snapshot dir)."""
    blob_names = {}
    for name, data in files.items():
        blob_names[name] = hashlib.sha256(data).hexdigest() if name.endswith(".safetensors") else _git_blob_sha1(data)
    manifest = "".join(f"{n}\0{blob_names[n]}\n" for n in sorted(files)).encode()
    revision = hashlib.sha1(manifest).hexdigest()
    blobs = os.path.join(repo_dir, "blobs")
    snapshot = os.path.join(repo_dir, "snapshots", revision)
    if os.path.isdir(snapshot):
        shutil.rmtree(snapshot)
    os.makedirs(blobs, exist_ok=True)
    os.makedirs(snapshot)
    os.makedirs(os.path.join(repo_dir, "refs"), exist_ok=True)
    for name, data in files.items():
        blob = os.path.join(blobs, blob_names[name])
        with open(blob, "wb") as f:
            f.write(data)
        link = os.path.join(snapshot, name)
        try:
            os.symlink(os.path.relpath(blob, snapshot), link)
        except OSError:  # no symlinks (Windows without developer mode): huggingface_hub copies too
            shutil.copyfile(blob, link)
    with open(os.path.join(repo_dir, "refs", "main"), "w", encoding="utf-8") as f:
        f.write(revision)
    return revision, snapshot


def build(arch, hub_dir, seed=0):
    """Write a tiny random checkpoint of `arch` ("llama", "smollm2", "qwen2", "qwen3") under `hub_dir`."""
    spec = ARCHS[arch]
    hf_id = hf_id_for(arch)
    tok_files, n_tokens, special_ids = _tokenizer_files(spec)
    multiple = spec["vocab_multiple"]
    hf_config = dict(spec["config"])
    hf_config["vocab_size"] = -(-n_tokens // multiple) * multiple
    if arch == "smollm2":
        hf_config["bos_token_id"] = special_ids["<|im_start|>"]
        hf_config["eos_token_id"] = special_ids["<|im_end|>"]
        gen_ids = {"bos_token_id": hf_config["bos_token_id"], "eos_token_id": hf_config["eos_token_id"],
                   "pad_token_id": special_ids["<|im_end|>"]}
    elif arch == "llama":
        hf_config["bos_token_id"] = special_ids["<|begin_of_text|>"]
        hf_config["eos_token_id"] = [special_ids[t] for t in ("<|end_of_text|>", "<|eom_id|>", "<|eot_id|>")]
        gen_ids = {"bos_token_id": hf_config["bos_token_id"], "eos_token_id": hf_config["eos_token_id"]}
    else:
        endoftext, im_end = special_ids["<|endoftext|>"], special_ids["<|im_end|>"]
        hf_config["bos_token_id"] = endoftext
        hf_config["eos_token_id"] = im_end
        gen_ids = {"bos_token_id": endoftext, "pad_token_id": endoftext, "eos_token_id": [im_end, endoftext]}
    generation = {**gen_ids, **spec["generation"], "transformers_version": hf_config["transformers_version"]}

    def js(d):
        return (json.dumps(d, indent=2, sort_keys=True) + "\n").encode()

    files = dict(tok_files)
    files["config.json"] = js(hf_config)
    files["generation_config.json"] = js(generation)
    files["model.safetensors"] = _weights_bytes(hf_config, seed)
    repo_dir = os.path.join(os.path.abspath(hub_dir), "models--" + hf_id.replace("/", "--"))
    revision, snapshot = _write_repo(repo_dir, files)
    return TinyCheckpoint(
        arch=arch,
        hf_id=hf_id,
        hub_dir=os.path.abspath(hub_dir),
        repo_dir=repo_dir,
        snapshot=snapshot,
        revision=revision,
        config=tree_config(hf_config),
        hf_config=hf_config,
        like=spec["like"],
    )


def build_all(hub_dir, archs=tuple(ARCHS), seed=0):
    return {a: build(a, hub_dir, seed=seed) for a in archs}


if __name__ == "__main__":  # python test/python/fakes/tiny_hf.py HUB_DIR [arch...]
    import sys

    out = sys.argv[1]
    for a in sys.argv[2:] or ARCHS:
        ck = build(a, out)
        print(ck.hf_id, ck.revision, ck.snapshot)
