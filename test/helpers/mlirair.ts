// The real Xilinx/mlir-air tree (../shared/mlir-air, an unmodified export): where it is, and a
// private copy per test file (a run writes into the model dir; the export itself is read-only).
import { cpSync, existsSync, mkdtempSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { REPO } from './airmini.ts';

/** NPU_BLOCK_GATE_MLIR_AIR, else shared/mlir-air beside the checkout (as CI lays it out), else /work/shared. */
export function realTreeRoot(): string | null {
  const candidates = [process.env.NPU_BLOCK_GATE_MLIR_AIR, join(dirname(REPO.replace(/\/$/, '')), 'shared/mlir-air'), '/work/shared/mlir-air'];
  for (const c of candidates) if (c && existsSync(join(c, 'programming_examples/llms/verify'))) return c;
  return null;
}

export function copyRealTree(): { root: string; llms: string; model: (name: string) => string } {
  const src = realTreeRoot();
  if (!src) throw new Error('the real mlir-air tree is not found (set NPU_BLOCK_GATE_MLIR_AIR to its root)');
  const root = mkdtempSync(join(tmpdir(), 'nbg-mlir-air-'));
  for (const part of ['programming_examples', 'LICENSE']) cpSync(join(src, part), join(root, part), { recursive: true, filter: (s) => !s.includes('__pycache__') });
  const llms = join(root, 'programming_examples/llms');
  return { root, llms, model: (name) => join(llms, name) };
}

/**
 * A private copy whose shared/infra/cache.py parses on this Python (its two PEP 701 f-strings
 * rewritten in the copy only, by test/python/test_real_aliasing.make_parseable_here, as the
 * emulated real-tree tests do): the plan then reads the whole file.
 */
export function copyParseableRealTree(python: string): ReturnType<typeof copyRealTree> {
  const t = copyRealTree();
  const code = `import sys; sys.path.insert(0, ${JSON.stringify(join(REPO, 'test/python'))}); from test_real_aliasing import make_parseable_here; make_parseable_here(${JSON.stringify(join(t.llms, 'shared/infra/cache.py'))})`;
  const r = spawnSync(python, ['-c', code], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`rewriting cache.py failed: ${r.stderr}`);
  return t;
}
