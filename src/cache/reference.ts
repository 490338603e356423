// The reference cache's writer (DESIGN.md "Caches"). The probe looks entries up and records, in
// probe.json `reference.cache`, the key it computed and what went into it; it never writes an
// entry, because it runs the model tree's own code. This trusted process stores a missed entry
// after the verdict of a trusted run, from the run dir's reference tensors, laid out as
// contract.json `reference_cache` says (the probe's reader, npu_probe.reference.refcache, reads
// the same names):
//   <root>/<key>/layer_NN.npy (the run dir's block0.ref.npy and layers/layer_NN.ref.npy, f32)
//   <root>/<key>/boundary_<name>.npy (with the lens: boundaries/NN-<name>.ref.npy, the HF side)
//   <root>/<key>/meta.json    {key, inputs, kind, stored_layers, [stored_boundaries,] created_at}
// written into a temp dir beside it and renamed; an entry that appeared meanwhile is kept.
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { makeDirs } from '../fs/mkdir.ts';
import { isAbsolute, join, resolve } from 'node:path';
import type { ProbeJson } from '../rundir/schema.ts';
import { runFile, tensorPath } from '../rundir/read.ts';
import { isId } from '../text/escape.ts';
import { FP32_PREFIX, REF_CACHE } from '../contract.ts';

interface RefCacheRecord {
  key: string;
  hit: boolean;
  dir: string;
  root?: string;
  kind?: string | null;
  inputs?: { layers?: number[]; boundaries?: unknown; [k: string]: unknown } | null;
}

type StoreOutcome =
  | { stored: true; dir: string; layers: number[]; boundaries?: string[] }
  | { stored: false; why: string };

const KEY = new RegExp(`^[0-9a-f]{${REF_CACHE.key_hex_chars}}$`);
const layerFile = (li: number) => REF_CACHE.layer_file.replace('{NN}', String(li).padStart(2, '0'));
const boundaryFile = (name: string) => REF_CACHE.boundary_file.replace('{name}', name);
/** A meta.json key; it must be one contract.json lists (the probe reads them by the same names). */
function metaKey(name: string): string {
  if (!REF_CACHE.meta_keys.includes(name)) throw new Error(`contract.json reference_cache.meta_keys has no ${name}`);
  return name;
}
const META = {
  key: metaKey('key'), inputs: metaKey('inputs'), kind: metaKey('kind'), storedLayers: metaKey('stored_layers'),
  storedBoundaries: metaKey('stored_boundaries'), createdAt: metaKey('created_at'),
};

/**
 * The HF side of every boundary pair, when the key was made with the lens on
 * (`inputs.boundaries`): name -> the real path of boundaries/NN-<name>.ref.npy (a regular file
 * inside the run dir, real_len rows). A name the probe's reader would refuse is an error here.
 */
function boundarySources(runDir: string, p: ProbeJson): Map<string, string> | string {
  const out = new Map<string, string>();
  for (const [i, e] of (p.boundaries?.entries ?? []).entries()) {
    if (!isId(e.name) || e.name.startsWith('.')) return `boundary ${JSON.stringify(e.name)} is not a name the cache can hold`;
    if (e.ref.dtype !== 'f32' || e.ref.shape.length !== 2 || e.ref.shape[0] !== p.prompt.real_len) return `boundary ${e.name}'s reference is not f32 [real_len, features]`;
    // The error budget's FP32 side rides along as fp32.<name> (the probe splits it off on a hit).
    if (e.fp32 && e.fp32.dtype === 'f32' && e.fp32.shape.length === 2 && e.fp32.shape[0] === p.prompt.real_len && isId(`${FP32_PREFIX}${e.name}`)) {
      try {
        out.set(`${FP32_PREFIX}${e.name}`, runFile(runDir, e.fp32.file, `boundaries.entries[${i}].fp32.file`));
      } catch {
        // an unusable FP32 side is left out: the budget is informational
      }
    }
    try {
      out.set(e.name, runFile(runDir, e.ref.file, `boundaries.entries[${i}].ref.file`));
    } catch (err) {
      return `boundary ${e.name}'s reference tensor is not usable (${(err as Error).message})`;
    }
  }
  return out.size ? out : 'the run dir holds no boundary pairs';
}

/**
 * Stores the run dir's reference tensors under the probe's key. Call only for a trusted run, after
 * its verdict; `root` is the reference cache root this process chose (the record's own root is
 * never trusted as a destination).
 */
