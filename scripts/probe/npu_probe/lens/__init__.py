"""The lens: what flows through block 0 at each kernel boundary, on both sides. capture wraps the
KernelCache's load_and_run (NPU buffers read back per launch), hf_capture hooks layer 0 of the
HF model, boundaries pairs them in one layout and writes RUN_DIR/boundaries/."""
