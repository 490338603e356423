"""What every stage shares: the contract with TypeScript, errors, the log, the tree's layout,
calling into the tree, and atomic writes into the run dir."""
