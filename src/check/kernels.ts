// The kernel cache around the probe (DESIGN.md "Caches"): after the probe's config stage, the
// content key and, on a hit, a restore into the model's own kernel cache dir; after the verdict of a
// trusted run, a fresh compile stored. The probe never writes the store; this process does.
//
// The restore target comes from the trusted side: the model dir the plan names, and a relative
// cache dir that must resolve inside it with no symlink on the way. probe.json (the pull request's
// code writes it) only says which relative dir, and cannot steer the restore anywhere else.
import { cpSync, existsSync, lstatSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { Log } from '../log.ts';
import { fsError, oneLine } from '../errors.ts';
import { readProbeJson } from '../rundir/read.ts';
import { RUN_FILES, type ProbeJson } from '../rundir/schema.ts';
import { KernelStore, kernelCacheKey, type StoredMeta } from '../cache/kernel.ts';
import { writeAtomic } from '../fs/atomic.ts';
import type { ModelDir } from './model-dir.ts';

export interface KernelState {
  store: KernelStore;
  key: string;
  /** The model's kernel cache dir, as the probe sees it (under the model dir). */
  target: string;
  /** The same dir on this host: in the model dir's private copy when the probe ran sandboxed. */
  source: string;
  restored: StoredMeta | null;
}

/**
 * Where a cache dir named relative to the air root lands, when it is inside the model dir with no
 * symlink between the model dir and it; otherwise why not.
 */
export function kernelTarget(model: ModelDir, rel: string, hostOf: (p: string) => string = (p) => p): { target: string; host: string } | { refused: string } {
  if (!model.airRoot) return { refused: 'the model dir is not inside an mlir-air tree (programming_examples/llms/<model>)' };
  if (isAbsolute(rel) || rel.split(/[\\/]/).includes('..')) return { refused: `kernel_cache.dir ${JSON.stringify(rel.slice(0, 200))} is not a relative path below the tree` };
  const target = resolve(model.airRoot, rel);
  const inside = relative(model.dir, target);
  if (!inside || inside.startsWith('..') || isAbsolute(inside)) return { refused: `kernel_cache.dir ${JSON.stringify(rel.slice(0, 200))} is not inside the model dir` };
  // Checked where the restore lands on this host (the model dir, or its private copy).
  const hostDir = hostOf(model.dir);
  const hostTarget = join(hostDir, inside);
  let at = hostDir;
  for (const part of inside.split(sep)) {
    at = join(at, part);
    let st;
    try {
      st = lstatSync(at);
    } catch {
      break; // not there yet: nothing below it can be a link
    }
    if (st.isSymbolicLink()) return { refused: `${relative(hostDir, at)} in the model dir is a symlink; the kernel cache is never restored through one` };
    if (at !== hostTarget && !st.isDirectory()) return { refused: `${relative(hostDir, at)} in the model dir is not a directory` };
  }
  return { target, host: hostTarget };
}

/**
 * Puts a staged cache dir (the Action's own) at target, replacing what is there. The probe's
 * processes may still run (it waits for the answer), and the model dir is theirs: the copy is made
 * inside the probe's own sandbox, where a link they planted can lead nowhere else they could not
 * write themselves. `placeDirect` is for no isolation, where there is no such sandbox.
 */
export type Placer = (staged: string, target: string) => void;

export const placeDirect: Placer = (staged, target) => {
  const tmp = `${target}.nbg-new-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(dirname(target), { recursive: true });
  cpSync(staged, tmp, { recursive: true });
  rmSync(target, { recursive: true, force: true });
  renameSync(tmp, target);
};

/** The shell that places a staged cache dir ($2) at $1, all or nothing, for a sandboxed placer. */
export const PLACE_SCRIPT = 'set -e; umask "$3"; mkdir -p -- "$(dirname -- "$1")"; rm -rf -- "$1.nbg-new"; cp -R -- "$2" "$1.nbg-new"; rm -rf -- "$1"; mv -- "$1.nbg-new" "$1"';

/** After the probe's config stage: the content key, and a restore into the model's kernel cache dir on a hit. */
export function restoreKernels(model: ModelDir, runDir: string, cacheRoot: string, log: Log, place: Placer = placeDirect, hostOf?: (p: string) => string): KernelState | null {
  const p = readProbeJson(runDir, false);
  if (p.emulate) {
    log.step('kernel cache: not used (emulated run: nothing compiles; the twins stand in for the ELFs)');
    return null;
  }
  const kc = p.kernel_cache;
  if (!kc?.dir) {
    log.step('kernel cache: not used (this model path keeps no prefill kernel cache dir)');
    return null;
  }
  const where = kernelTarget(model, kc.dir, hostOf);
  if ('refused' in where) {
    log.warn(`kernel cache: not used (${where.refused})`);
    return null;
  }
  const { key, files } = kernelCacheKey({
    airRoot: model.airRoot!, modelDir: model.dir, config: p.model.config,
    seqLen: kc.seq_len ?? p.prompt.padded_len, cpuAttn: kc.cpu_attn ?? p.integration.cpu_attn,
    toolchain: kc.toolchain ?? null, compileCommand: kc.compile_command ?? null, inputs: kc.inputs ?? null,
  });
  const store = new KernelStore(cacheRoot);
  const staged = store.stage(key, where.target, (why) => log.step(`kernel cache: entry ${key.slice(0, 12)} refused (${why}); kernels will compile`));
  let restored: StoredMeta | null = null;
  if (staged) {
    try {
      place(staged.cache, where.target);
      restored = staged.meta;
    } catch (e) {
      log.warn(`kernel cache: hit ${key.slice(0, 12)} not restored (${oneLine(e)}); kernels will compile`);
    } finally {
      rmSync(staged.dir, { recursive: true, force: true });
    }
  }
  log.step(restored
    ? `kernel cache: hit ${key.slice(0, 12)} (stored ${restored.created_at}${restored.compile_seconds ? `, saves about ${restored.compile_seconds.toFixed(1)}s of compile` : ''}) -> ${kc.dir}`
    : `kernel cache: miss ${key.slice(0, 12)} (${files} source files hashed); kernels will compile`);
  return { store, key, target: where.target, source: where.host, restored };
}

/** Records key, hit and seconds saved in probe.json (this process's own account of the restore). */
export function recordKernels(runDir: string, c: KernelState): void {
  const p = readProbeJson(runDir);
  const kc = p.kernel_cache;
  const hit = !!c.restored && (kc.compiled ?? []).length === 0;
  const next: ProbeJson = { ...p, kernel_cache: { ...kc, key: c.key, hit, seconds_saved: hit ? c.restored?.compile_seconds ?? null : null } };
  writeAtomic(join(runDir, RUN_FILES.probe), JSON.stringify(next, null, 2) + '\n', false); // never through a link the probe left
}

/** After the verdict of a trusted run: a fresh compile into the store. A failure to store is a warning. */
export function storeKernels(c: KernelState, p: ProbeJson, now: Date, log: Log): void {
  const compiled = p.kernel_cache.compiled ?? [];
  if (c.restored && compiled.length === 0) return;
  if (!existsSync(c.source)) return;
  try {
    c.store.store(c.key, c.source, { model: p.model.name, created_at: now.toISOString(), compile_seconds: p.kernel_cache.compile_seconds ?? null });
    log.step(`kernel cache: stored ${c.key.slice(0, 12)} in ${c.store.root}`);
  } catch (e) {
    log.warn(`kernel cache: not stored (${(e as NodeJS.ErrnoException).code ? fsError(e, c.store.root, 'cannot write').message : oneLine(e)})`);
  }
}
