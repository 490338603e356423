// Content-addressed kernel cache (DESIGN.md "Caches"): compile once, run many.
// mlir-air's own manifest only notices a toolchain change; it does not notice a new seq_len,
// config, builder source, registry tile or compile command. Our key covers all of those, and a
// hit restores the stored cache dir into <model>/build_peano/prefill_kernel_cache/.
import type * as Crypto from 'node:crypto';
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { makeDirs } from '../fs/mkdir.ts';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import type { CompileInputs, ProbeJson } from '../rundir/schema.ts';

export type { CompileInputs };

const KERNEL_CACHE_VERSION = 1;
/** Default size cap of the kernel store; the least recently used entries go first. */
export const DEFAULT_MAX_BYTES = 20 * 1024 ** 3;

export function defaultCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.NPU_BLOCK_GATE_CACHE_DIR) return env.NPU_BLOCK_GATE_CACHE_DIR;
  const base = env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'npu-block-gate');
}

// Files that cannot change what compiles: run output, docs, bytecode, VCS data.
const SKIP_DIR = /^(build_[^/]*|docs|__pycache__|\.git|air_project|node_modules)$/;
const SKIP_FILE = /(\.pyc|\.md|~|\.swp)$|^\.gitignore$/;

function listFiles(dir: string, out: string[] = []): string[] {
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) { if (!SKIP_DIR.test(e.name)) listFiles(p, out); }
    else if (e.isFile() && !SKIP_FILE.test(e.name)) out.push(p);
  }
  return out;
}

export interface KeyInputs {
  airRoot: string;
  modelDir: string;
  config: ProbeJson['model']['config'];
  seqLen: number | null;
  cpuAttn: boolean | null;
  toolchain: unknown;
  compileCommand: string | null;
  /** The compile's own inputs; without them (an older probe) the model dir, shared/ and the registry are hashed. */
  inputs?: CompileInputs | null;
}

function fallbackFiles(k: KeyInputs): string[] {
  const roots = [k.modelDir, join(k.airRoot, 'programming_examples/llms/shared'), join(k.airRoot, 'programming_examples/kernel_registry')];
  return roots.flatMap((root) => listFiles(root).sort()).map((f) => relative(k.airRoot, f).split(sep).join('/'));
}

/** crypto is loaded on the first key: the agent's hooks and `report` use this module without one. */
const sha256 = () => (process.getBuiltinModule('node:crypto') as typeof Crypto).createHash('sha256');

/** A path from probe.json, kept inside the air root (anything else is hashed as its name only). */
function insideRoot(airRoot: string, rel: string): string | null {
  if (!rel || isAbsolute(rel) || rel.split(/[\\/]/).includes('..')) return null;
  return join(airRoot, rel);
}

