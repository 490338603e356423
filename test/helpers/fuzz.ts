// The tensor-file fuzzer (issue 9): valid seed files in every layout the readers accept (.npy v1-3,
// f32/f16/bf16, fortran and big-endian; .npz stored, deflated, Zip64, several members; .safetensors
// with metadata and several tensors), mutated blindly (bit flips, truncation, splices, integers)
// and with format knowledge (.npy header fields, the safetensors JSON header, zip directory fields),
// then opened and judged with one engine exactly as `report` does (openTensor, the reference check,
// compare() with itself as the reference). A case ends "ok" (judged), "input" (refused with an
// InputError, one line naming the file) or "crash" (anything else thrown). Hangs and hard crashes
// (a signal, an abort in the addon) are seen by the parent, which runs cases in a worker process
// and restarts it past the case that never finished.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { npyBytes, npyHeader, safetensorsBytes, zipBytes, f32Bytes } from './bytes.ts';

export type Format = 'npy' | 'npz' | 'safetensors';
export const FORMATS: Format[] = ['npy', 'npz', 'safetensors'];

/** xorshift32: a case is a pure function of (seed, index). */
export function rng(seed: number): () => number {
  let s = (seed ^ 0x9e3779b9) >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 2 ** 32;
  };
}

type R = () => number;
const int = (r: R, n: number) => Math.floor(r() * n);
const pick = <T>(r: R, xs: readonly T[]): T => xs[int(r, xs.length)];

function values(r: R, n: number): number[] {
  return Array.from({ length: n }, () => (r() * 4 - 2) * (r() < 0.05 ? 1e30 : 1));
}

function payload(r: R, dtype: 'f32' | 'f16' | 'bf16', n: number, be = false): Buffer {
  if (dtype === 'f32') {
    const b = f32Bytes(values(r, n));
    if (be) for (let i = 0; i < b.length; i += 4) b.subarray(i, i + 4).reverse();
    return b;
  }
  const b = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) {
    const v = int(r, 0x10000);
    if (be) b.writeUInt16BE(v, i * 2);
    else b.writeUInt16LE(v, i * 2);
  }
  return b;
}

const SHAPES = [[3, 5], [1, 7], [4, 4], [2, 3, 4], [6, 1], [8], [5, 16]];

/** One valid .npy: a random dtype, shape, version, byte order and layout. */
function seedNpy(r: R): { bytes: Buffer; u2: boolean } {
  const shape = pick(r, SHAPES);
  const n = shape.reduce((a, b) => a * b, 1);
  const kind = pick(r, ['<f4', '>f4', '<f2', '>f2', '<u2', '<V2', 'bfloat16'] as const);
  const dtype = kind.includes('f4') ? 'f32' : kind.includes('f2') ? 'f16' : 'bf16';
  const fortran = shape.length === 2 && r() < 0.25;
  const version = pick(r, [1, 1, 2, 3] as const);
  return { bytes: npyBytes(npyHeader(kind, shape, fortran), payload(r, dtype, n, kind.startsWith('>')), version), u2: kind === '<u2' || r() < 0.2 };
}

function seedNpz(r: R): { bytes: Buffer; u2: boolean; key?: string } {
  const members = 1 + (r() < 0.2 ? 1 : 0);
  const ms = Array.from({ length: members }, (_, i) => {
    const s = seedNpy(r);
    return { name: i === 0 ? 'arr_0.npy' : `extra_${i}.npy`, data: s.bytes, deflate: r() < 0.6, u2: s.u2 };
  });
  return { bytes: zipBytes(ms, r() < 0.2), u2: ms[0].u2, key: members > 1 ? 'arr_0' : undefined };
}

function seedSafetensors(r: R): { bytes: Buffer; u2: boolean; key?: string } {
  const count = 1 + (r() < 0.25 ? 1 : 0);
  const tensors: Record<string, { dtype: string; shape: number[]; data: Uint8Array }> = {};
  for (let i = 0; i < count; i++) {
    const shape = pick(r, SHAPES);
    const n = shape.reduce((a, b) => a * b, 1);
    const dtype = pick(r, ['F32', 'F16', 'BF16'] as const);
    tensors[i === 0 ? 'ffn_out' : `t${i}`] = { dtype, shape, data: payload(r, dtype === 'F32' ? 'f32' : dtype === 'F16' ? 'f16' : 'bf16', n) };
  }
  return { bytes: safetensorsBytes(tensors), u2: false, key: count > 1 ? 'ffn_out' : undefined };
}

const INTERESTING_U32 = [0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff];
const INTERESTING_TEXT = ['0', '-1', '1', '9999999999', '9007199254740993', '1e308', 'None', 'True', "'<f8'", "'>f4'", "'|V2'", "'<u2'", "'O'", "'<c8'", '()', '(0,)', '[', '{', "''"];

