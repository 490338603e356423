// Reads and validates a run dir. The run dir may come from an untrusted job (split mode), so every
// field is checked before use and every tensor path must stay inside the run dir.
import { readFileSync, existsSync, statSync } from 'node:fs';
import { join, resolve, relative, isAbsolute } from 'node:path';
import { InputError } from '../errors.ts';
import { PROBE_SCHEMA, PROBE_SCHEMA_VERSION, RUN_FILES, type ProbeJson, type TensorEntry } from './schema.ts';

type Json = Record<string, unknown>;

function isObj(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

class Checker {
  constructor(private file: string) {}
  fail(what: string): never {
    throw new InputError(what, this.file);
  }
  obj(v: unknown, at: string): Json {
    if (!isObj(v)) this.fail(`${at} must be an object`);
    return v;
  }
  str(v: unknown, at: string): string {
    if (typeof v !== 'string') this.fail(`${at} must be a string`);
    return v;
  }
  strOrNull(v: unknown, at: string): string | null {
    return v === null || v === undefined ? null : this.str(v, at);
  }
  int(v: unknown, at: string, min = 0): number {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) this.fail(`${at} must be an integer >= ${min}`);
    return v;
  }
  bool(v: unknown, at: string): boolean {
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') this.fail(`${at} must be true or false`);
    return v;
  }
}

function tensorEntry(c: Checker, v: unknown, at: string, runDir: string): TensorEntry | null {
  if (v === null || v === undefined) return null;
  const o = c.obj(v, at);
  const file = c.str(o.file, `${at}.file`);
  if (isAbsolute(file) || file.split(/[\\/]/).includes('..')) c.fail(`${at}.file must be a relative path inside the run dir, got ${JSON.stringify(file)}`);
  const full = resolve(runDir, file);
  const rel = relative(resolve(runDir), full);
  if (rel.startsWith('..') || isAbsolute(rel)) c.fail(`${at}.file escapes the run dir`);
  const dtype = c.str(o.dtype, `${at}.dtype`);
  if (!['f32', 'f16', 'bf16'].includes(dtype)) c.fail(`${at}.dtype must be f32, f16 or bf16, got ${JSON.stringify(dtype)}`);
  if (!Array.isArray(o.shape)) c.fail(`${at}.shape must be a list of integers`);
  const shape = (o.shape as unknown[]).map((d, i) => c.int(d, `${at}.shape[${i}]`, 0));
  return { file, dtype: dtype as TensorEntry['dtype'], shape };
}

/** Reads probe.json; `requireBlock` demands the tensors of a finished `probe block`. */
export function readProbeJson(runDir: string, requireBlock = true): ProbeJson {
  const file = join(runDir, RUN_FILES.probe);
  if (!existsSync(runDir) || !statSync(runDir).isDirectory()) throw new InputError('run dir does not exist', runDir);
  if (!existsSync(file)) throw new InputError('missing: the probe did not finish writing this run dir', file);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new InputError(`not valid JSON (${(e as Error).message.split('\n')[0]})`, file);
  }
  const c = new Checker(file);
  const o = c.obj(raw, 'probe.json');
  if (o.schema !== PROBE_SCHEMA) c.fail(`schema is ${JSON.stringify(o.schema)}, expected ${JSON.stringify(PROBE_SCHEMA)}`);
  if (o.schema_version !== PROBE_SCHEMA_VERSION) {
    c.fail(`schema_version ${JSON.stringify(o.schema_version)} is not supported (this npu-block-gate reads version ${PROBE_SCHEMA_VERSION})`);
  }
  const stage = c.str(o.stage, 'stage');
  if (stage !== 'config' && stage !== 'block') c.fail(`stage must be "config" or "block", got ${JSON.stringify(stage)}`);
  const model = c.obj(o.model, 'model');
  c.str(model.name, 'model.name');
  c.str(model.dir, 'model.dir');
  const cfg = c.obj(model.config, 'model.config');
  for (const k of ['n_layers', 'emb_dim', 'n_heads', 'n_kv_heads', 'head_dim', 'hidden_dim']) c.int(cfg[k], `model.config.${k}`, 1);
  cfg.qkv_bias = c.bool(cfg.qkv_bias, 'model.config.qkv_bias');
  cfg.qk_norm = c.bool(cfg.qk_norm, 'model.config.qk_norm');
  const prompt = c.obj(o.prompt, 'prompt');
  c.str(prompt.style, 'prompt.style');
  c.str(prompt.text, 'prompt.text');
  const realLen = c.int(prompt.real_len, 'prompt.real_len', 1);
  if (prompt.padded_len !== null && prompt.padded_len !== undefined) {
    const padded = c.int(prompt.padded_len, 'prompt.padded_len', 1);
    if (padded < realLen) c.fail(`prompt.padded_len ${padded} is less than prompt.real_len ${realLen}`);
  }
  const integ = c.obj(o.integration, 'integration');
  const path = c.str(integ.path, 'integration.path');
  if (!['kernel-first', 'inheritance', 'adapter'].includes(path)) c.fail(`integration.path must be kernel-first, inheritance or adapter, got ${JSON.stringify(path)}`);
  c.str(integ.entry, 'integration.entry');
  if (!Array.isArray(integ.workarounds)) integ.workarounds = [];
  if (!Array.isArray(integ.kernels)) integ.kernels = [];
  const ref = c.obj(o.reference, 'reference');
  c.str(ref.kind, 'reference.kind');
  c.obj(o.environment, 'environment');
  const tensors = c.obj(o.tensors ?? {}, 'tensors');
  const npu = tensorEntry(c, tensors.npu, 'tensors.npu', runDir);
  const refT = tensorEntry(c, tensors.ref, 'tensors.ref', runDir);
  tensorEntry(c, tensors.input, 'tensors.input', runDir);
  if (requireBlock && (stage !== 'block' || !npu || !refT)) {
    c.fail('holds no block tensors (stage "config"): run `probe block`, or `npu-block-gate check`, first');
  }
  if (o.layers !== null && o.layers !== undefined) {
    const layers = c.obj(o.layers, 'layers');
    c.str(layers.source, 'layers.source');
    if (!Array.isArray(layers.entries)) c.fail('layers.entries must be a list');
    (layers.entries as unknown[]).forEach((e, i) => {
      const entry = c.obj(e, `layers.entries[${i}]`);
      c.int(entry.layer, `layers.entries[${i}].layer`, 0);
      if (!tensorEntry(c, entry.npu, `layers.entries[${i}].npu`, runDir) || !tensorEntry(c, entry.ref, `layers.entries[${i}].ref`, runDir)) {
        c.fail(`layers.entries[${i}] needs both npu and ref tensors`);
      }
    });
  }
  if (!isObj(o.timings)) o.timings = {};
  return o as unknown as ProbeJson;
}

export function tensorPath(runDir: string, entry: TensorEntry): string {
  return join(runDir, entry.file);
}
