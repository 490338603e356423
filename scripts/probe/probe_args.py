"""The command line (standard library only, so `--help` works anywhere)."""

import argparse
import sys

from probe_schema import DEFAULT_PROMPT_STYLE, EXIT_BAD_INPUT


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
        epilog="Exit codes: 0 ok, 2 bad input, 3 crash inside the tree or missing dependency.",
    )
    sub = p.add_subparsers(dest="command", metavar="{config,block,bisect}", parser_class=_Parser)
    sub.required = True

    def common(sp):
        sp.add_argument("--model-dir", required=True, metavar="DIR",
                        help="the model dir, programming_examples/llms/<model> (or its name under --air-root)")
        sp.add_argument("--air-root", metavar="ROOT", help="the mlir-air repo root (default: found above --model-dir)")
        sp.add_argument("--prompt-style", default=DEFAULT_PROMPT_STYLE, metavar="STYLE",
                        help="base | instruct: which verify/prompts/<style>.txt gives the canonical prompt (default instruct)")
        sp.add_argument("--prompt", metavar="TEXT", help="use this prompt instead of the canonical one")
        sp.add_argument("--hf-model", metavar="CHOICE",
                        help="adapter MODEL_CHOICES key or HF id (default: the adapter's DEFAULT_MODEL)")
        sp.add_argument("--seq-len", type=int, metavar="N",
                        help="padded length (multiple of 64); default: the model's PREFILL_SEQ_LEN if it declares one, else 2048 (mlir-air's prefill kernels and registry shapes)")
        sp.add_argument("--out", required=True, metavar="RUN_DIR", help="run dir to write (created if missing)")
        sp.add_argument("--verbose", action="store_true", help="echo the tree's own output to stderr too")
        attn = sp.add_mutually_exclusive_group()
        attn.add_argument("--cpu-attn", dest="cpu_attn", action="store_true", default=True,
                          help="attention on the CPU (the tree's default for block runs)")
        attn.add_argument("--npu-attn", dest="cpu_attn", action="store_false",
                          help="attention on the NPU (flash_attn ELF)")

    c = sub.add_parser("config", help="resolve tree, model, prompt and integration; write probe.json (stage config)",
                       description="Resolve the tree, model config, prompt and tokens, and the integration path; "
                       "write probe.json with stage 'config' and no tensors. Nothing runs on the NPU.")
    common(c)
    c.set_defaults(reuse_kernels=False)

    b = sub.add_parser("block", help="compile, run block 0 on the NPU and the reference; write the run dir",
                       description="Everything `config` does, then compile the prefill kernels, run block 0 on the NPU, "
                       "get the HF bf16 layer-0 reference, and write block0.{npu,ref,input}.npy and probe.json (stage block).")
    common(b)
    lock_args(b)
    b.add_argument("--reuse-kernels", action="store_true",
                   help="when <model>/build_peano/prefill_kernel_cache loads (KernelCache.load_manifest), skip "
                   "compile_and_cache for the kernels it holds; compile_all_kernels still runs")
    b.add_argument("--layers", action="store_true",
                   help="also run the adapter's NPU runner prefill (build_runner(...).prefill) and take every "
                   "layer's ffn_out from it and from the same HF reference prefill; write "
                   "layers/layer_NN.{npu,ref}.npy and probe.json 'layers' (for the per-layer table)")

    b.add_argument("--ref-cache", metavar="DIR",
                   help="reference cache root (default $NPU_BLOCK_GATE_REF_CACHE, else "
                   "$NPU_BLOCK_GATE_CACHE_DIR/reference, else ~/.cache/npu-block-gate/reference; 'none' turns it off)")

    bs = sub.add_parser("bisect", help="after a block run: rerun block 0 with one step at a time on the CPU",
                        description="Read RUN_DIR/probe.json (stage block), rebuild the same block-0 setup, and for "
                        "each step the model's bisect_steps() lists, rerun block 0 with that one step on its CPU "
                        "equivalent. Writes RUN_DIR/bisect/NN-<step>.npy and RUN_DIR/bisect/bisect.json; when the "
                        "model has no bisect hook, bisect.json says why (exit 0 either way).")
    bs.add_argument("--run-dir", required=True, metavar="RUN_DIR", help="a run dir written by `probe block`")
    bs.add_argument("--verbose", action="store_true", help="echo the tree's own output to stderr too")
    lock_args(bs)
    return p


def lock_args(sp):
    sp.add_argument("--npu-lock", metavar="PATH",
                    help="flock(2) held while kernels compile and run, shared with mlir-air's skills "
                    "(default $NPU_BLOCK_GATE_NPU_LOCK, else /tmp/mlir-air-npu.lock; 'none' turns it off)")
    sp.add_argument("--lock-timeout", type=float, default=1800.0, metavar="SECONDS",
                    help="give up (exit 3) after waiting this long for the NPU lock (default 1800, as the skills)")
