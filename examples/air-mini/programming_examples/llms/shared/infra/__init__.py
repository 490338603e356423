"""air-mini infrastructure: an emulated KernelCache and the numpy kernels behind it."""
