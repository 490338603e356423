// The benchmark's tensor files: L layers of an NPU and a reference tensor, rows x cols, as f32
// or as bf16 stored <u2 (the run dir flags it). Kept between runs when the size matches.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type BenchDType = 'f32' | 'bf16';

export function npy(descr: string, rows: number, cols: number, payload: Buffer): Buffer {
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${rows}, ${cols}), }`;
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header += ' '.repeat(total - 10 - header.length - 1) + '\n';
  const pre = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, 0, 0]);
  pre.writeUInt16LE(header.length, 8);
  return Buffer.concat([pre, Buffer.from(header, 'latin1'), payload]);
}

/** Layer i: a reference ~ N(0, 1)-ish and an NPU tensor = reference + 1% noise. */
export function generate(dir: string, dtype: BenchDType, LAYERS: number, ROWS: number, COLS: number): { npu: string; ref: string }[] {
  mkdirSync(dir, { recursive: true });
  const pairs: { npu: string; ref: string }[] = [];
  let s = 12345;
  const rnd = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const n = ROWS * COLS;
  for (let l = 0; l < LAYERS; l++) {
    const npu = join(dir, `layer${String(l).padStart(2, '0')}_npu_${dtype}.npy`);
    const ref = join(dir, `layer${String(l).padStart(2, '0')}_ref_${dtype}.npy`);
    pairs.push({ npu, ref });
    const item = dtype === 'f32' ? 4 : 2;
    const want = 128 + n * item;
    if (existsSync(npu) && existsSync(ref) && statSync(npu).size === want && statSync(ref).size === want) continue;
    const r = new Float32Array(n);
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      r[i] = (rnd() + rnd() + rnd() - 1.5) * 2;
      a[i] = r[i] * (1 + (rnd() - 0.5) * 0.02);
    }
    const bytes = (x: Float32Array) => {
      if (dtype === 'f32') return Buffer.from(x.buffer, x.byteOffset, x.byteLength);
      const u = new Uint32Array(x.buffer, x.byteOffset, x.length);
      const h = new Uint16Array(x.length);
      for (let i = 0; i < x.length; i++) h[i] = u[i] >>> 16;
      return Buffer.from(h.buffer);
    };
    const descr = dtype === 'f32' ? '<f4' : '<u2';
    writeFileSync(npu, npy(descr, ROWS, COLS, bytes(a)));
    writeFileSync(ref, npy(descr, ROWS, COLS, bytes(r)));
  }
  return pairs;
}


const DROP_CACHES = '/proc/sys/vm/drop_caches';

/**
 * Write back dirty pages and drop the clean page cache, so the next read comes from storage.
 * Returns null when done, or why it could not be done (not Linux, not root, not permitted).
 */
export function dropCaches(): string | null {
  if (process.platform !== 'linux') return `not Linux (${process.platform}): no ${DROP_CACHES}`;
  const s = spawnSync('sync', [], { stdio: 'ignore' });
  if (s.status !== 0) return `sync failed (${s.error?.message ?? `exit ${s.status}`})`;
  try {
    writeFileSync(DROP_CACHES, '1');
    return null;
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const uid = process.getuid?.();
    const who = uid === 0 ? 'running as root' : `not root (uid ${uid})`;
    return `writing ${DROP_CACHES} failed: ${err.code ?? err.message} (${who})`;
  }
}

