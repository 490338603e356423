// The runner agent on a fake machine: a temp root with dev/, sys/, proc/, tmp/ and stubbed commands.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, chmodSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { main } from '../src/cli.ts';
import { agentMain, type AgentDeps } from '../src/agent/cli.ts';
import type { CmdResult, CommandTable } from '../src/agent/machine.ts';
import { classifyKernelLine, scanKernelLog, parseXrtSmi, parseProcLocks, parseMemlock, parseSize } from '../src/agent/parse.ts';
import { KernelStore } from '../src/cache/kernel.ts';
import type { Check } from '../src/agent/doctor.ts';

const XRT_SMI = `System Configuration
  OS Name              : Linux
  Release              : 6.11.0-29-generic
  Distribution         : Ubuntu 24.04.2 LTS

XRT
  Version              : 2.19.0
  Branch               : HEAD
  Hash                 : 4d7f6c7d8e8d1f0f7b0a3c1e2e5f6a7b8c9d0e1f
  amdxdna Version      : 2.19.0_20250318, 0a3c1e2e5f6a7b8c9d0e1f4d7f6c7d8e8d1f0f7b
  virtio-pci Version   : unknown
  NPU Firmware Version : 1.5.5.391

Device(s) Present
|BDF             |Name          |
|----------------|--------------|
|[0000:c5:00.1]  |RyzenAI-npu4  |
`;

const K = (msg: string) => `Jun 12 03:14:07 amdryzenai5pro340 kernel: amdxdna 0000:c5:00.1: ${msg}`;
const LOG = {
  clean: [
    K('[drm] Initialized amdxdna_accel_driver 0.0.0 20240124 for 0000:c5:00.1 on minor 0'),
    K('aie2_init: firmware version 1.5.5.391'),
    'Jun 12 03:15:00 amdryzenai5pro340 kernel: usb 3-2: new high-speed USB device number 4',
  ],
  timeout: K('[drm] *ERROR* aie2_sched_job_timedout: Job 42 timed out, hwctx ctx.3'),
  badId: K('[drm] *ERROR* mailbox_get_msg: Bad message ID 0x1f'),
  badState: K('[drm] *ERROR* xdna_mailbox_send_msg: Channel in bad state, opcode 0x10 dropped'),
  ctx: K('[drm] *ERROR* aie2_ctx_connect: create context failed, ret -110'),
  power: K('[drm] *ERROR* aie2_smu_start: Access power failed, ret -22'),
};

const ok = (stdout: string): CmdResult => ({ status: 0, stdout, stderr: '' });

interface Fake { root: string; home: string; cache: string; cwd: string; deps: AgentDeps; commands: CommandTable; env: NodeJS.ProcessEnv }

function fakeRunner(o: { journal?: string[] } = {}): Fake {
  const base = mkdtempSync(join(tmpdir(), 'nbg-agent-'));
  const root = join(base, 'root');
  const home = join(base, 'home');
  const cache = join(base, 'kcache');
  const cwd = join(base, 'ws');
  for (const d of ['dev/accel', 'sys/module/amdxdna', 'proc/self', 'tmp']) mkdirSync(join(root, d), { recursive: true });
  mkdirSync(join(home, '.cache/huggingface/hub/models--meta-llama--Llama-3.2-1B'), { recursive: true });
  mkdirSync(cwd, { recursive: true });
  writeFileSync(join(root, 'dev/accel/accel0'), '');
  writeFileSync(join(root, 'sys/module/amdxdna/version'), '2.19.0_20250318\n');
  writeFileSync(join(root, 'proc/self/limits'), limits('unlimited'));
  writeFileSync(join(root, 'proc/locks'), '1: POSIX  ADVISORY  WRITE 901 00:19:555 0 EOF\n');
  const commands: CommandTable = {
    'xrt-smi': (args) => (args[0] === 'examine' ? ok(XRT_SMI) : { status: 1, stdout: '', stderr: 'bad' }),
    journalctl: () => ok((o.journal ?? LOG.clean).join('\n') + '\n'),
    dmesg: () => ({ status: 1, stdout: '', stderr: 'dmesg: read kernel buffer failed: Operation not permitted' }),
  };
  const env: NodeJS.ProcessEnv = { HOME: home, PATH: '/nonexistent', NPU_BLOCK_GATE_CACHE_DIR: cache };
  const deps: AgentDeps = {
    root, env, commands, spawn: false, cwd,
    python: (cmd) => (cmd === 'python3' ? { ok: true, executable: '/opt/mlir-air/ironenv/bin/python3', version: '3.12.3', numpy: '1.26.4' } : { ok: false, why: 'not found' }),
    statfs: () => ({ bavail: 100 * 1024 ** 2, bsize: 4096, blocks: 200 * 1024 ** 2 }),
  };
  return { root, home, cache, cwd, deps, commands, env };
}

