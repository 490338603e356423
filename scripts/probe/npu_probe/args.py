"""The command line (standard library only, so `--help` and `plan` work anywhere)."""

import argparse
import sys

from npu_probe.core.contract import EXIT_BAD_INPUT, NPU_LOCK_TIMEOUT, TWIN_EPS, TWIN_PRECISION_ALIASES, TWIN_PRECISIONS

COMMANDS = ("plan", "plans", "config", "block", "check", "bisect")


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, exit 2, like every other bad input."""

    def error(self, message):
        sys.stderr.write(f"probe: error: {self.prog}: {message}\n")
        sys.stderr.flush()
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser():
    p = _Parser(
        prog="probe",
        description=(
            "Run transformer block 0 of an mlir-air LLM on the NPU and the HF bf16 reference, "
            "and write the run dir npu-block-gate judges."
        ),
        epilog="Exit codes: 0 ok, 2 bad input or a tree Phase 2 cannot run on, 3 environment or a crash "
        "inside the tree, 4 this Python has no numpy.",
    )
    sub = p.add_subparsers(dest="command", metavar="{" + ",".join(COMMANDS) + "}", parser_class=_Parser)
    sub.required = True

    def model_args(sp, required=True):
        sp.add_argument("--model-dir", required=required, metavar="DIR",
                        help="the model dir, programming_examples/llms/<model> (or its name under --air-root)")
        sp.add_argument("--air-root", metavar="ROOT", help="the mlir-air repo root (default: found above --model-dir)")
        sp.add_argument("--prompt-style", default=None, metavar="STYLE",
                        help="base | instruct: take the first prompt of verify/prompts/<style>.txt "
                        "(default: the prompt `make diagnosis` uses)")
        sp.add_argument("--prompt", metavar="TEXT", help="use this prompt instead")
        sp.add_argument("--hf-model", metavar="CHOICE",
                        help="adapter MODEL_CHOICES key or HF id (default: the MODEL `make diagnosis` uses)")
        attn = sp.add_mutually_exclusive_group()
        attn.add_argument("--cpu-attn", dest="cpu_attn", action="store_const", const=True, default=None,
                          help="attention on the CPU (attention_reference)")
        attn.add_argument("--npu-attn", dest="cpu_attn", action="store_const", const=False,
                          help="attention on the NPU (flash_attn ELF); the default, as `make diagnosis`")
        sp.add_argument("--online", action="store_true",
                        help="allow HuggingFace hub calls (default: HF_HUB_OFFLINE=1, the local cache only)")

    def run_args(sp):
        model_args(sp)
        sp.add_argument("--seq-len", type=int, metavar="N",
                        help="padded length (multiple of 64); default: the model's PREFILL_SEQ_LEN if it declares "
                        "one, else 2048 (mlir-air's prefill kernels and registry shapes)")
        sp.add_argument("--out", required=True, metavar="RUN_DIR", help="run dir to write (created if missing)")
        sp.add_argument("--verbose", action="store_true", help="echo the tree's own output to stderr too")
        sp.add_argument("--positions", type=int, metavar="N",
                        help="run block 0 on N real tokens (up to the compiled seq_len): the prompt, continued with "
                        "the prompt set's other prompts and repeated as needed, or truncated; probe.json "
                        "prompt.positions says which")
        sp.add_argument("--emulate", action="store_true",
                        help="no NPU: the tree's own block runs on the probe's emulated air runtime, whose ELFs are "
                        "CPU twins (models in scripts/probe/elf_boundaries.json); the config's dimensions come from "
                        "the HF checkpoint; probe.json 'emulate' records it and every report marks the run emulated")
        sp.add_argument("--inject", metavar="BUG",
                        help="with --emulate: one named bug in the emulated NPU (transposed_q_weight, "
                        "missing_causal_mask, interleaved_rope, rope_k_only, ignored_rmsnorm_weight, dropped_bias, "
                        "stale_tail)")
        sp.add_argument("--no-boundaries", dest="boundaries", action="store_false",
                        help="skip the lens: no boundaries/ (NPU buffers read back per ELF, HF layer-0 hooks)")
        sp.add_argument("--twin-eps", choices=TWIN_EPS, default="tree",
                        help="with --emulate: the twins' RMSNorm eps, the ELFs' own (tree, default) or the "
                        "checkpoint config.json's rms_norm_eps (config), to see whether an eps explains a scale drift")
        twin_precision_arg(sp)

    pl = sub.add_parser("plan", help="Steps 1 and 2 with no NPU: preflight, integration path, workarounds",
                        description="Read the model dir without importing it (stdlib only, no network): what the "
                        "run needs (Python version, packages, NPU, HF snapshot), the seed's Step 1 and Step 2 "
                        "answers, Phase 1 coverage, and whether Phase 2 can run here at all. Exit 0, or 2 with one "
                        "line saying why Phase 2 cannot run on this model.")
    model_args(pl, required=False)
    pl.add_argument("--hf-config", metavar="PATH|ID",
                    help="instead of --model-dir: plan from an HF config.json alone (a file, or a model id in the local "
                    "HF cache), before the model's code exists: the kernel sequence, Step 1 with its breaks, Step 2's "
                    "triggers, the GQA-aware padding plan and (with --air-root) the kernel rows the registry lacks")
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    pl.add_argument("--sanity", action="store_true",
                    help="also run Step 2's padded-vs-original sanity check on the CPU (needs torch and "
                    "transformers, and the checkpoint in the HF cache): the GQA-aware reindexed padding, the tree's "
                    "own padding helper and naive end-padding, each as the cosine of layer-0 ffn_out and of the "
                    "logits against the original model, against the seed's bar of 0.999998 (informational: plan "
                    "judges nothing, so a miss is printed as FAIL, not an exit code); exit 3 when the check cannot run here")

    pls = sub.add_parser("plans", help="the plans of several model dirs in one process, as JSON (npu-block-gate affected)",
                         description="What `plan --json` prints, for every --model-dir, in one JSON document: "
                         "{\"plans\": [{\"model_dir\", \"exit\", \"plan\" | \"error\"}]}, in the order given; "
                         "a refused model still has its plan (exit 2). One interpreter start for the whole tree.")
    pls.add_argument("--model-dir", dest="model_dirs", action="append", required=True, metavar="DIR",
                     help="a model dir (repeat for each)")
    pls.add_argument("--air-root", metavar="ROOT", help="the mlir-air repo root (default: found above each --model-dir)")

    c = sub.add_parser("config", help="plan, then resolve tree, model, prompt and integration; write probe.json (stage config)",
                       description="Plan, then import the model's adapter and resolve the config, prompt, tokens and "
                       "the block entry point; write probe.json with stage 'config' and no tensors. Nothing runs on "
                       "the NPU.")
    run_args(c)
    c.set_defaults(reuse_kernels=False, layers=False)

    def block_args(sp):
        lock_args(sp)
        sp.add_argument("--reuse-kernels", action="store_true",
                        help="when the prefill kernel cache loads (KernelCache.load_manifest), skip "
                        "compile_and_cache for the kernels it holds; compile_all_kernels still runs")
        sp.add_argument("--layers", action="store_true",
                        help="also run the adapter's NPU runner prefill (build_runner(...).prefill) and take every "
                        "layer's ffn_out from it and from the same HF reference prefill; write "
                        "layers/layer_NN.{npu,ref}.npy and probe.json 'layers' (for the per-layer table)")
        sp.add_argument("--ref-cache", metavar="DIR",
                        help="reference cache root (default $NPU_BLOCK_GATE_REF_CACHE, else "
                        "$NPU_BLOCK_GATE_CACHE_DIR/reference, else ~/.cache/npu-block-gate/reference; 'none' turns it off)")

    b = sub.add_parser("block", help="config, then compile, run block 0 on the NPU and the reference; write the run dir",
                       description="Everything `config` does, then compile the prefill kernels, run block 0 on the NPU, "
                       "get the HF bf16 layer-0 reference, and write block0.{npu,ref,input}.npy and probe.json (stage block).")
    run_args(b)
    block_args(b)

    ck = sub.add_parser("check", help="plan, config and block in one process, pausing once for the kernel cache",
                        description="What the npu-block-gate CLI runs: plan, config (probe.json stage config), then "
                        "one event line on stderr and one JSON line read from stdin ({\"reuse_kernels\": bool}) so the "
                        "caller can restore its kernel cache, then block. Without a caller on stdin it goes on at once.")
    run_args(ck)
    block_args(ck)
    ck.add_argument("--events", action="store_true",
                    help="print machine-readable event lines and wait on stdin after the config stage")

    bs = sub.add_parser("bisect", help="after a block run: find the kernel boundary that breaks block 0",
                        description="Read RUN_DIR/probe.json (stage block) and rebuild the same block-0 setup. With "
                        "the model's bisect_steps() hook: rerun block 0 with one step at a time on its CPU equivalent "
                        "(RUN_DIR/bisect/NN-<step>.npy). Else, for a model of scripts/probe/elf_boundaries.json: run "
                        "block 0 once with every launch captured and compare each launch with its CPU twin "
                        "(bisect/launch-NN-<elf>-<buffer>.{npu,twin}.npy), then swap the ELFs to their twins one "
                        "after another (bisect/NN-swap-<elf>.npy). RUN_DIR/bisect/bisect.json lists them; when neither "
                        "applies it says why (exit 0 either way).")
    bs.add_argument("--run-dir", required=True, metavar="RUN_DIR", help="a run dir written by `probe block`")
    bs.add_argument("--verbose", action="store_true", help="echo the tree's own output to stderr too")
    twin_precision_arg(bs)
    lock_args(bs)
    return p


def twin_precision_arg(sp):
    sp.add_argument("--twin-precision", choices=TWIN_PRECISIONS + tuple(TWIN_PRECISION_ALIASES), default="hw",
                    help="how the CPU twins round: hw (default: bf16's roundings plus the BFP16 operand cast on the "
                    "matmuls the tree compiles with bfp16=True), bf16 (where the registry's kernels round, per "
                    "kernel_registry/details/*, exact bf16 matmul operands; `hardware` is its older name) or fp32 "
                    "(float32 inside a launch, bf16 at the ELF's buffers); an --emulate run's twins and the bisect's")


def lock_args(sp):
    sp.add_argument("--npu-lock", metavar="PATH",
                    help="flock(2) held while kernels compile and run, shared with mlir-air's skills "
                    "(default $NPU_BLOCK_GATE_NPU_LOCK, else /tmp/mlir-air-npu.lock; 'none' turns it off)")
    sp.add_argument("--lock-timeout", type=float, default=NPU_LOCK_TIMEOUT, metavar="SECONDS",
                    help=f"give up (exit 3) after waiting this long for the NPU lock (default {NPU_LOCK_TIMEOUT:.0f}, as the skills)")
