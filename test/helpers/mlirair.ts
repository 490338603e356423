// The real Xilinx/mlir-air tree (an unmodified export): where it is, and a private copy per test
// file (a run writes into the model dir; the export itself is read-only).
import { chmodSync, cpSync, existsSync, lstatSync, mkdtempSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { REPO } from './airmini.ts';
import type { Missing } from './skip.ts';

const VAR = 'NPU_BLOCK_GATE_MLIR_AIR';
/** Where CI lays the tree out: shared/mlir-air beside the checkout. */
export const BESIDE = join(dirname(resolve(REPO)), 'shared/mlir-air');
const isTree = (d: string) => existsSync(join(d, 'programming_examples/llms/verify'));

/** $NPU_BLOCK_GATE_MLIR_AIR (your own checkout), else ../shared/mlir-air beside this checkout; null when neither is a tree. */
export function realTreeRoot(): string | null {
  const c = process.env[VAR] || BESIDE;
  return isTree(c) ? c : null;
}

/** Why the real-tree tests cannot run here, or null. `npm run test:fast` leaves them out. */
export function missingRealTree(): Missing | null {
  if (process.env.NPU_BLOCK_GATE_TEST_FAST === '1') return { need: 'real-tree', why: 'npm run test:fast leaves out what needs the real mlir-air tree' };
  if (realTreeRoot()) return null;
  const set = process.env[VAR];
  return { need: 'real-tree', why: set ? `${VAR}=${set} is not an mlir-air tree (no programming_examples/llms/verify)` : `the real mlir-air tree is not at ${BESIDE} (set ${VAR} to your mlir-air checkout)` };
}

/** A private copy of the tree's programming_examples/ and LICENSE, as the tree is (cache.py untouched). */
export function copyRealTree(): { root: string; llms: string; model: (name: string) => string } {
  const src = realTreeRoot();
  if (!src) throw new Error(missingRealTree()!.why);
  return copyTree(src);
}

export function copyTree(src: string): { root: string; llms: string; model: (name: string) => string } {
  const root = mkdtempSync(join(tmpdir(), 'nbg-mlir-air-'));
  for (const part of ['programming_examples', 'LICENSE']) cpSync(join(src, part), join(root, part), { recursive: true, filter: (s) => !s.includes('__pycache__') });
  // The export is read-only and the copy keeps its modes: made the owner's to write, as a checkout is
  // (the probe's sandbox keeps no capability that would write past a mode, not even as root).
  const writable = (p: string) => {
    const st = lstatSync(p);
    if (st.isSymbolicLink()) return;
    chmodSync(p, (st.mode & 0o7777) | 0o200);
    if (st.isDirectory()) for (const n of readdirSync(p)) writable(join(p, n));
  };
  writable(root);
  chmodSync(root, 0o755); // as a checkout is: the probe's uid (nobody, on a root runner) reads it
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