function limits(memlock: string) {
  return [
    'Limit                     Soft Limit           Hard Limit           Units     ',
    'Max cpu time              unlimited            unlimited            seconds   ',
    'Max open files            1024                 1048576              files     ',
    `Max locked memory         ${memlock.padEnd(21)}${memlock.padEnd(21)}bytes     `,
    'Max address space         unlimited            unlimited            bytes     ',
  ].join('\n') + '\n';
}

function sink() {
  let text = '';
  const w = new Writable({ write(c, _e, cb) { text += c; cb(); } });
  return { w: w as unknown as NodeJS.WritableStream, get text() { return text; } };
}

async function agent(args: string[], deps: AgentDeps = {}) {
  const out = sink();
  const err = sink();
  const code = await agentMain(args, out.w, err.w, deps);
  return { code, out: out.text, err: err.text };
}

async function doctorJson(f: Fake) {
  const r = await agent(['doctor', '--json', '--root', f.root], f.deps);
  const j = JSON.parse(r.out) as { checks: Check[]; summary: Record<string, number>; exit_code: number };
  const by = (id: string) => j.checks.find((c) => c.id === id)!;
  return { ...r, j, by };
}

test('healthy fake runner: every check ok, exit 0', async () => {
  const f = fakeRunner();
  const r = await doctorJson(f);
  assert.is(r.code, 0, r.err);
  assert.equal(r.j.checks.map((c) => [c.id, c.status]), [
    ['device', 'ok'], ['driver', 'ok'], ['xrt-smi', 'ok'], ['kernel-log', 'ok'], ['memlock', 'ok'],
    ['disk-cache', 'ok'], ['disk-workspace', 'ok'], ['hf-cache', 'ok'], ['python', 'ok'], ['npu-lock', 'ok'],
  ]);
  assert.is(r.by('device').detail, '/dev/accel/accel0');
  assert.match(r.by('driver').detail, /2\.19\.0_20250318/);
  assert.match(r.by('xrt-smi').detail, /RyzenAI-npu4 \[0000:c5:00\.1\]; XRT 2\.19\.0, amdxdna 2\.19\.0_20250318, firmware 1\.5\.5\.391/);
  assert.match(r.by('hf-cache').detail, /1 model/);
  assert.match(r.by('python').detail, /numpy 1\.26\.4/);
  assert.match(r.by('npu-lock').detail, /free \(no lock file yet\)/);
  assert.ok(r.j.checks.every((c) => c.fix === null));
  // The table form says the same.
  const t = await agent(['doctor', '--root', f.root], f.deps);
  assert.is(t.code, 0);
  assert.match(t.out, /10 ok, 0 warn, 0 fail\n$/);
  assert.match(t.out, /^  ok    device +\/dev\/accel\/accel0$/m);
});

test('no /dev/accel: device fails with the power-cycle fix, exit 3 (infrastructure)', async () => {
  const f = fakeRunner();
  rmSync(join(f.root, 'dev/accel'), { recursive: true });
  const r = await doctorJson(f);
  assert.is(r.code, 3);
  assert.is(r.j.exit_code, 3);
  assert.is(r.by('device').status, 'fail');
  assert.match(r.by('device').detail, /driver could not probe/);
  assert.match(r.by('device').fix!, /power-cycle the runner/);
  const t = await agent(['doctor', '--root', f.root], f.deps);
  assert.is(t.code, 3);
  assert.match(t.out, /FAIL  device .*\n +fix: power-cycle the runner/);
  assert.match(t.out, /1 fail: this runner cannot run NPU jobs \(exit 3\)/);
});

test('any accel node counts; a missing driver module fails', async () => {
  const f = fakeRunner();
  rmSync(join(f.root, 'dev/accel/accel0'));
  writeFileSync(join(f.root, 'dev/accel/accel1'), '');
  rmSync(join(f.root, 'sys/module/amdxdna'), { recursive: true });
  const r = await doctorJson(f);
  assert.is(r.by('device').status, 'ok');
  assert.is(r.by('device').detail, '/dev/accel/accel1');
  assert.is(r.by('driver').status, 'fail');
  assert.match(r.by('driver').fix!, /modprobe amdxdna/);
  assert.is(r.code, 3);
});