function flipBits(r: R, b: Buffer, region = b.length): void {
  for (let k = 1 + int(r, 8); k > 0; k--) {
    const at = int(r, Math.max(1, Math.min(region, b.length)));
    if (at < b.length) b[at] ^= 1 << int(r, 8);
  }
}

function u32At(r: R, b: Buffer): void {
  if (b.length < 4) return;
  const at = int(r, b.length - 3);
  const v = r() < 0.7 ? pick(r, INTERESTING_U32) : int(r, 2 ** 32);
  b.writeUInt32LE(v >>> 0, at);
}

/** Text-level edits of the .npy header dict (inside the first bytes of an .npy, or of a stored member). */
function npyHeaderEdit(r: R, b: Buffer): Buffer {
  const text = b.toString('latin1');
  const start = text.indexOf('{');
  const end = text.indexOf('}', start);
  if (start < 0 || end < 0) return b;
  const head = text.slice(start, end + 1);
  const tokens = [...head.matchAll(/'[^']*'|\d+|True|False|\(|\)/g)];
  if (!tokens.length) return b;
  const t = pick(r, tokens);
  const repl = pick(r, INTERESTING_TEXT);
  const edited = head.slice(0, t.index!) + repl + head.slice(t.index! + t[0].length);
  return Buffer.from(text.slice(0, start) + edited + text.slice(end + 1), 'latin1');
}

function safetensorsHeaderEdit(r: R, b: Buffer): Buffer {
  if (b.length < 8) return b;
  const n = Number(b.readBigUInt64LE(0));
  if (n > b.length - 8) return b;
  let h: any;
  try {
    h = JSON.parse(b.subarray(8, 8 + n).toString('utf8'));
  } catch {
    return b;
  }
  const names = Object.keys(h).filter((k) => k !== '__metadata__');
  const e = h[pick(r, names)];
  if (!e) return b;
  const bad = [0, -1, 1.5, 2 ** 53 + 2, 1e300, '3', null, [], {}, 'F64', true];
  switch (int(r, 7)) {
    case 0: e.dtype = pick(r, ['F64', 'I32', 'U8', 'BF16', 'F16', 'F32', 'bf16', 7]); break;
    case 1: if (Array.isArray(e.shape) && e.shape.length) e.shape[int(r, e.shape.length)] = pick(r, bad); else e.shape = pick(r, bad); break;
    case 2: e.shape = r() < 0.5 ? [] : [...(e.shape ?? []), 1 + int(r, 3)]; break;
    case 3: e.data_offsets = [pick(r, [0, 1, -1, 2 ** 53]), pick(r, [0, 4, 2 ** 40, -5, 1.5])]; break;
    case 4: e.data_offsets = pick(r, bad); break;
    case 5: h[`x${int(r, 9)}`] = { dtype: 'F32', shape: [1], data_offsets: [0, 4] }; break;
    default: delete h.__metadata__; h.__metadata__ = pick(r, [{ a: 'b' }, 'x', null, { nested: { deep: [1] } }]);
  }
  const json = Buffer.from(JSON.stringify(h), 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(r() < 0.9 ? json.length : json.length + int(r, 64) - 32 < 0 ? 0 : json.length + int(r, 64) - 32));
  return Buffer.concat([len, json, b.subarray(8 + n)]);
}

/** Edits of zip directory fields: sizes, offsets, method, flags, counts, name lengths. */
function zipFieldEdit(r: R, b: Buffer): void {
  const sigs = [0x02014b50, 0x04034b50, 0x06054b50, 0x06064b50, 0x07064b50];
  const at: number[] = [];
  for (let i = 0; i + 4 <= b.length; i++) if (sigs.includes(b.readUInt32LE(i))) at.push(i);
  if (!at.length) return;
  const base = pick(r, at);
  const sig = b.readUInt32LE(base);
  const fields: Record<number, number[]> = {
    0x02014b50: [8, 10, 16, 20, 24, 28, 30, 32, 42], // flags, method, crc, csize, size, name/extra/comment len, local offset
    0x04034b50: [6, 8, 14, 18, 22, 26, 28],
    0x06054b50: [8, 10, 12, 16, 20],
    0x06064b50: [24, 32, 40, 48],
    0x07064b50: [8, 16],
  };
  const off = base + pick(r, fields[sig]);
  const v = r() < 0.6 ? pick(r, INTERESTING_U32) : int(r, 2 ** 32);
  if (sig === 0x06064b50 || (sig === 0x07064b50 && off === base + 8)) {
    if (off + 8 <= b.length) b.writeBigUInt64LE(BigInt(v) * BigInt(r() < 0.2 ? 2 ** 20 : 1), off);
  } else if (off + 4 <= b.length) {
    if ([8, 10, 26, 28, 30, 32, 6].includes(off - base)) b.writeUInt16LE(v & 0xffff, off);
    else b.writeUInt32LE(v >>> 0, off);
  }
}

export interface Case {
  index: number;
  format: Format;
  bytes: Buffer;
  u2: boolean;
  key?: string;
  mutations: string[];
}

/** The case `index` of run `seed`: a seed file of its format and one to three mutations. */
export function makeCase(seed: number, index: number): Case {
  const r = rng((seed * 0x1000193) ^ (index * 0x85ebca6b));
  const format = FORMATS[index % 3];
  const s: { bytes: Buffer; u2: boolean; key?: string } = format === 'npy' ? seedNpy(r) : format === 'npz' ? seedNpz(r) : seedSafetensors(r);
  let b: Buffer = Buffer.from(s.bytes);
  const other = format === 'npy' ? seedNpy(r).bytes : format === 'npz' ? seedNpz(r).bytes : seedSafetensors(r).bytes;
  const mutations: string[] = [];
  const count = r() < 0.08 ? 0 : 1 + int(r, 3); // a few unmutated files: the valid path is fuzzed too
  for (let k = 0; k < count; k++) {
    const m = int(r, 10);
    switch (m) {
      case 0: flipBits(r, b); mutations.push('bits'); break;
      case 1: flipBits(r, b, 160); mutations.push('header-bits'); break;
      case 2: b = b.subarray(0, int(r, b.length + 1)); mutations.push('truncate'); break;
      case 3: b = Buffer.concat([b, Buffer.from(Array.from({ length: 1 + int(r, 64) }, () => int(r, 256)))]); mutations.push('extend'); break;
      case 4: u32At(r, b); mutations.push('u32'); break;
      case 5: {
        const from = int(r, other.length);
        const len = 1 + int(r, 48);
        const to = int(r, b.length + 1);
        b = Buffer.concat([b.subarray(0, to), other.subarray(from, from + len), b.subarray(Math.min(b.length, to + (r() < 0.5 ? len : 0)))]);
        mutations.push('splice');
        break;
      }
      case 6: b[int(r, Math.max(1, b.length))] = pick(r, [0, 0xff, 0x7f, 0x80, 0x20, 0x0a, 0x27, 0x7b]); mutations.push('byte'); break;
      default:
        if (format === 'npy') { b = npyHeaderEdit(r, b); mutations.push('npy-header'); }
        else if (format === 'safetensors') { b = safetensorsHeaderEdit(r, b); mutations.push('st-header'); }
        else if (r() < 0.7) { zipFieldEdit(r, b); mutations.push('zip-field'); }
        else { b = npyHeaderEdit(r, b); mutations.push('npz-member-header'); }
    }
    b = Buffer.from(b);
  }
  return { index, format, bytes: b, u2: s.u2, key: s.key, mutations };
}

export type Outcome = 'ok' | 'input' | `crash:${string}`;

/**
 * Runs one case as `report` would: open (a regular file, checked layout), the reference check,
 * compare() against itself with `engine`. Never throws: a thrown non-InputError is a crash.
 */
export async function runCase(c: Case, dir: string, engine: 'js' | 'native'): Promise<Outcome> {
  const { openTensor } = await import('../../src/tensor/index.ts');
  const { compare, selectEngine } = await import('../../src/metrics/index.ts');
  const { referenceFault } = await import('../../src/gates/reference.ts');
  const { GateError, EXIT } = await import('../../src/errors.ts');
  const kernel = selectEngine({ NPU_BLOCK_GATE_ENGINE: engine });
  const path = join(dir, `case.${c.format}`);
  writeFileSync(path, c.bytes);
  try {
    const opts = { u2IsBf16: c.u2, key: c.key };
    const a = openTensor(path, opts);
    try {
      const b = openTensor(path, opts);
      try {
        referenceFault(b, b.rows);
        await compare(a, b, { realLen: b.rows, threshold: 0.99 }, kernel);
      } finally {
        b.close();
      }
    } finally {
      a.close();
    }
    return 'ok';
  } catch (e) {
    if (e instanceof GateError && e.exitCode === EXIT.input && !/\n/.test(e.message) && e.message.includes(path)) return 'input';
    return `crash:${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`.replace(/\s*\n\s*/g, ' ') as Outcome;
  }
}

/** The worker: runs cases [from, to) of `seed` and prints "<index> <outcome>" per case, then its peak RSS. */
export async function worker(seed: number, from: number, to: number, engine: 'js' | 'native'): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'nbg-fuzz-'));
  try {
    // Self-test of the parent's watchdog (test/fuzz.test.ts): "hang:I" never finishes case I,
    // "abort:I" kills the process in case I, as a fault in the addon would; with ";instant" every
    // other case is judged "ok" without any work, so no real case's speed is in the self-test.
    const [spec, ...flags] = (process.env.NPU_BLOCK_GATE_FUZZ_SELFTEST ?? '').split(';');
    const [fault, at] = spec.split(':');
    const instant = flags.includes('instant');
    // "slowstart:S": the worker takes S seconds to start, as tsx can on a loaded machine.
    const slow = Number(flags.find((f) => f.startsWith('slowstart:'))?.slice(10) ?? 0);
    if (slow > 0) await new Promise((done) => setTimeout(done, slow * 1000));
    // The parent's watchdog times cases from here: starting the process (tsx, the imports) is not a case.
    process.stdout.write('ready\n');
    for (let i = from; i < to; i++) {
      if (String(i) === at && fault === 'hang') await new Promise(() => setInterval(() => {}, 1000));
      if (String(i) === at && fault === 'abort') process.kill(process.pid, 'SIGSEGV');
      const out = instant ? 'ok' : await runCase(makeCase(seed, i), dir, engine);
      process.stdout.write(`${i} ${out}\n`);
      if (i % 250 === 0) process.stdout.write(`rss ${process.resourceUsage().maxRSS * 1024}\n`);
    }
    process.stdout.write(`rss ${process.resourceUsage().maxRSS * 1024}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface FuzzSummary {
  engine: 'js' | 'native';
  seed: number;
  cases: number;
  ok: number;
  input: number;
  crashes: { index: number; format: Format; mutations: string[]; message: string }[];
  hangs: { index: number; format: Format; mutations: string[] }[];
  /** The highest resident set size a worker process reached (bytes). */
  peakRss: number;
  seconds: number;
}

const WORKER = fileURLToPath(new URL('../../bench/fuzz.ts', import.meta.url));

/**
 * Runs `cases` cases of `seed` on `engine` in worker processes. A case that prints nothing for
 * `hangSeconds` is a hang (the worker is killed); a worker that dies mid-case is a crash there.
 * Either way a new worker continues after that case. A worker's start (up to its "ready") is not a
 * case: it has `startSeconds` (default 300), so a slow start on a loaded machine is never a hang.
 */
export async function fuzz(opts: { seed: number; cases: number; engine: 'js' | 'native'; hangSeconds?: number; startSeconds?: number; onProgress?: (done: number) => void; env?: Record<string, string> }): Promise<FuzzSummary> {
  const hangMs = (opts.hangSeconds ?? 20) * 1000;
  const startMs = Math.max(hangMs, (opts.startSeconds ?? 300) * 1000);
  const s: FuzzSummary = { engine: opts.engine, seed: opts.seed, cases: opts.cases, ok: 0, input: 0, crashes: [], hangs: [], peakRss: 0, seconds: 0 };
  const t0 = Date.now();
  let next = 0;
  while (next < opts.cases) {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER, '--worker', '--seed', String(opts.seed), '--from', String(next), '--to', String(opts.cases), '--engine', opts.engine], {
      stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env, NPU_BLOCK_GATE_ENGINE: opts.engine },
    });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-2000); });
    let hung = false;
    let started = false;
    let timer = setTimeout(() => { hung = true; child.kill('SIGKILL'); }, startMs);
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      clearTimeout(timer);
      timer = setTimeout(() => { hung = true; child.kill('SIGKILL'); }, hangMs);
      const [head, ...rest] = line.split(' ');
      if (head === 'ready') { started = true; return; }
      if (head === 'rss') { s.peakRss = Math.max(s.peakRss, Number(rest[0])); return; }
      const i = Number(head);
      const out = rest.join(' ');
      next = i + 1;
      if (out === 'ok') s.ok++;
      else if (out === 'input') s.input++;
      else {
        const c = makeCase(opts.seed, i);
        s.crashes.push({ index: i, format: c.format, mutations: c.mutations, message: out.replace(/^crash:/, '') });
      }
      opts.onProgress?.(next);
    });
    const code: number | null = await new Promise((resolve) => child.on('close', (c, sig) => resolve(sig ? -1 : c)));
    clearTimeout(timer);
    if (next < opts.cases && (hung || code !== 0)) {
      const c = makeCase(opts.seed, next);
      if (hung && !started) s.crashes.push({ index: next, format: c.format, mutations: c.mutations, message: `the worker did not start in ${startMs / 1000} s` });
      else if (hung) s.hangs.push({ index: next, format: c.format, mutations: c.mutations });
      else s.crashes.push({ index: next, format: c.format, mutations: c.mutations, message: `worker died (${code === -1 ? 'signal' : `exit ${code}`}): ${stderr.trim().split('\n').pop() ?? ''}` });
      next++;
    } else if (code !== 0 && next >= opts.cases) {
      // finished its cases, then failed: count nothing more
    }
  }
  s.seconds = (Date.now() - t0) / 1000;
  return s;
}
