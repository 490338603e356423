"""What one run of block 0 gives back (BlockRun), on every path (single, block, adapter), and
what compile_all_kernels did on the way (Compiled): probe.json `kernel_cache`."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Compiled:
    """What the run's KernelCache compiled. None where it is not known (the adapter compiles on
    its own; --emulate compiles nothing)."""

    hit: object = None  # True: --reuse-kernels and nothing had to compile
    manifest_loaded: object = None  # what load_manifest() returned
    toolchain: object = None  # cache._toolchain_id()
    compiled: object = None  # names compiled this run, in call order
    reused: object = None  # names skipped thanks to --reuse-kernels
    seconds: object = None  # time in compile_all_kernels


@dataclasses.dataclass
class BlockRun:
    npu: object  # float32 copy of layer-0 ffn_out (padded rows for single/block)
    input: object  # float32 hidden that entered the block, or None (adapter path)
    timings: dict
    compiled: Compiled = Compiled()
    kernels_run: list = dataclasses.field(default_factory=list)  # ELF names in call order
    recorder: object = None  # npu_probe.lens.capture.LaunchRecorder (single/block paths)
    table: object = None  # the model's ELF boundary table entry, or None
    returned: dict = None  # the block's returned dict, float32 copies (v, q_roped, k_roped, attn_out, ffn_out)
    emulated: list = None  # --emulate: ELF names registered on the emulated runtime
    layers: object = None  # adapter path: {li: ffn_out} from the same prefill (reused by --layers)
