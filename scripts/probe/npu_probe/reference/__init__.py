"""The reference side: the prompt's tokens (tokens, positions), the HF bf16 layer-0 reference
(hf), and the reference cache (refcache: key and entries; cache: the lookup around one run)."""