export function storeReference(root: string, runDir: string, p: ProbeJson): StoreOutcome {
  const rec = p.reference?.cache as RefCacheRecord | null | undefined;
  if (!rec) return { stored: false, why: 'the run kept no reference cache record (cache off, or not cacheable)' };
  if (rec.hit) return { stored: false, why: 'hit: already stored' };
  if (typeof rec.key !== 'string' || !KEY.test(rec.key)) return { stored: false, why: 'the recorded key is not a cache key' };
  const wanted = Array.isArray(rec.inputs?.layers) && rec.inputs!.layers!.every((l) => Number.isInteger(l) && l >= 0) ? rec.inputs!.layers! : [0];
  const sources = new Map<number, string>();
  if (p.tensors.ref) sources.set(0, tensorPath(runDir, p.tensors.ref));
  for (const e of p.layers?.entries ?? []) if (e.layer !== 0 && wanted.includes(e.layer)) sources.set(e.layer, tensorPath(runDir, e.ref));
  for (const li of wanted) {
    const src = sources.get(li);
    if (!src || !existsSync(src) || !lstatSync(src).isFile()) return { stored: false, why: `layer ${li}'s reference tensor is not in the run dir` };
  }
  // The key was made with the lens on: a hit needs the boundaries too (the probe's refcache.load_boundaries).
  let bounds: Map<string, string> | null = null;
  if (rec.inputs?.boundaries) {
    const b = boundarySources(runDir, p);
    if (typeof b === 'string') return { stored: false, why: `${b} (the key covers the lens's reference side)` };
    bounds = b;
  }
  const names = bounds ? [...bounds.keys()] : [];
  const dest = join(root, rec.key);
  // The probe missed although the entry is there: it found it unreadable or of the wrong shape.
  // Replace it (a sound entry that appeared meanwhile, from a concurrent run, is kept).
  if (existsSync(dest) && sound(dest, rec.key, wanted, names)) return { stored: false, why: 'an entry for this key is already there' };
  makeDirs(root);
  const tmp = mkdtempSync(join(root, `.${rec.key}.`));
  // mkdtemp makes it 0700: the probe, another user under uid isolation, must read the entry.
  chmodSync(tmp, 0o755);
  try {
    for (const li of wanted) copyFileSync(sources.get(li)!, join(tmp, layerFile(li)));
    for (const [name, src] of bounds ?? []) copyFileSync(src, join(tmp, boundaryFile(name)));
    writeFileSync(join(tmp, REF_CACHE.meta), JSON.stringify({
      [META.key]: rec.key, [META.inputs]: rec.inputs ?? null, [META.kind]: rec.kind ?? p.reference.kind, [META.storedLayers]: wanted,
      ...(bounds ? { [META.storedBoundaries]: names } : {}),
      [META.createdAt]: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    }, null, 2) + '\n');
    if (existsSync(dest)) {
      const old = `${dest}.old-${process.pid}`;
      renameSync(dest, old);
      try { renameSync(tmp, dest); } finally { rmSync(old, { recursive: true, force: true }); }
    } else {
      try {
        renameSync(tmp, dest);
      } catch (e) {
        if (!existsSync(dest)) throw e; // another run stored the same key first: fine
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { stored: true, dir: dest, layers: wanted, ...(bounds ? { boundaries: names } : {}) };
}

/** The reference cache root: $NPU_BLOCK_GATE_REF_CACHE, else <kernel cache root>/reference. The CLI
 * always hands the probe this root explicitly, so the side that reads and the side that writes agree. */
export function referenceRoot(cacheRoot: string, env: NodeJS.ProcessEnv = process.env): string {
  const r = env[REF_CACHE.env_root];
  if (r && r.trim().toLowerCase() !== REF_CACHE.off_value) return resolve(r);
  return isAbsolute(cacheRoot) ? join(cacheRoot, REF_CACHE.subdir) : resolve(cacheRoot, REF_CACHE.subdir);
}

/** An entry whose meta names this key and whose layer (and boundary) files are there (the probe checks shapes). */
function sound(dir: string, key: string, layers: number[], boundaries: string[]): boolean {
  try {
    const meta = JSON.parse(readFileSync(join(dir, REF_CACHE.meta), 'utf8'));
    if (meta?.[META.key] !== key) return false;
    const stored: unknown = meta[META.storedBoundaries];
    if (boundaries.length && !(Array.isArray(stored) && boundaries.every((n) => stored.includes(n)))) return false;
    // A file the probe could not read as .npy: at least its magic must be there.
    const npy = (f: string) => readFileSync(join(dir, f)).subarray(0, 6).toString('latin1') === '\x93NUMPY';
    return layers.every((li) => npy(layerFile(li))) && boundaries.every((n) => npy(boundaryFile(n)));
  } catch {
    return false;
  }
}
