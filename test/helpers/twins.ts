// The real mlir-air tree on the probe's emulated NPU (`--emulate`), for the TypeScript suites: a
// private copy of the real tree (cache.py's PEP 701 f-strings rewritten for a Python older than
// 3.12, in the copy only) and tiny random HF checkpoints (test/python/fakes/tiny_hf.py) in a hub
// inside that copy, so the probe finds them offline even in its namespace sandbox (which gives it
// a private /tmp but binds the tree). Under scripts/test.mjs both come from the run's shared
// fixtures (test/python/fakes/shared_fixtures.py: built once, the hub hard-linked here); run by
// hand, they are built here. Needs the Python the tests use (helpers/python.ts) with torch,
// transformers and ml_dtypes.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findNumpyPython, missingTorch } from './python.ts';
import { copyRealTree, copyTree, missingRealTree } from './mlirair.ts';
import { REPO } from './airmini.ts';
import type { Missing } from './skip.ts';

export const ARCH_OF: Record<string, string> = { llama32_1b: 'llama', llama32_3b: 'llama', smollm2_1_7b: 'smollm2', qwen25_0_5b: 'qwen2', qwen3_0_6b: 'qwen3' };

/** Why the emulated real-tree tests cannot run here, or null when they can. */
export function missingTwins(): Missing | null {
  return missingRealTree() ?? missingTorch();
}

export interface SharedFixtures {
  tree: string | null;
  hub: string | null;
  checkpoints: Record<string, { hf_id: string }>;
  env: Record<string, string>;
}

/** The run's shared fixtures (waiting while scripts/test.mjs builds them), or null outside a run. */
export function sharedFixtures(timeoutSec = 1200): SharedFixtures | null {
  const dir = process.env.NPU_BLOCK_GATE_TEST_FIXTURES;
  if (!dir) return null;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (const deadline = Date.now() + timeoutSec * 1000; ;) {
    if (existsSync(join(dir, 'fixtures.json'))) return JSON.parse(readFileSync(join(dir, 'fixtures.json'), 'utf8'));
    if (existsSync(join(dir, 'failed.txt'))) throw new Error(`the shared test fixtures could not be built: ${readFileSync(join(dir, 'failed.txt'), 'utf8').trim()}`);
    if (Date.now() > deadline) throw new Error(`the shared test fixtures in ${dir} were not built within ${timeoutSec} s`);
    Atomics.wait(pause, 0, 0, 200);
  }
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

/** A tree copy with the tiny checkpoints of `archs` in <copy>/hf-hub. */
export function twinsTree(archs = ['llama', 'qwen2', 'qwen3']): TwinsTree {
  const python = findNumpyPython()!;
  const fx = sharedFixtures();
  if (fx?.tree && fx.hub) {
    const t = copyTree(fx.tree);
    const hub = join(t.root, 'hf-hub');
    // Hard links: the checkpoints are only read; the directories are this copy's own.
    const cp = spawnSync('cp', ['-al', fx.hub, hub]);
    if (cp.status !== 0) throw new Error(`cp -al ${fx.hub} ${hub} failed: ${cp.stderr}`);
    const ids = Object.fromEntries(archs.map((a) => [a, fx.checkpoints[a].hf_id]));
    return { root: t.root, python, model: t.model, hfId: (m) => ids[ARCH_OF[m]], env: { ...fx.env, HF_HUB_CACHE: hub } };
  }
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
  const r = spawnSync(python, ['-c', code], { encoding: 'utf8', timeout: 300_000, maxBuffer: 16 << 20, cwd: REPO });
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
