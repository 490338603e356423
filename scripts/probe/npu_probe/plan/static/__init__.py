"""Reading an mlir-air tree without running it: parse (files, with a cache), imports (statements
and module resolution), paths (path expressions, sys.path edits, env reads), names (module-level
definitions and constants), makefile. Standard library only."""
