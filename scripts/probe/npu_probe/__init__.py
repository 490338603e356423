"""npu-block-gate's probe: runs transformer block 0 of an mlir-air LLM on the NPU and the HF
bf16 reference, and writes the run dir the TypeScript side judges.

Subpackages, one stage each, each importing only those listed before it:
core (contract, errors, log, tree, calls into the tree), plan (the static plan, stdlib only),
emulate (the ELF table, CPU twins, the emulated NPU), lens (what is captured inside block 0),
reference (tokens, the HF reference and its cache), run (the config and block stages),
bisect (`probe bisect`); cli and args are the command line. scripts/probe/README.md has the map.
"""
