"""The config and block stages: config (open_run: the RunContext), entry (which function runs
block 0), model, kernels (the probe's side of the kernel cache), lock (the NPU lock), setup and
block (block 0 on the NPU), adapter (the adapter's runner), stages (the run dir), record
(probe.json)."""
