"""The static Phase 2 plan (`probe plan`, and the gate before every run): what a block-0 run of
one model would need and do, read from the tree without importing it. Standard library only."""
