// The tool on the real Xilinx/mlir-air tree ($NPU_BLOCK_GATE_MLIR_AIR, else ../shared/mlir-air; copied per test file): `plan` and
// `check` as a new user meets them on a machine without an NPU, and the kernel cache key and
// restore on the real compile inputs. test/python/test_probe_plan.py asserts every model's plan.
import { test } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { appendFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { main } from '../src/cli.ts';
import { chooseIsolation, realHost } from '../src/probe/isolate.ts';
import { runProbe } from '../src/probe/run.ts';
import { kernelCacheKey, KernelStore, type CompileInputs } from '../src/cache/kernel.ts';
import { copyRealTree, missingRealTree } from './helpers/mlirair.ts';
import { findNumpyPython } from './helpers/python.ts';
import { REPO } from './helpers/airmini.ts';

const noTree = missingRealTree();
const t = noTree ? null : copyRealTree();
const PROBE = join(REPO, 'scripts/probe');

function sink() {
  let text = '';
  const w = new Writable({ write(c, _e, cb) { text += c; cb(); } });
  return { w, get text() { return text; } };
}

async function cli(args: string[]) {
  const out = sink();
  const err = sink();
  const code = await main(args, out.w as unknown as NodeJS.WritableStream, err.w as unknown as NodeJS.WritableStream);
  return { code, out: out.text, err: err.text };
}

interface PlanJson { kernel_cache: { dir: string; inputs: CompileInputs }; model: { dir: string }; config: Record<string, unknown> }

/** `probe plan --json` as the CLI runs it, with the environment given (no device, an empty HF cache). */
function plan(model: string, env: Record<string, string> = {}): PlanJson {
  const r = spawnSync(findNumpyPython()!, [PROBE, 'plan', '--model-dir', t!.model(model), '--json'], {
    encoding: 'utf8', env: { ...process.env, HF_HUB_CACHE: mkdtempSync(join(tmpdir(), 'nbg-hub-')), ...env },
  });
  assert.is(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

function keyOf(model: string, env: Record<string, string> = {}): string {
  const p = plan(model, env);
  return kernelCacheKey({
    airRoot: t!.root, modelDir: join(t!.root, p.model.dir), config: p.config as never, seqLen: 2048, cpuAttn: false,
    toolchain: null, compileCommand: 'compile_all_kernels(cache, config, seq_len=2048, cpu_attn=False)', inputs: p.kernel_cache.inputs,
  }).key;
}

const maybe = test.unless(noTree);

maybe('plan: a bf16 model answers Steps 1 and 2; a quantized one is refused in one line, exit 2', async () => {
  const ok = await cli(['plan', '--model-dir', t!.model('smollm2_1_7b'), '--json']);
  assert.is(ok.code, 0, ok.err);
  const p = JSON.parse(ok.out);
  assert.is(p.step1.path, 'inheritance');
  assert.is(p.step1.block.function, 'llama32_1b_prefill.run_transformer_block');
  const text = await cli(['plan', '--model-dir', t!.model('qwen25_0_5b')]);
  assert.is(text.code, 0, text.err);
  assert.match(text.out, /step1: path kernel-first/);
  const refused = await cli(['plan', '--model-dir', t!.model('llama32_1b_q4nx')]);
  assert.is(refused.code, 2);
  assert.is(refused.err.trim().split('\n').length, 1, refused.err);
  assert.match(refused.err, /ffn_out/);
});

maybe('check without an NPU: exit 3 at once, one line naming what is missing, no hub call, nothing left in the model dir', async () => {
  let connections = 0;
  const server = createServer((s) => { connections++; s.destroy(); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  const saved = { ...process.env };
  // Any hub or proxy traffic would land here.
  for (const v of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy']) process.env[v] = `http://127.0.0.1:${port}`;
  process.env.HF_HUB_CACHE = mkdtempSync(join(tmpdir(), 'nbg-hub-'));
  const out = mkdtempSync(join(tmpdir(), 'nbg-real-run-'));
  const before = readdirSync(t!.model('llama32_1b')).sort();
  try {
    const r = await cli(['check', '--model-dir', t!.model('llama32_1b'), '--out', out, '--no-docs']);
    assert.is(r.code, 3, r.err);
    const lines = r.err.split('\n').filter((l) => l.startsWith('npu-block-gate:'));
    assert.is(lines.length, 1, r.err);
    assert.match(lines[0], /infrastructure, not a verdict/);
    assert.match(lines[0], /no NPU/);
    assert.match(lines[0], /meta-llama\/Llama-3\.2-1B-Instruct is not in the HF cache/);
    assert.not.ok(existsSync(join(out, 'probe.json')));
    assert.equal(readdirSync(t!.model('llama32_1b')).sort(), before);
    assert.is(connections, 0);
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
    server.close();
  }
});

maybe('kernel cache key: every compile input counts, and only those', () => {
  const base = keyOf('smollm2_1_7b');
  assert.is(keyOf('smollm2_1_7b'), base, 'stable');
  const edit = (rel: string) => { appendFileSync(join(t!.llms, '..', rel), '\n// touched\n'); };
  const pyEdit = (rel: string) => { appendFileSync(join(t!.llms, rel), '\n# touched\n'); };
  // Unrelated files: another model's prefill, the model's docs.
  pyEdit('qwen3_0_6b/qwen3_0_6b_prefill.py');
  appendFileSync(join(t!.llms, 'smollm2_1_7b/README.md'), '\ntouched\n');
  assert.is(keyOf('smollm2_1_7b'), base, 'unrelated edits keep the key');
  const keys = new Set([base]);
  // A builder outside the model dir (the shared toolkit that replaced llama_kernel_builder).
  pyEdit('shared/builders/rms_gemms_rope_multi.py');
  keys.add(keyOf('smollm2_1_7b'));
  // A C++ kernel source external_kernels.py compiles.
  edit('silu_and_mul/silu_and_mul.cc');
  keys.add(keyOf('smollm2_1_7b'));
  // llama32_1b/, whose compile code smollm2 uses.
  pyEdit('llama32_1b/llama32_1b_prefill.py');
  keys.add(keyOf('smollm2_1_7b'));
  // The KernelCache module itself (compile_and_cache builds the external kernels).
  pyEdit('shared/infra/cache.py');
  keys.add(keyOf('smollm2_1_7b'));
  // An environment variable that changes code generation.
  keys.add(keyOf('smollm2_1_7b', { TEMPORAL_CAUSAL_SKIP: '1' }));
  assert.is(keys.size, 6, 'each change is a new key');
});

maybe('a kernel cache restored into another checkout runs that checkout\'s ELFs, or is refused', () => {
  const store = new KernelStore(mkdtempSync(join(tmpdir(), 'nbg-store-')));
  const a = join(mkdtempSync(join(tmpdir(), 'nbg-ckout-a-')), 'llama32_1b/build_peano/prefill_kernel_cache');
  mkdirSync(a, { recursive: true });
  const entries: Record<string, { output_binary: string; kernel: string; insts: string | null }> = {};
  for (const name of ['rms_gemms_rope', 'o_ffn']) {
    writeFileSync(join(a, `${name}.elf`), `elf of ${name}`);
    entries[name] = { output_binary: join(a, `${name}.elf`), kernel: 'MLIR_AIE', insts: null };
  }
  writeFileSync(join(a, 'manifest.json'), JSON.stringify({ _toolchain: { x: '1' }, entries }));
  store.store('a'.repeat(32), a, { model: 'llama32_1b', created_at: 'now', compile_seconds: 200 });
  const b = join(mkdtempSync(join(tmpdir(), 'nbg-ckout-b-')), 'llama32_1b/build_peano/prefill_kernel_cache');
  assert.ok(store.restore('a'.repeat(32), b));
  const m = JSON.parse(readFileSync(join(b, 'manifest.json'), 'utf8'));
  for (const name of ['rms_gemms_rope', 'o_ffn']) {
    assert.is(m.entries[name].output_binary, join(b, `${name}.elf`));
    assert.ok(existsSync(m.entries[name].output_binary));
  }
  assert.equal(m._toolchain, { x: '1' });
  // A manifest naming a binary the stored cache lacks is refused: nothing is restored or created.
  entries.o_ffn.output_binary = '/elsewhere/other.elf';
  writeFileSync(join(a, 'manifest.json'), JSON.stringify({ entries }));
  store.store('b'.repeat(32), a, { model: 'llama32_1b', created_at: 'now', compile_seconds: 200 });
  const cParent = mkdtempSync(join(tmpdir(), 'nbg-ckout-c-'));
  const c = join(cParent, 'llama32_1b/build_peano/prefill_kernel_cache');
  let why = '';
  assert.is(store.restore('b'.repeat(32), c, (w) => { why = w; }), null);
  assert.match(why, /other\.elf is not in the stored cache/);
  assert.equal(readdirSync(cParent), []);
});

// Issue 17.7: the HF cache the user has, wherever HF_HOME or HF_HUB_CACHE puts it (here under /tmp,
// which the sandbox replaces with its own), is what the sandboxed probe sees: plan run directly and
// plan run inside the sandbox agree on the snapshot; the token beside it stays out of reach.
const noBwrap = realHost.which('bwrap') === null ? { need: 'bwrap' as const, why: 'bubblewrap is not installed (apt install bubblewrap)' } : null;
test.unless(noTree ?? noBwrap)('the HF cache under /tmp or a custom HF_HOME: plan and the sandboxed probe agree on the snapshot; the token stays hidden', async () => {
  const hfId = 'meta-llama/Llama-3.2-1B-Instruct';
  const fakeHub = (hub: string) => {
    const repo = join(hub, `models--${hfId.replace('/', '--')}`);
    mkdirSync(join(repo, 'refs'), { recursive: true });
    writeFileSync(join(repo, 'refs/main'), 'abc123\n');
    mkdirSync(join(repo, 'snapshots/abc123'), { recursive: true });
    for (const f of ['config.json', 'tokenizer.json']) writeFileSync(join(repo, 'snapshots/abc123', f), '{}');
  };
  const hfCache = (env: Record<string, string>, sandboxed: boolean) => {
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      const model = t!.model('llama32_1b');
      const iso = sandboxed ? chooseIsolation({ mode: 'namespace', untrusted: true, allowUnisolated: false }) : undefined;
      if (sandboxed) assert.is(iso!.mode, 'namespace');
      return runProbe(findNumpyPython(), {
        subcommand: 'plan', args: ['--model-dir', model, '--json'], runDir: null, timeoutSec: 300,
        isolation: iso, writable: [model], readable: [t!.root],
      }, { onLine: () => undefined }).then((r) => (JSON.parse(r.stdout).preflight as { id: string; status: string; message: string }[]).find((f) => f.id === 'hf-cache')!);
    } finally {
      for (const k of Object.keys(env)) if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k];
    }
  };
  // HF_HUB_CACHE under /tmp.
  const hub = mkdtempSync(join(tmpdir(), 'nbg-hub-tmp-'));
  chmodSync(hub, 0o755); // a hub others may read (a probe user, or nobody on a root runner)
  fakeHub(hub);
  const direct = await hfCache({ HF_HUB_CACHE: hub }, false);
  const boxed = await hfCache({ HF_HUB_CACHE: hub }, true);
  assert.is(direct.status, 'ok', direct.message);
  assert.is(boxed.status, direct.status, `the sandbox does not see ${hub}: ${boxed.message}`);
  // A custom HF_HOME under /tmp, with the token file beside the hub.
  const home = mkdtempSync(join(tmpdir(), 'nbg-hf-home-'));
  chmodSync(home, 0o755);
  fakeHub(join(home, 'hub'));
  writeFileSync(join(home, 'token'), 'hf_secret_token\n', { mode: 0o600 });
  const saved = process.env.HF_HUB_CACHE;
  delete process.env.HF_HUB_CACHE;
  try {
    assert.is((await hfCache({ HF_HOME: home }, false)).status, 'ok');
    const inBox = await hfCache({ HF_HOME: home }, true);
    assert.is(inBox.status, 'ok', inBox.message);
    // The token: not readable inside the sandbox.
    process.env.HF_HOME = home;
    const iso = chooseIsolation({ mode: 'namespace', untrusted: true, allowUnisolated: false });
    const argv = iso.wrap(['/bin/cat', join(home, 'token')], { writable: [], readable: [], env: process.env, probeEnv: { PATH: '/usr/bin:/bin' }, network: false });
    const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8' });
    assert.not.ok(r.stdout.includes('hf_secret_token'), 'the HF token is readable in the sandbox');
  } finally {
    delete process.env.HF_HOME;
    if (saved !== undefined) process.env.HF_HUB_CACHE = saved;
  }
});

// Issue 29.4: a hub moved to a bigger disk and left behind as a symlink (HF_HUB_CACHE itself, or
// HF_HOME/hub): the sandbox binds the real path, and the probe inside must be pointed there too, so
// plan run directly and plan run inside the sandbox agree on the snapshot.
test.unless(noTree ?? noBwrap)('a symlinked HF hub (HF_HUB_CACHE or HF_HOME/hub): plan and the sandboxed probe agree on the snapshot', async () => {
  const hfId = 'meta-llama/Llama-3.2-1B-Instruct';
  const disk = mkdtempSync(join(tmpdir(), 'nbg-hub-disk-'));
  const repo = join(disk, 'hub', `models--${hfId.replace('/', '--')}`);
  mkdirSync(join(repo, 'refs'), { recursive: true });
  writeFileSync(join(repo, 'refs/main'), 'abc123\n');
  mkdirSync(join(repo, 'snapshots/abc123'), { recursive: true });
  for (const f of ['config.json', 'tokenizer.json']) writeFileSync(join(repo, 'snapshots/abc123', f), '{}');
  const links = mkdtempSync(join(tmpdir(), 'nbg-hub-link-'));
  symlinkSync(join(disk, 'hub'), join(links, 'hub'));
  const plan = async (env: Record<string, string>, sandboxed: boolean) => {
    const saved = { ...process.env };
    for (const k of ['HF_HUB_CACHE', 'HUGGINGFACE_HUB_CACHE', 'HF_HOME']) delete process.env[k];
    Object.assign(process.env, env);
    try {
      const model = t!.model('llama32_1b');
      const iso = sandboxed ? chooseIsolation({ mode: 'namespace', untrusted: true, allowUnisolated: false }) : undefined;
      const r = await runProbe(findNumpyPython(), {
        subcommand: 'plan', args: ['--model-dir', model, '--json'], runDir: null, timeoutSec: 300,
        isolation: iso, writable: [model], readable: [t!.root],
      }, { onLine: () => undefined });
      return (JSON.parse(r.stdout).preflight as { id: string; status: string; message: string }[]).find((f) => f.id === 'hf-cache')!;
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  };
  const envs: Record<string, string>[] = [{ HF_HUB_CACHE: join(links, 'hub') }, { HF_HOME: links }];
  for (const env of envs) {
    const direct = await plan(env, false);
    assert.is(direct.status, 'ok', direct.message);
    const boxed = await plan(env, true);
    assert.is(boxed.status, 'ok', `${JSON.stringify(env)}: the sandbox does not see the hub: ${boxed.message}`);
  }
});

test.run();