/** The key and what went into it (sources hashed file by file, so a report can say what changed). */
export function kernelCacheKey(k: KeyInputs): { key: string; files: number } {
  const h = sha256();
  h.update(`npu-block-gate kernel cache v${KERNEL_CACHE_VERSION}\n`);
  const rels = k.inputs ? [...new Set(k.inputs.files)].sort() : fallbackFiles(k);
  for (const rel of rels) {
    const abs = insideRoot(k.airRoot, rel);
    let digest = 'missing';
    if (abs && existsSync(abs) && statSync(abs).isFile()) digest = sha256().update(readFileSync(abs)).digest('hex');
    h.update(`${rel}\0${digest}\n`);
  }
  const env = k.inputs ? Object.fromEntries(Object.entries(k.inputs.env ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : null;
  // An emulated tree (air-mini) compiles nothing real: its "kernels" are this checkout's own, so
  // another clone never reports a hit from it (a new user's first run compiles, and says so).
  const emulated = existsSync(join(k.airRoot, 'AIR_MINI')) ? realpathSync(k.airRoot) : null;
  h.update(JSON.stringify({ config: k.config, seqLen: k.seqLen, cpuAttn: k.cpuAttn, toolchain: k.toolchain ?? null, compile: k.compileCommand, env, emulated }));
  return { key: h.digest('hex').slice(0, 32), files: rels.length };
}

interface ManifestEntry { output_binary?: unknown; insts?: unknown; [k: string]: unknown }

/**
 * mlir-air's manifest.json holds absolute paths of the checkout that compiled. Point every entry at
 * the same file name in `target` (this checkout's cache dir). False when an entry names a file the
 * restored dir does not hold: such a cache is refused, never run with another checkout's ELFs.
 */
function rebaseManifest(dir: string, target: string): { ok: true; rewritten: number } | { ok: false; why: string } {
  const file = join(dir, 'manifest.json');
  if (!existsSync(file)) return { ok: true, rewritten: 0 };
  let m: { entries?: Record<string, ManifestEntry> };
  try { m = JSON.parse(readFileSync(file, 'utf8')); } catch { return { ok: false, why: 'manifest.json is not JSON' }; }
  if (!m || typeof m !== 'object' || (m.entries !== undefined && (typeof m.entries !== 'object' || m.entries === null))) return { ok: false, why: 'manifest.json has no entries object' };
  let rewritten = 0;
  for (const [name, e] of Object.entries(m.entries ?? {})) {
    for (const field of ['output_binary', 'insts'] as const) {
      const v = e?.[field];
      if (v === null || v === undefined) continue;
      if (typeof v !== 'string' || !v) return { ok: false, why: `entry ${name}: ${field} is not a path` };
      const base = basename(v.replace(/\\/g, '/'));
      if (!existsSync(join(dir, base))) return { ok: false, why: `entry ${name}: ${base} is not in the stored cache` };
      const now = join(target, base);
      if (v !== now) { e[field] = now; rewritten++; }
    }
  }
  writeFileSync(file, JSON.stringify(m, null, 2));
  return { ok: true, rewritten };
}

export interface StoredMeta {
  key: string;
  model: string;
  created_at: string;
  compile_seconds: number | null;
  bytes: number;
}

/** The first entry under dir (relative) that is neither a regular file nor a directory; null when none. */
function notPlain(dir: string, rel = ''): string | null {
  const st = lstatSync(join(dir, rel));
  if (st.isFile()) return null;
  if (!st.isDirectory()) return rel || '.';
  for (const name of readdirSync(join(dir, rel)).sort()) {
    const odd = notPlain(dir, rel ? join(rel, name) : name);
    if (odd) return odd;
  }
  return null;
}

function dirBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    n += e.isDirectory() ? dirBytes(p) : statSync(p).size;
  }
  return n;
}

export class KernelStore {
  constructor(readonly root: string, readonly maxBytes = DEFAULT_MAX_BYTES) {}

  private entry(key: string): string {
    if (!/^[0-9a-f]{16,64}$/.test(key)) throw new Error(`bad kernel cache key ${key}`);
    return join(this.root, 'kernels', key);
  }

  meta(key: string): StoredMeta | null {
    const f = join(this.entry(key), 'meta.json');
    if (!existsSync(f)) return null;
    try { return JSON.parse(readFileSync(f, 'utf8')) as StoredMeta; } catch { return null; }
  }

