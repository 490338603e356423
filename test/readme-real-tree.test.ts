// Issue 26, deliverable 5: the real tree from the README alone. The README's section "The real tree
// without an NPU" holds the commands between its real-tree-commands markers; this test runs them as
// written, in bash, from the clone, with the Python that section says to export (the one .ci/run
// builds: NPU_BLOCK_GATE_PYTHON) and three substitutions a reader makes: `npx npu-block-gate` is this
// checkout's CLI (its current sources), /tmp/nbg-air a fresh temp dir, ../shared/mlir-air the real
// tree where this machine has it. llama32_1b must PASS, emulated, with no NPU and no network.
import { test, skip } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { main } from '../src/cli.ts';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { REPO } from './helpers/airmini.ts';
import { missingTwins } from './helpers/twins.ts';
import { findNumpyPython, missingNumpy } from './helpers/python.ts';
import { missingRealTree, realTreeRoot } from './helpers/mlirair.ts';
import { ensureCli } from './helpers/dist.ts';

/** The fenced commands between the markers, as lines. */
function readmeCommands(): string[] {
  const text = readFileSync(join(REPO, 'README.md'), 'utf8');
  const m = /<!-- real-tree-commands:start -->\n```sh\n([\s\S]*?)```\n<!-- real-tree-commands:end -->/.exec(text);
  if (!m) throw new Error('README.md has no real-tree-commands block');
  return m[1].trim().split('\n');
}

test('issue 26.5: the README\'s real-tree commands, as written, take llama32_1b of the real tree to an emulated PASS (no NPU, no network)', async () => {
  const lines = readmeCommands();
  // What the section promises: a tree copy, a checkpoint in a scratch HF cache, check --emulate on llama32_1b.
  assert.equal(lines.map((l) => l.split(' ').slice(0, 3).join(' ')), ['npx npu-block-gate fixture', 'export HF_HUB_CACHE=/tmp/nbg-air/hf-hub', 'npx npu-block-gate fixture', 'npx npu-block-gate check']);
  const missing = missingTwins();
  if (missing) skip(missing);
  const cli = await ensureCli();
  const scratch = mkdtempSync(join(tmpdir(), 'nbg-readme-air-'));
  const script = lines.join('\n')
    .replaceAll('npx npu-block-gate', `node ${cli}`)
    .replaceAll('/tmp/nbg-air', scratch)
    .replaceAll('../shared/mlir-air', realTreeRoot()!);
  const env: NodeJS.ProcessEnv = { ...process.env, NPU_BLOCK_GATE_PYTHON: findNumpyPython()!, HF_HUB_OFFLINE: '1' };
  for (const k of ['HF_HUB_CACHE', 'HF_HOME', 'HUGGINGFACE_HUB_CACHE']) delete env[k];
  const r = spawnSync('bash', ['-euo', 'pipefail', '-c', script], { cwd: REPO, env, encoding: 'utf8', timeout: 900_000, maxBuffer: 64 << 20 });
  assert.is(r.status, 0, `${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
  assert.match(r.stdout, /meta-llama\/Llama-3\.2-1B-Instruct: a tiny RANDOM llama checkpoint/);
  assert.match(r.stdout, /PASS {2}llama32_1b .*EMULATED/);
  const rep = JSON.parse(readFileSync(join(scratch, 'run', 'report.json'), 'utf8'));
  assert.is(rep.outcome, 'pass');
  assert.is(rep.exit_code, 0);
});

test('fixture hf-tiny never writes a random checkpoint over a real download of the model\'s id: exit 2 naming it, the download as it was', async () => {
  const missing = missingRealTree() ?? missingNumpy();
  if (missing) skip(missing);
  const hub = mkdtempSync(join(tmpdir(), 'nbg-hub-'));
  const repo = join(hub, 'models--meta-llama--Llama-3.2-1B-Instruct');
  mkdirSync(join(repo, 'refs'), { recursive: true });
  writeFileSync(join(repo, 'refs/main'), 'a'.repeat(40));
  const out: string[] = [];
  const err: string[] = [];
  const sink = (a: string[]) => new Writable({ write(c, _e, cb) { a.push(String(c)); cb(); } }) as unknown as NodeJS.WritableStream;
  const code = await main(['fixture', 'hf-tiny', '--model-dir', join(realTreeRoot()!, 'programming_examples/llms/llama32_1b'), '--hub', hub], sink(out), sink(err));
  assert.is(code, 2, err.join(''));
  assert.match(err.join(''), /models--meta-llama--Llama-3\.2-1B-Instruct: a download of meta-llama\/Llama-3\.2-1B-Instruct that npu-block-gate did not write is there; refusing/);
  assert.equal(readdirSync(repo).sort(), ['refs']);
  assert.is(readFileSync(join(repo, 'refs/main'), 'utf8'), 'a'.repeat(40));
});

test.run();