test('each wedge signature is classified from real-looking kernel log lines', () => {
  assert.is(classifyKernelLine(LOG.timeout)?.id, 'command-timeout');
  assert.is(classifyKernelLine(LOG.timeout)?.severity, 'warn');
  assert.is(classifyKernelLine(LOG.badId)?.id, 'bad-message-id');
  assert.is(classifyKernelLine(LOG.badState)?.id, 'channel-bad-state');
  assert.is(classifyKernelLine(LOG.ctx)?.id, 'ctx-connect');
  assert.is(classifyKernelLine(LOG.power)?.id, 'smu-power');
  assert.is(classifyKernelLine('[ 5123.456789] amdxdna 0000:c5:00.1: [drm] *ERROR* aie2_smu_start: Access power failed, ret -22')?.id, 'smu-power');
  for (const l of LOG.clean) assert.is(classifyKernelLine(l), null, l);
  // Not amdxdna: a timeout elsewhere is no wedge.
  assert.is(classifyKernelLine('Jun 12 03:14:07 h kernel: nvme nvme0: I/O 12 QID 3 timeout, aborting'), null);
  for (const w of [LOG.badId, LOG.badState, LOG.ctx, LOG.power]) assert.is(classifyKernelLine(w)?.severity, 'fail');
  // The scan orders worst first and counts.
  const s = scanKernelLog([LOG.timeout, LOG.timeout, LOG.badId, LOG.power].join('\n'));
  assert.equal(s.found.map((w) => [w.id, w.count]), [['smu-power', 1], ['bad-message-id', 1], ['command-timeout', 2]]);
});

test('doctor: Access power failed fails with the modprobe-else-power-cycle fix', async () => {
  const f = fakeRunner({ journal: [...LOG.clean, LOG.timeout, LOG.badState, LOG.power] });
  const r = await doctorJson(f);
  assert.is(r.code, 3);
  const k = r.by('kernel-log');
  assert.is(k.status, 'fail');
  assert.match(k.detail, /Access power failed/);
  assert.match(k.fix!, /modprobe -r amdxdna && sudo modprobe amdxdna, else power-cycle/);
});

test('doctor: a wedge (Bad message ID, Channel in bad state, ctx connect) fails; a lone command timeout warns', async () => {
  for (const line of [LOG.badId, LOG.badState, LOG.ctx]) {
    const r = await doctorJson(fakeRunner({ journal: [...LOG.clean, LOG.timeout, line] }));
    assert.is(r.by('kernel-log').status, 'fail', line);
    assert.match(r.by('kernel-log').fix!, /modprobe -r amdxdna/);
    assert.is(r.code, 3);
  }
  const t = await doctorJson(fakeRunner({ journal: [...LOG.clean, LOG.timeout] }));
  assert.is(t.by('kernel-log').status, 'warn');
  assert.match(t.by('kernel-log').detail, /timed out x1/);
  assert.is(t.code, 0);
});

test('doctor: signatures before a driver reload are cleared', async () => {
  const r = await doctorJson(fakeRunner({ journal: [LOG.timeout, LOG.badState, ...LOG.clean] }));
  assert.is(r.by('kernel-log').status, 'ok');
  assert.match(r.by('kernel-log').detail, /2 older signature line\(s\) cleared by a driver reload/);
});

test('doctor: journalctl missing falls back to dmesg; neither readable warns', async () => {
  const f = fakeRunner();
  delete f.commands.journalctl;
  f.commands.dmesg = () => ok(`[ 5123.456789] amdxdna 0000:c5:00.1: [drm] *ERROR* mailbox_get_msg: Bad message ID 0x1f\n`);
  let r = await doctorJson(f);
  assert.is(r.by('kernel-log').status, 'fail');
  assert.match(r.by('kernel-log').detail, /^dmesg: /);
  f.commands.dmesg = () => ({ status: 1, stdout: '', stderr: 'dmesg: read kernel buffer failed: Operation not permitted' });
  r = await doctorJson(f);
  assert.is(r.by('kernel-log').status, 'warn');
  assert.match(r.by('kernel-log').detail, /Operation not permitted/);
});

test('doctor: a limited memlock warns with the prlimit fix', async () => {
  const f = fakeRunner();
  writeFileSync(join(f.root, 'proc/self/limits'), limits('8388608'));
  const r = await doctorJson(f);
  assert.is(r.by('memlock').status, 'warn');
  assert.match(r.by('memlock').detail, /8\.0 MiB/);
  assert.match(r.by('memlock').fix!, /sudo prlimit -lunlimited --pid \$\$/);
  assert.is(r.code, 0);
  assert.is(parseMemlock(limits('unlimited')), 'unlimited');
  assert.is(parseMemlock('nothing'), null);
});