  /**
   * Replaces target with the stored entry, its manifest's paths rewritten to target; null on a miss
   * or when the stored manifest cannot be pointed at this checkout (`refused` says why). The target
   * is never left half-copied, and a miss creates nothing in the model dir.
   */
  restore(key: string, target: string, refused?: (why: string) => void): StoredMeta | null {
    const meta = this.meta(key);
    const src = join(this.entry(key), 'cache');
    if (!meta || !existsSync(src)) return null;
    const parent = dirname(target);
    const made = existsSync(parent) ? null : makeDirs(parent) ?? parent;
    const tmp = `${target}.nbg-restore-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    cpSync(src, tmp, { recursive: true });
    const rebased = rebaseManifest(tmp, target);
    if (!rebased.ok) {
      rmSync(tmp, { recursive: true, force: true });
      if (made) rmSync(made, { recursive: true, force: true });
      refused?.(rebased.why);
      return null;
    }
    rmSync(target, { recursive: true, force: true });
    renameSync(tmp, target);
    const now = new Date();
    utimesSync(join(this.entry(key), 'meta.json'), now, now); // LRU
    return meta;
  }

  /**
   * The stored entry, copied into a fresh dir of this process's own (0755: a probe user reads it)
   * with its manifest pointed at `target`, for the caller to put in place: the model dir is the
   * probe's, so the copy into it is made inside the probe's own sandbox (check/kernels.ts). Null on
   * a miss or a refused manifest (`refused` says why). The caller removes `dir` when done.
   */
  stage(key: string, target: string, refused?: (why: string) => void): { dir: string; cache: string; meta: StoredMeta } | null {
    const meta = this.meta(key);
    const src = join(this.entry(key), 'cache');
    if (!meta || !existsSync(src)) return null;
    const dir = mkdtempSync(join(tmpdir(), 'nbg-kernels-'));
    chmodSync(dir, 0o755);
    const cache = join(dir, 'cache');
    try {
      cpSync(src, cache, { recursive: true });
      const rebased = rebaseManifest(cache, target);
      if (!rebased.ok) {
        rmSync(dir, { recursive: true, force: true });
        refused?.(rebased.why);
        return null;
      }
    } catch (e) {
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    const now = new Date();
    utimesSync(join(this.entry(key), 'meta.json'), now, now); // LRU
    return { dir, cache, meta };
  }

  /** Stores source under key (atomically: copied aside, then renamed into place), then trims the store.
   * Only plain files and directories are stored: a symlink in the build dir (a pull request may have
   * left one pointing at a secret) would put its target where every later run reads it. */
  store(key: string, source: string, meta: Omit<StoredMeta, 'bytes' | 'key'>): StoredMeta {
    const dest = this.entry(key);
    const existing = this.meta(key);
    if (existing) return existing;
    const odd = notPlain(source);
    if (odd) throw new Error(`${odd} in ${source} is not a regular file or directory; nothing stored`);
    const tmp = join(this.root, 'kernels', `.tmp-${key}-${process.pid}`);
    rmSync(tmp, { recursive: true, force: true });
    makeDirs(tmp);
    cpSync(source, join(tmp, 'cache'), { recursive: true });
    const full: StoredMeta = { key, ...meta, bytes: dirBytes(join(tmp, 'cache')) };
    writeFileSync(join(tmp, 'meta.json'), JSON.stringify(full, null, 2) + '\n');
    try {
      renameSync(tmp, dest);
    } catch (e) {
      rmSync(tmp, { recursive: true, force: true });
      if (!this.meta(key)) throw e; // another run stored the same key first: fine
    }
    this.gc();
    return full;
  }

  list(): (StoredMeta & { used: number })[] {
    const dir = join(this.root, 'kernels');
    if (!existsSync(dir)) return [];
    const out: (StoredMeta & { used: number })[] = [];
    for (const name of readdirSync(dir)) {
      if (name.startsWith('.')) continue;
      const m = this.meta(name);
      if (m) out.push({ ...m, used: statSync(join(dir, name, 'meta.json')).mtimeMs });
    }
    return out;
  }

  /** Drops least recently used entries until the store fits under maxBytes. */
  gc(): string[] {
    const all = this.list().sort((a, b) => a.used - b.used);
    let total = all.reduce((n, m) => n + m.bytes, 0);
    const dropped: string[] = [];
    for (const m of all) {
      if (total <= this.maxBytes) break;
      rmSync(this.entry(m.key), { recursive: true, force: true });
      total -= m.bytes;
      dropped.push(m.key);
    }
    return dropped;
  }
}
