// The real mlir-air tree on the probe's emulated NPU (`--emulate`), for the TypeScript suites: a
// private copy of ../shared/mlir-air (cache.py's PEP 701 f-strings rewritten for a Python older
// than 3.12, as test/python/test_real_aliasing.py does, in the copy only) and tiny random HF
// checkpoints (test/python/fakes/tiny_hf.py) in a hub inside that copy, so the probe finds them
// offline even in its namespace sandbox (which gives it a private /tmp but binds the tree).
// Needs the Python the tests use (helpers/python.ts) with torch, transformers and ml_dtypes.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { findNumpyPython } from './python.ts';
import { copyRealTree, realTreeRoot } from './mlirair.ts';
import { REPO } from './airmini.ts';

export const ARCH_OF: Record<string, string> = { llama32_1b: 'llama', qwen25_0_5b: 'qwen2', qwen3_0_6b: 'qwen3' };

/** Why the emulated real-tree tests cannot run here (one line), or null when they can. */
export function twinsSkipReason(): string | null {
  if (!realTreeRoot()) return 'the real mlir-air tree is not found (set NPU_BLOCK_GATE_MLIR_AIR)';
  const py = findNumpyPython();
  if (!py) return 'no Python with numpy';
  const r = spawnSync(py, ['-c', 'import torch, transformers, ml_dtypes, tokenizers, safetensors'], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) {
    return `${py} has no torch/transformers/ml_dtypes (the emulated real tree runs the real HfRunner); run with NPU_BLOCK_GATE_PYTHON=$PWD/.venv/bin/python`;
  }
  return null;
}

export interface TwinsTree {
  root: string;
  python: string;
  model: (name: string) => string;
  /** HF id of the tiny checkpoint for a model dir of ARCH_OF. */
  hfId: (model: string) => string;
  /** The offline HF environment the probe must see (HF_HUB_CACHE inside the tree copy). */
  env: Record<string, string>;
}

/** A tree copy with the tiny checkpoints of `archs` built into <copy>/hf-hub. */
export function twinsTree(archs = ['llama', 'qwen2', 'qwen3']): TwinsTree {
  const python = findNumpyPython()!;
  const t = copyRealTree();
  const hub = join(t.root, 'hf-hub');
  const code = `
import json, sys
sys.path.insert(0, ${JSON.stringify(join(REPO, 'test/python'))})
from fakes import tiny_hf
from test_real_aliasing import make_parseable_here
make_parseable_here(${JSON.stringify(join(t.llms, 'shared/infra/cache.py'))})
ids = {a: tiny_hf.build(a, ${JSON.stringify(hub)}).hf_id for a in ${JSON.stringify(archs)}}
print(json.dumps({"ids": ids, "env": tiny_hf.offline_env(${JSON.stringify(hub)})}))
`;
  const r = spawnSync(python, ['-c', code], { encoding: 'utf8', timeout: 300_000, maxBuffer: 16 << 20 });
  if (r.status !== 0) throw new Error(`building the tiny checkpoints failed: ${r.stderr}`);
  const { ids, env } = JSON.parse(r.stdout.trim().split('\n').pop()!) as { ids: Record<string, string>; env: Record<string, string> };
  return { root: t.root, python, model: t.model, hfId: (m) => ids[ARCH_OF[m]], env };
}

/** Runs `fn` with `vars` set in process.env (the CLI hands its environment to the probe), then restores it. */
export async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(vars)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}
