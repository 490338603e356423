"""No NPU: the per-ELF argument table (table), one numpy twin per ELF kind (twins), and the
emulated air runtime the tree's own block runs on with --emulate (runtime, air_modules,
checkpoint, registry, emulation)."""
