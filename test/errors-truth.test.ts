// Issue 26.6: errors that say the truth. Each case of the issue's list this branch takes: what was
// said at 8e7874c is in the test's name, what is true is asserted.
import { skip, test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, closeSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copyAirMini } from './helpers/airmini.ts';
import { ensureCli } from './helpers/dist.ts';
import { missingNumpy } from './helpers/python.ts';
import { fixture, npyOf, refValues, cli as inProcess } from './helpers/rundir.ts';
import { mountTmpfs } from './helpers/tmpfs.ts';
import { missingTwins, twinsTree, withEnv } from './helpers/twins.ts';

const tree = copyAirMini();
const dir = mkdtempSync(join(tmpdir(), 'nbg-truth-'));
const MODEL = tree.model('tiny_llama');

interface Run { code: number | null; out: string; err: string }

/** The CLI bundle; `stdout` an fd to write to (default: a pipe). */
async function cli(args: (string | Buffer)[], o: { stdout?: number; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  const js = await ensureCli();
  // Arguments that are not UTF-8 (a Buffer) go through a shell's printf, byte for byte, as a user's would.
  const shArg = (a: string | Buffer) => `"$(printf '${[...Buffer.from(a)].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('')}')"`;
  const argv = args.some((a) => Buffer.isBuffer(a))
    ? ['/bin/sh', '-c', `exec ${[process.execPath, js, ...args].map(shArg).join(' ')}`]
    : [process.execPath, js, ...(args as string[])];
  return new Promise((res) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', o.stdout ?? 'pipe', 'pipe'], env: o.env ?? process.env });
    let out = '';
    let err = '';
    child.stdout?.on('data', (d) => { out += d; });
    child.stderr!.on('data', (d) => { err += d; });
    child.on('close', (code) => res({ code, out, err }));
  });
}

/** The one `npu-block-gate:` line of stderr. */
function errorLine(r: Run): string {
  const lines = r.err.split('\n').filter((l) => l.startsWith('npu-block-gate:'));
  assert.is(lines.length, 1, r.err);
  assert.not.match(r.err, /\n\s+at /, 'no stack trace');
  return lines[0];
}

test('issue 26.6: a --python that segfaults is said to have crashed, with the signal (not "not a Python")', async () => {
  const py = join(dir, 'segv-python');
  writeFileSync(py, '#!/bin/sh\nkill -SEGV $$\n');
  chmodSync(py, 0o755);
  const r = await cli(['check', '--model-dir', MODEL, '--out', join(dir, 'segv-run'), '--no-docs', '--no-cache', '--python', py]);
  assert.is(r.code, 2, r.err);
  const line = errorLine(r);
  assert.match(line, `--python ${py}: crashed before the probe said a word: killed by SIGSEGV (signal 11: segmentation fault)`);
  assert.not.match(line, /not a Python/);
});

test('issue 26.6: a path that is not UTF-8 is said to be so (not "does not exist")', async () => {
  // A model dir that exists, under a name with the byte 0xff.
  const bytes = Buffer.concat([Buffer.from(`${dir}/model-`), Buffer.from([0xff])]);
  mkdirSync(bytes);
  try {
    for (const opt of ['--model-dir', '--out']) {
      const args = opt === '--model-dir' ? ['check', '--model-dir', bytes, '--no-docs'] : ['check', '--model-dir', MODEL, '--out', bytes, '--no-docs'];
      const r = await cli(args);
      assert.is(r.code, 2, r.err);
      const line = errorLine(r);
      assert.match(line, `${opt}: the path is not valid UTF-8`);
      assert.not.match(line, /does not exist/);
    }
    const r = await cli(['report', '--run-dir', bytes]);
    assert.is(r.code, 2, r.err);
    assert.match(errorLine(r), '--run-dir: the path is not valid UTF-8');
    // Nothing was created under the name the bytes would have been read as.
    assert.equal(readdirSync(dir).filter((n) => n.startsWith('model-') && n !== 'model-\uFFFD'), []);
    assert.not.ok(existsSync(join(dir, 'model-\uFFFD')));
  } finally {
    rmSync(bytes, { recursive: true, force: true });
  }
});

test.unless(missingNumpy())('issue 26.6: a read-only --cache-dir is said to be read-only (not "no such file or directory")', async () => {
  const fs = mountTmpfs(256);
  if (typeof fs === 'string') return skip('tmpfs', fs);
  try {
    fs.remount(true);
    const r = await cli(['check', '--model-dir', MODEL, '--out', join(dir, 'ro-cache-run'), '--no-docs', '--cache-dir', fs.dir]);
    assert.is(r.code, 0, r.err);
    assert.match(r.err, `warning: kernel cache: not stored (${fs.dir}: cannot write: read-only file system)`);
    assert.match(r.err, `warning: reference cache: not stored (${join(fs.dir, 'reference')}: cannot write: read-only file system)`);
    assert.not.match(r.err, /no such file or directory/);
  } finally {
    fs.unmount();
  }
});

test('issue 26.6: output to a full stdout (> /dev/full) exits non-zero with one line on stderr', async () => {
  const full = openSync('/dev/full', 'w');
  try {
    const help = await cli(['--help'], { stdout: full });
    assert.is(help.code, 3, help.err);
    assert.is(errorLine(help), 'npu-block-gate: error (infrastructure, not a verdict): the output could not be written to stdout: disk full (ENOSPC); what it printed there was lost');
    const f = fixture();
    const report = await cli(['report', '--run-dir', f.runDir, '--no-docs', '--json'], { stdout: full });
    assert.is(report.code, 3, report.err);
    assert.match(errorLine(report), /could not be written to stdout: disk full/);
    // A reader that went away (| head) is not an error: the run's exit code stands.
    const piped = spawnSync('/bin/sh', ['-c', `"${process.execPath}" "${await ensureCli()}" --help | head -c 1 >/dev/null`], { encoding: 'utf8' });
    assert.is(piped.status, 0, piped.stderr);
  } finally {
    closeSync(full);
  }
});

