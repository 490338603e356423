"""Runners: HfRunner (emulated HF bf16 reference) and the shared records."""