test('doctor and status: a held NPU lock names its holder (matched by inode in /proc/locks)', async () => {
  const f = fakeRunner();
  const lock = join(f.root, 'tmp/mlir-air-npu.lock');
  writeFileSync(lock, '');
  const ino = statSync(lock).ino;
  writeFileSync(join(f.root, 'proc/locks'), [
    '1: POSIX  ADVISORY  WRITE 901 00:19:555 0 EOF',
    `2: FLOCK  ADVISORY  WRITE 4242 00:2d:${ino} 0 EOF`,
    `2: -> FLOCK  ADVISORY  WRITE 4343 00:2d:${ino} 0 EOF`,
  ].join('\n') + '\n');
  mkdirSync(join(f.root, 'proc/4242'));
  writeFileSync(join(f.root, 'proc/4242/cmdline'), 'python3\0llama32_1b_inference.py\0--compile-only\0');
  const r = await doctorJson(f);
  const l = r.by('npu-lock');
  assert.is(l.status, 'warn');
  assert.is(l.detail, '/tmp/mlir-air-npu.lock: held by pid 4242 (python3 llama32_1b_inference.py --compile-only), 1 waiting');
  assert.is(r.code, 0);
  const s = await agent(['status', '--json', '--root', f.root], f.deps);
  assert.match(JSON.parse(s.out).lock.holder, /^held by pid 4242 \(python3 llama32_1b_inference\.py/);
  // The lock file exists but nobody holds it.
  writeFileSync(join(f.root, 'proc/locks'), '');
  assert.is((await doctorJson(f)).by('npu-lock').detail, '/tmp/mlir-air-npu.lock: free');
  assert.equal(parseProcLocks(`7: -> FLOCK  ADVISORY  WRITE 10 08:02:99 0 EOF\n`), [{ kind: 'FLOCK', mode: 'ADVISORY', access: 'WRITE', pid: 10, inode: 99, blocked: true }]);
});

test('doctor: xrt-smi missing warns; no device listed warns', async () => {
  const f = fakeRunner();
  delete f.commands['xrt-smi'];
  let r = await doctorJson(f);
  assert.is(r.by('xrt-smi').status, 'warn');
  assert.match(r.by('xrt-smi').fix!, /source \/opt\/xilinx\/xrt\/setup\.sh/);
  assert.is(r.code, 0);
  f.commands['xrt-smi'] = () => ok(XRT_SMI.replace(/\|\[0000.*\n/, ''));
  r = await doctorJson(f);
  assert.is(r.by('xrt-smi').status, 'warn');
  assert.match(r.by('xrt-smi').detail, /no device listed \(XRT 2\.19\.0/);
  assert.equal(parseXrtSmi(XRT_SMI), { xrt: '2.19.0', amdxdna: '2.19.0_20250318', firmware: '1.5.5.391', devices: [{ bdf: '0000:c5:00.1', name: 'RyzenAI-npu4' }] });
});

test('doctor: the default runner spawns real commands from PATH (a stub xrt-smi executable)', async () => {
  const f = fakeRunner();
  const bin = join(f.root, '..', 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'xrt-smi'), `#!/bin/sh\ncat <<'EOF'\n${XRT_SMI}EOF\n`);
  chmodSync(join(bin, 'xrt-smi'), 0o755);
  delete f.commands['xrt-smi'];
  const r = await doctorJson({ ...f, deps: { ...f.deps, spawn: true, env: { ...f.env, PATH: `${bin}:/usr/bin:/bin` } } });
  assert.is(r.by('xrt-smi').status, 'ok', r.by('xrt-smi').detail);
  assert.match(r.by('xrt-smi').detail, /RyzenAI-npu4/);
});

test('doctor: low disk, offline HF cache missing, and no Python', async () => {
  const f = fakeRunner();
  rmSync(join(f.home, '.cache'), { recursive: true });
  const r = await doctorJson({
    ...f,
    deps: {
      ...f.deps,
      env: { ...f.env, HF_HUB_OFFLINE: '1' },
      statfs: () => ({ bavail: 1024, bsize: 1024 * 1024, blocks: 1 << 20 }), // 1 GiB free
      python: () => ({ ok: false, why: 'cannot import numpy' }),
    },
  });
  assert.is(r.by('disk-cache').status, 'warn');
  assert.match(r.by('disk-cache').detail, /1\.0 GiB free \(under 5\.0 GiB\)/);
  assert.is(r.by('disk-workspace').status, 'warn');
  assert.is(r.by('hf-cache').status, 'warn');
  assert.match(r.by('hf-cache').detail, /HF_HUB_OFFLINE=1/);
  assert.is(r.by('python').status, 'fail');
  assert.match(r.by('python').detail, /no Python with numpy found/);
  assert.is(r.code, 3);
  // Online, a missing HF cache is fine.
  const online = await doctorJson({ ...f, deps: { ...f.deps } });
  assert.is(online.by('hf-cache').status, 'ok');
});

function store(f: Fake) {
  const s = new KernelStore(f.cache);
  const src = join(f.cwd, 'src-cache');
  mkdirSync(src, { recursive: true });
  const keys = ['aa', 'bb', 'cc'].map((c) => c.repeat(16));
  keys.forEach((key, i) => {
    writeFileSync(join(src, 'k.elf'), Buffer.alloc(1000 * (i + 1)));
    s.store(key, src, { model: `m${i}`, created_at: `2025-06-0${i + 1}T00:00:00.000Z`, compile_seconds: 10 });
    const t = new Date(Date.UTC(2025, 5, 10 + i));
    utimesSync(join(f.cache, 'kernels', key, 'meta.json'), t, t);
  });
  return keys;
}

test('agent cache stats lists entries most recent first with the total', async () => {
  const f = fakeRunner();
  const keys = store(f);
  const r = await agent(['cache', 'stats', '--json'], f.deps);
  assert.is(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.is(j.root, f.cache);
  assert.equal(j.entries.map((e: { key: string }) => e.key), [...keys].reverse());
  assert.is(j.total_bytes, 6000);
  assert.is(j.entries[0].last_used, '2025-06-12T00:00:00.000Z');
  const t = await agent(['cache', 'stats', '--cache-dir', f.cache], {});
  assert.match(t.out, /3 entries, 5\.9 KiB of 20\.0 GiB/);
  assert.match(t.out, /^  key +model +size +created +last used$/m);
  assert.match(t.out, /^  cccccccccccccccc  m2 +2\.9 KiB  2025-06-03 00:00:00Z  2025-06-12 00:00:00Z$/m);
});

test('agent cache gc trims least recently used first and prints what it dropped', async () => {
  const f = fakeRunner();
  const keys = store(f);
  const r = await agent(['cache', 'gc', '--max-bytes', '3500', '--json'], f.deps);
  assert.is(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.equal(j.dropped.map((e: { key: string }) => e.key), [keys[0], keys[1]]);
  assert.is(j.kept, 1);
  assert.is(j.total_bytes, 3000);
  assert.ok(!existsSync(join(f.cache, 'kernels', keys[0])) && existsSync(join(f.cache, 'kernels', keys[2])));
  const again = await agent(['cache', 'gc', '--max-bytes', '1K'], f.deps);
  assert.match(again.out, /dropped 1 \(2\.9 KiB\), kept 0 \(0 B of 1\.0 KiB\)/);
  assert.match(again.out, /cccccccccccccccc  m2/);
  const bad = await agent(['cache', 'gc', '--max-bytes', 'lots'], f.deps);
  assert.is(bad.code, 2);
  assert.match(bad.err, /^npu-block-gate: error: --max-bytes "lots": not a size/);
  assert.is(parseSize('20G'), 20 * 1024 ** 3);
  assert.is(parseSize('1.5GiB'), 1.5 * 1024 ** 3);
  assert.is(parseSize('-1'), null);
});

test('agent status: device, driver, lock, cache and the last runs on one screen', async () => {
  const f = fakeRunner();
  store(f);
  const run = join(f.cwd, 'runs/tiny_llama-20250612-031407');
  mkdirSync(run, { recursive: true });
  writeFileSync(join(run, 'report.json'), JSON.stringify({ outcome: 'pass', model: { name: 'tiny_llama' }, created_at: '2025-06-12T03:14:07Z' }));
  const r = await agent(['status', '--root', f.root], f.deps);
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /^device: +\/dev\/accel\/accel0$/m);
  assert.match(r.out, /^driver: +amdxdna 2\.19\.0_20250318$/m);
  assert.match(r.out, /^lock: +\/tmp\/mlir-air-npu\.lock: free$/m);
  assert.match(r.out, /^cache: .*: 3 entries, 5\.9 KiB$/m);
  assert.match(r.out, /^  pass +tiny_llama  .*tiny_llama-20250612-031407$/m);
  assert.ok(r.out.split('\n').length < 15);
});

// ---- lock status | wait

function heldLock(f: Fake, o: { waiters?: number } = {}) {
  const lock = join(f.root, 'tmp/mlir-air-npu.lock');
  writeFileSync(lock, '');
  const ino = statSync(lock).ino;
  const lines = [`1: FLOCK  ADVISORY  WRITE 4242 00:2d:${ino} 0 EOF`];
  for (let i = 0; i < (o.waiters ?? 0); i++) lines.push(`1: -> FLOCK  ADVISORY  WRITE ${5000 + i} 00:2d:${ino} 0 EOF`);
  writeFileSync(join(f.root, 'proc/locks'), lines.join('\n') + '\n');
  mkdirSync(join(f.root, 'proc/4242'), { recursive: true });
  writeFileSync(join(f.root, 'proc/4242/cmdline'), 'flock\0-x\0-w\x001800\0/tmp/mlir-air-npu.lock\0lit\0');
  return lock;
}

test('lock status: free, then held by a pid with its command line and the waiters', async () => {
  const f = fakeRunner();
  let r = await agent(['lock', 'status', '--root', f.root], f.deps);
  assert.is(r.code, 0, r.err);
  assert.is(r.out, '/tmp/mlir-air-npu.lock: free (no lock file yet); 0 waiting\n');
  heldLock(f, { waiters: 2 });
  r = await agent(['lock', 'status', '--root', f.root], f.deps);
  assert.is(r.out, '/tmp/mlir-air-npu.lock: held by pid 4242 (flock -x -w 1800 /tmp/mlir-air-npu.lock lit); 2 waiting\n');
  const j = JSON.parse((await agent(['lock', 'status', '--json', '--root', f.root], f.deps)).out);
  assert.equal([j.free, j.holder.pid, j.waiters, j.exists], [false, 4242, 2, true]);
  // --path and $NPU_BLOCK_GATE_NPU_LOCK pick another file (free: nobody locks its inode).
  writeFileSync(join(f.root, 'tmp/other.lock'), '');
  r = await agent(['lock', 'status', '--path', '/tmp/other.lock', '--root', f.root], f.deps);
  assert.is(r.out, '/tmp/other.lock: free; 0 waiting\n');
  r = await agent(['lock', 'status', '--root', f.root], { ...f.deps, env: { ...f.env, NPU_BLOCK_GATE_NPU_LOCK: '/tmp/other.lock' } });
  assert.is(r.out, '/tmp/other.lock: free; 0 waiting\n');
});

test('lock wait: returns at once when free; flock -w in 15 s slices with progress, exit 3 on timeout', async () => {
  const f = fakeRunner();
  const calls: string[][] = [];
  f.commands.flock = (args) => { calls.push(args); return { status: 0, stdout: '', stderr: '' }; };
  // No lock file: free without running flock.
  let r = await agent(['lock', 'wait', '--root', f.root], f.deps);
  assert.is(r.code, 0, r.err);
  assert.is(r.out, '/tmp/mlir-air-npu.lock: free\n');
  assert.is(calls.length, 0);
  const lock = heldLock(f);
  r = await agent(['lock', 'wait', '--root', f.root, '--json'], f.deps);
  assert.is(r.code, 0);
  assert.equal(JSON.parse(r.out), { path: '/tmp/mlir-air-npu.lock', free: true, waited_s: 0, method: 'flock', holder: null });
  assert.equal(calls, [['-w', '15', lock, 'true']]);
  // flock times out (exit 1) every slice: 15 + 15 + 10 s, a progress line naming the holder after each full slice.
  calls.length = 0;
  f.commands.flock = (args) => { calls.push(args); return { status: 1, stdout: '', stderr: '' }; };
  r = await agent(['lock', 'wait', '--timeout', '40', '--root', f.root], f.deps);
  assert.is(r.code, 3);
  assert.equal(calls.map((a) => a[1]), ['15', '15', '10']);
  assert.match(r.out, /^waiting for \/tmp\/mlir-air-npu\.lock: held by pid 4242 \(flock -x .*\) \(15s of 40s\)\nwaiting for .*\(30s of 40s\)\n\/tmp\/mlir-air-npu\.lock: still held by pid 4242 .* after 40s \(timeout\)\n$/);
  // A tiny timeout.
  r = await agent(['lock', 'wait', '--timeout', '0.05', '--root', f.root], f.deps);
  assert.is(r.code, 3);
  assert.equal(calls[calls.length - 1], ['-w', '0.05', lock, 'true']);
  const bad = await agent(['lock', 'wait', '--timeout', 'soon'], f.deps);
  assert.is(bad.code, 2);
});

test('lock wait without the flock command polls /proc/locks (no real sleeping)', async () => {
  const f = fakeRunner();
  heldLock(f);
  let slept = 0;
  const sleep = async (ms: number) => {
    slept += ms;
    if (slept >= 20_000) writeFileSync(join(f.root, 'proc/locks'), ''); // the holder exits after 20 s
  };
  const t0 = Date.now();
  let r = await agent(['lock', 'wait', '--root', f.root], { ...f.deps, sleep });
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /^waiting for .*: held by pid 4242 .*\(15s of 1800s\)\n\/tmp\/mlir-air-npu\.lock: free after 20s\n$/);
  heldLock(f);
  slept = -1e9;
  r = await agent(['lock', 'wait', '--timeout', '3', '--json', '--root', f.root], { ...f.deps, sleep });
  assert.is(r.code, 3);
  const j = JSON.parse(r.out);
  assert.equal([j.free, j.method, j.waited_s], [false, 'poll', 3]);
  assert.match(j.holder, /^held by pid 4242/);
  assert.ok(Date.now() - t0 < 1000);
});

// ---- hooks install, hook job-started | job-completed

const SELF = { node: '/usr/bin/node', execArgv: [], script: '/opt/npu-block-gate/dist/cli.js' };

test('hooks install: two executable shims calling our CLI, the runner .env updated in place, idempotent', async () => {
  const f = fakeRunner();
  const dir = join(f.home, 'hooks dir');
  const runner = join(f.home, 'actions-runner');
  mkdirSync(runner);
  const before = 'LANG=C.UTF-8\nACTIONS_RUNNER_HOOK_JOB_STARTED=/old/start.sh\r\nHF_HUB_OFFLINE=1\n# comment  kept\nPATH=/usr/bin:/bin';
  writeFileSync(join(runner, '.env'), before);
  const args = ['hooks', 'install', '--dir', dir, '--runner-dir', runner, '--cache-max-bytes', '10G'];
  const r = await agent(args, { ...f.deps, self: SELF });
  assert.is(r.code, 0, r.err);
  const started = join(dir, 'job-started.sh');
  const completed = join(dir, 'job-completed.sh');
  for (const p of [started, completed]) assert.is(statSync(p).mode & 0o777, 0o755, p);
  assert.match(readFileSync(started, 'utf8'), /^#!\/bin\/sh\n.*\nexec \/usr\/bin\/node \/opt\/npu-block-gate\/dist\/cli\.js agent hook job-started --fork-policy deny "\$@"\n$/);
  assert.ok(readFileSync(completed, 'utf8').includes(`exec /usr/bin/node /opt/npu-block-gate/dist/cli.js agent hook job-completed --dir '${dir}' --cache-max-bytes 10G "$@"\n`));
  assert.is(readFileSync(join(runner, '.env'), 'utf8'),
    `LANG=C.UTF-8\nACTIONS_RUNNER_HOOK_JOB_STARTED=${started}\r\nHF_HUB_OFFLINE=1\n# comment  kept\nPATH=/usr/bin:/bin\nACTIONS_RUNNER_HOOK_JOB_COMPLETED=${completed}\n`);
  assert.match(r.out, /^wrote +.*job-started\.sh\nwrote +.*job-completed\.sh\nupdated +.*\.env/);
  assert.ok(!readdirSync(dir).some((n) => n.includes('.tmp-')));
  // Again: nothing changes.
  const mtime = statSync(join(runner, '.env')).mtimeMs;
  const again = await agent(args, { ...f.deps, self: SELF });
  assert.is(again.code, 0);
  assert.equal(again.out.split('\n').filter(Boolean).map((l) => l.split(/\s+/)[0]), ['unchanged', 'unchanged', 'unchanged']);
  assert.is(statSync(join(runner, '.env')).mtimeMs, mtime);
  // Without --runner-dir it prints the lines to add; the default dir is ~/.npu-block-gate/hooks.
  const p = await agent(['hooks', 'install', '--fork-policy', 'allow'], { ...f.deps, self: SELF });
  assert.is(p.code, 0, p.err);
  assert.ok(p.out.includes(`  ACTIONS_RUNNER_HOOK_JOB_STARTED=${join(f.home, '.npu-block-gate/hooks/job-started.sh')}\n`));
  assert.match(readFileSync(join(f.home, '.npu-block-gate/hooks/job-started.sh'), 'utf8'), /--fork-policy allow/);
  assert.is((await agent(['hooks', 'install', '--fork-policy', 'maybe'], { ...f.deps, self: SELF })).code, 2);
});

test('a written hook shim runs this CLI (src/cli.ts through tsx)', async () => {
  const f = fakeRunner();
  const dir = join(f.home, 'hooks');
  await agent(['hooks', 'install', '--dir', dir], f.deps);
  const text = readFileSync(join(dir, 'job-started.sh'), 'utf8');
  assert.ok(text.includes(`${process.execPath} `), text);
  assert.match(text, / agent hook job-started --fork-policy deny "\$@"\n$/);
});

function event(f: Fake, head: string | null, base: string) {
  const p = join(f.cwd, 'event.json');
  writeFileSync(p, JSON.stringify({ action: 'opened', pull_request: { number: 7, head: { repo: head ? { full_name: head } : null }, base: { repo: { full_name: base } } } }));
  return p;
}

test('hook job-started: an unhealthy runner fails the job with the doctor table; deny refuses fork PRs only', async () => {
  const f = fakeRunner();
  let r = await agent(['hook', 'job-started', '--root', f.root], f.deps);
  assert.is(r.code, 0, r.out + r.err);
  assert.match(r.out, /10 ok, 0 warn, 0 fail\n.*runner healthy, fork policy deny: ok\n$/);
  // A same-repo PR passes under deny.
  const same = { ...f.deps, env: { ...f.env, GITHUB_EVENT_PATH: event(f, 'Xilinx/mlir-air', 'Xilinx/mlir-air') } };
  assert.is((await agent(['hook', 'job-started', '--root', f.root], same)).code, 0);
  // A fork PR fails under deny with one clear line, passes under allow.
  const fork = { ...f.deps, env: { ...f.env, GITHUB_EVENT_PATH: event(f, 'mallory/mlir-air', 'Xilinx/mlir-air') } };
  r = await agent(['hook', 'job-started', '--root', f.root], fork);
  assert.is(r.code, 1);
  assert.match(r.out, /\nnpu-block-gate: fork policy deny: pull request from mallory\/mlir-air into Xilinx\/mlir-air runs untrusted code on this runner's NPU; refusing the job\n$/);
  assert.is((await agent(['hook', 'job-started', '--fork-policy', 'allow', '--root', f.root], fork)).code, 0);
  const gone = { ...f.deps, env: { ...f.env, GITHUB_EVENT_PATH: event(f, null, 'Xilinx/mlir-air') } };
  assert.match((await agent(['hook', 'job-started', '--root', f.root], gone)).out, /from a deleted fork/);
  // Unhealthy (the NPU wedged): exit 1 before the job, the table in the job log.
  const sick = fakeRunner({ journal: [...LOG.clean, LOG.power] });
  r = await agent(['hook', 'job-started', '--root', sick.root], sick.deps);
  assert.is(r.code, 1);
  assert.match(r.out, /FAIL  kernel-log .*Access power failed/);
  assert.match(r.out, /the runner is not healthy; failing the job before it runs\n$/);
});

test('hook job-completed: appends diagnostics to the day log, keeps 14 days, runs cache gc', async () => {
  const f = fakeRunner({ journal: [...LOG.clean, LOG.timeout] });
  const keys = store(f);
  const dir = join(f.home, 'hooks');
  mkdirSync(join(dir, 'logs'), { recursive: true });
  writeFileSync(join(dir, 'logs/2025-05-01.log'), 'old\n');
  writeFileSync(join(dir, 'logs/2025-06-01.log'), 'recent\n');
  const deps = { ...f.deps, now: () => new Date('2025-06-14T10:00:00Z'), env: { ...f.env, GITHUB_REPOSITORY: 'Xilinx/mlir-air', GITHUB_RUN_ID: '99' } };
  const r = await agent(['hook', 'job-completed', '--dir', dir, '--cache-max-bytes', '3500', '--root', f.root], deps);
  assert.is(r.code, 0, r.err);
  const log = readFileSync(join(dir, 'logs/2025-06-14.log'), 'utf8');
  assert.match(log, /^=== job-completed 2025-06-14T10:00:00\.000Z Xilinx\/mlir-air run 99 ===\n--- kernel log, amdxdna lines \(journalctl -k \(last 1h\)\): 3\n/);
  assert.ok(log.includes(LOG.timeout) && !log.includes('usb 3-2'));
  assert.match(log, /--- xrt-smi examine \(exit 0\)\nSystem Configuration/);
  assert.equal(readdirSync(join(dir, 'logs')).sort(), ['2025-06-01.log', '2025-06-14.log']);
  assert.match(r.out, /dropped 1 log\(s\) older than 14 days/);
  assert.match(r.out, /dropped 2 .*kept 1/);
  assert.ok(!existsSync(join(f.cache, 'kernels', keys[0])) && existsSync(join(f.cache, 'kernels', keys[2])));
  // A second job the same day appends.
  await agent(['hook', 'job-completed', '--dir', dir, '--root', f.root], deps);
  assert.is(readFileSync(join(dir, 'logs/2025-06-14.log'), 'utf8').match(/=== job-completed/g)!.length, 2);
});

test('usage: unknown subcommand, unknown cache command, stray option: exit 2, one line', async () => {
  for (const [args, re] of [
    [['agent', 'bogus'], /unknown agent command "bogus"/],
    [['agent', 'cache', 'wipe'], /unknown cache command "wipe"/],
    [['agent', 'cache'], /agent cache needs stats or gc/],
    [['agent', 'status', '--max-bytes', '1'], /option --max-bytes does not apply to agent status/],
    [['agent', 'doctor', '--frobnicate'], /Unknown option '--frobnicate'/],
    [['agent', 'doctor', 'extra'], /unexpected argument "extra"/],
  ] as [string[], RegExp][]) {
    const out = sink();
    const err = sink();
    const code = await main(args, out.w, err.w);
    assert.is(code, 2, args.join(' '));
    assert.match(err.text, re);
    assert.match(err.text, /^npu-block-gate: error: [^\n]+\n$/);
    assert.is(out.text, '');
  }
});

test('--help: agent, agent --help, help agent, and the top-level help names the agent', async () => {
  for (const args of [['agent'], ['agent', '--help'], ['help', 'agent'], ['agent', 'doctor', '--help'], ['agent', 'cache', '--help']]) {
    const out = sink();
    const code = await main(args, out.w, sink().w);
    assert.is(code, 0, args.join(' '));
    assert.match(out.text, /^npu-block-gate agent: the self-hosted NPU runner side/);
    assert.match(out.text, /agent cache gc \[--max-bytes N\]/);
  }
  const top = sink();
  assert.is(await main(['--help'], top.w, sink().w), 0);
  assert.match(top.text, /npu-block-gate agent doctor\|status\|lock\|hooks\|cache/);
});

test.run();