/** A run dir whose lens holds the FP32 ground truth of ffn_out (what a real HF reference records). */
function withFp32(ref: number[][], truth: number[][]) {
  const f = fixture({
    ref,
    probe: (p) => {
      const shape = [p.prompt.real_len, p.tensors.ref.shape[1]];
      p.boundaries = {
        source: 'launches', table: 't', emulated: false, reference: 'hf-layer0-hooks/1', layout: 'seq-first',
        entries: [{ name: 'ffn_out', order: 20, step: 'residual add', launch: 'o_ffn', arg: 3, source: 'launch', produced_by: 'o_ffn',
          npu: { file: 'boundaries/20-ffn_out.npu.npy', dtype: 'f32', shape },
          ref: { file: 'boundaries/20-ffn_out.ref.npy', dtype: 'f32', shape },
          fp32: { file: 'boundaries/20-ffn_out.fp32.npy', dtype: 'f32', shape } }],
        unpaired: [], fp32: { dtype: 'float32', what: 'HF layer 0 in float32' },
      };
    },
  });
  mkdirSync(join(f.runDir, 'boundaries'));
  writeFileSync(join(f.runDir, 'boundaries/20-ffn_out.fp32.npy'), npyOf(truth));
  writeFileSync(join(f.runDir, 'boundaries/20-ffn_out.ref.npy'), npyOf(ref));
  writeFileSync(join(f.runDir, 'boundaries/20-ffn_out.npu.npy'), npyOf(ref));
  f.save();
  return f;
}

test('issue 26.6: one finite value of block0.ref.npy corrupted by 1e4 is "the reference is broken" against the FP32 ground truth, exit 3, not a FAIL', async () => {
  const truth = refValues();
  // The bf16 reference: the truth rounded to bf16's 8 bits of mantissa (its rounding, nothing more).
  const bf16 = truth.map((r) => r.map((v) => Number(v.toPrecision(3))));
  const clean = withFp32(bf16, truth);
  const ok = await inProcess(['report', '--run-dir', clean.runDir, '--no-docs', '--json']);
  assert.is(ok.code, 0, ok.err);
  const corrupted = bf16.map((r) => [...r]);
  corrupted[3][7] *= 1e4;
  const f = withFp32(corrupted, truth);
  // The NPU agrees with the clean reference: the corrupted value alone would fail G1/G2 at 8e7874c.
  writeFileSync(join(f.runDir, 'block0.npu.npy'), npyOf([...bf16, ...refValues(3, bf16[0].length, 3)]));
  const r = await inProcess(['report', '--run-dir', f.runDir, '--no-docs', '--json']);
  assert.is(r.code, 3, r.err);
  assert.match(errorLine(r), /block0\.ref\.npy: the reference is broken: row 3, column 7 of the reference is .* where the FP32 ground truth is .*; not a verdict on the NPU$/);
  const rep = JSON.parse(r.out) as { outcome: string };
  assert.is(rep.outcome, 'error');
});

test.unless(missingTwins())('issue 26.6: a NaN in the HF checkpoint is named (which tensor), and probe.json is still written', async () => {
  const t = twinsTree(['llama']);
  // A copy of the hub whose layer-0 down_proj holds one NaN.
  const hub = join(t.root, 'hf-nan');
  cpSync(t.env.HF_HUB_CACHE, hub, { recursive: true, dereference: true });
  const code = `
import glob, sys
from safetensors.torch import load_file, save_file
[p] = glob.glob(sys.argv[1] + '/models--' + sys.argv[2].replace('/', '--') + '/**/model.safetensors', recursive=True)
d = load_file(p); d['model.layers.0.mlp.down_proj.weight'][0, 0] = float('nan'); save_file(d, p, metadata={'format': 'pt'})
import os; os.chmod(p, 0o644)  # as huggingface_hub leaves its files (save_file makes them 0600): nobody, a root runner's probe, reads them
`;
  const made = spawnSync(t.python, ['-c', code, hub, t.hfId('llama32_1b')], { encoding: 'utf8' });
  assert.is(made.status, 0, made.stderr);
  const out = join(dir, 'nan-run');
  const r = await withEnv({ ...t.env, HF_HUB_CACHE: hub, NPU_BLOCK_GATE_NPU_LOCK: 'none' }, () => inProcess([
    'check', '--model-dir', t.model('llama32_1b'), '--out', out, '--emulate', '--model', t.hfId('llama32_1b'), '--prompt-style', 'instruct',
    '--python', t.python, '--no-cache', '--no-docs',
  ]));
  assert.is(r.code, 3, r.err);
  assert.match(r.err, `the HF checkpoint ${t.hfId('llama32_1b')} holds non-finite weights: model.layers.0.mlp.down_proj.weight (1 NaN)`);
  assert.not.match(r.err, /not JSON compliant|internal error/);
  assert.match(errorLine(r), /the reference is broken: .*NaN/);
  assert.ok(existsSync(join(out, 'probe.json')), 'probe.json written');
  // ... so the run can be judged again, to the same error.
  const again = await inProcess(['report', '--run-dir', out, '--no-docs']);
  assert.is(again.code, 3, again.err);
  assert.match(errorLine(again), /the reference is broken: .*NaN/);
});

test.after(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(tree.root, { recursive: true, force: true });
});

test.run();
