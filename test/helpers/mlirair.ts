// The real Xilinx/mlir-air tree (an unmodified export): where it is, and a private copy per test
// file (a run writes into the model dir; the export itself is read-only).
import { cpSync, existsSync, mkdtempSync } from 'node:fs';
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
  const llms = join(root, 'programming_examples/llms');
  return { root, llms, model: (name) => join(llms, name) };
}
