// Reads and validates a run dir. The run dir may come from an untrusted job (split mode), so
// probe.json is checked whole against its schema (probe-spec.ts: every field's type) before any
// of it is used, and every file the run dir names must be a regular file inside the run dir reached
// without a symlink (a link is refused unfollowed, one message whatever its target); a FIFO, device
// or directory is refused before it is opened for reading.
import { closeSync, constants, fstatSync, openSync, realpathSync, statSync, lstatSync, type Stats } from 'node:fs';
import { join, isAbsolute } from 'node:path';
import { InputError, fsError } from '../errors.ts';
import { kindOf, readWhole } from '../fs/read.ts';

export { kindOf };
import { PROBE_SCHEMA, PROBE_SCHEMA_VERSION, RUN_FILES, type ProbeJson, type TensorEntry } from './schema.ts';
import { PROBE_SPEC } from './probe-spec.ts';
import { SpecError } from './spec.ts';
import { openTensor } from '../tensor/index.ts';
import type { TensorSource } from '../tensor/types.ts';

/** probe.json is a few KB to a few MB (token ids, the plan); anything larger is not one. */
const PROBE_JSON_MAX_BYTES = 64 << 20;

/**
 * Opens `path` for reading only if it is a regular file: opened non-blocking (so a FIFO cannot
 * stall the open) and checked with fstat before a byte is read. Returns the descriptor and size.
 */
function openRegularFile(path: string): { fd: number; size: number } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new InputError('no such file', path);
    throw fsError(e, path, 'cannot open');
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new InputError(`is ${kindOf(st)}, not a regular file`, path);
    return { fd, size: st.size };
  } catch (e) {
    closeSync(fd);
    throw fsError(e, path, 'cannot stat');
  }
}

/** The whole of a small regular file (refusing FIFOs, devices and directories, and anything over `max` bytes). */
export function readRegularFile(path: string, max: number): Buffer {
  const { fd, size } = openRegularFile(path);
  try {
    if (size > max) throw new InputError(`is ${size} bytes; at most ${max} are accepted`, path);
    return readWhole(fd, size);
  } catch (e) {
    throw fsError(e, path, 'cannot read');
  } finally {
    closeSync(fd);
  }
}

/** The run dir itself, resolved: it must exist and be a directory. */
export function runDirReal(runDir: string): string {
  let st: Stats;
  try {
    st = statSync(runDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new InputError('run dir does not exist', runDir);
    throw fsError(e, runDir, 'cannot read the run dir');
  }
  if (!st.isDirectory()) throw new InputError(`run dir is ${st.isFile() ? 'a file' : kindOf(st)}, not a directory`, runDir);
  return realpathSync(runDir);
}

/**
 * Why a run dir's symlink is refused: one text whatever the link points at (a file, a hidden one,
 * nothing, a directory, a device). The link is never followed, so the message says nothing of its
 * target: the run dir may be a pull request's, and a message that differed would tell it what
 * exists where it cannot look (issue 25).
 */
const RUN_DIR_LINK = 'is a symlink: a run dir\'s files are read only as regular files inside it, never through a link (not followed)';

/**
 * The real path of a file the run dir names (`rel`, from probe.json `field`): each part of the
 * path, from the run dir down, must exist and must not be a symlink (refused unfollowed, with
 * RUN_DIR_LINK), and the file must be a regular file.
 */
export function runFile(runDir: string, rel: string, field: string, missing = `missing (probe.json ${field} lists it)`): string {
  const shown = join(runDir, rel);
  if (isAbsolute(rel) || rel.split(/[\\/]/).includes('..')) throw new InputError(`${field} must be a relative path inside the run dir, got ${JSON.stringify(rel)}`, join(runDir, RUN_FILES.probe));
  const root = runDirReal(runDir);
  const parts = rel.split(/[\\/]/).filter((p) => p !== '' && p !== '.');
  if (!parts.length) throw new InputError(`${field} must name a file inside the run dir, got ${JSON.stringify(rel)}`, join(runDir, RUN_FILES.probe));
  let st: Stats | null = null;
  for (let i = 0; i < parts.length; i++) {
    const at = join(root, ...parts.slice(0, i + 1));
    try {
      st = lstatSync(at);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') throw new InputError(missing, shown);
      throw fsError(e, join(runDir, ...parts.slice(0, i + 1)), 'cannot read');
    }
    if (st.isSymbolicLink()) throw new InputError(RUN_DIR_LINK, join(runDir, ...parts.slice(0, i + 1)));
    if (i < parts.length - 1 && !st.isDirectory()) throw new InputError(missing, shown);
  }
  if (!st!.isFile()) throw new InputError(`is ${kindOf(st!)}, not a regular file`, shown);
  return join(root, ...parts);
}

/** Reads probe.json; `requireBlock` demands the tensors of a finished `probe block`. */
export function readProbeJson(runDir: string, requireBlock = true): ProbeJson {
  const file = join(runDir, RUN_FILES.probe);
  runDirReal(runDir);
  const real = runFile(runDir, RUN_FILES.probe, 'probe.json', 'missing: the probe did not finish writing this run dir');
  let raw: unknown;
  try {
    raw = JSON.parse(readRegularFile(real, PROBE_JSON_MAX_BYTES).toString('utf8'));
  } catch (e) {
    if (e instanceof InputError) throw new InputError(e.message.replace(`${real}: `, ''), file);
    throw new InputError(`not valid JSON (${(e as Error).message.split('\n')[0]})`, file);
  }
  // Schema and version first: another version's fields are not worth listing one by one.
  const o = (typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
  if (o.schema !== PROBE_SCHEMA) throw new InputError(`schema is ${JSON.stringify(o.schema ?? null)}, expected ${JSON.stringify(PROBE_SCHEMA)}`, file);
  if (o.schema_version !== PROBE_SCHEMA_VERSION) {
    throw new InputError(`schema_version ${JSON.stringify(o.schema_version ?? null)} is not supported (this npu-block-gate reads version ${PROBE_SCHEMA_VERSION})`, file);
  }
  let p: ProbeJson;
  try {
    p = PROBE_SPEC.check(raw, '') as ProbeJson;
    crossCheck(p, requireBlock);
  } catch (e) {
    if (e instanceof SpecError) throw new InputError(e.message, file);
    throw e;
  }
  return p;
}

/** Checks between fields, after each field has its type. */
function crossCheck(p: ProbeJson, requireBlock: boolean): void {
  const f = (field: string, problem: string): never => {
    throw new SpecError(field, problem);
  };
  headDimAgrees(p.model.config, f);
  const realLen = p.prompt.real_len;
  if (p.prompt.padded_len !== null && p.prompt.padded_len < realLen) f('prompt.padded_len', `${p.prompt.padded_len} is less than prompt.real_len ${realLen}`);
  if (p.prompt.token_ids.length > 0 && p.prompt.token_ids.length !== realLen) {
    f('prompt.token_ids', `holds ${p.prompt.token_ids.length} ids but prompt.real_len is ${realLen}`);
  }
  const { npu, ref } = p.tensors;
  if (requireBlock && (p.stage !== 'block' || !npu || !ref)) {
    f('stage', `is "${p.stage}" and the file holds no block tensors (stage "config"): run \`probe block\`, or \`npu-block-gate check\`, first`);
  }
  const rows = (t: TensorEntry) => t.shape.slice(0, -1).reduce((a, b) => a * b, 1);
  const cols = (t: TensorEntry) => t.shape[t.shape.length - 1];
  for (const [name, t] of [['npu', npu], ['ref', ref], ['input', p.tensors.input]] as const) {
    if (t && t.shape.length < 1) f(`tensors.${name}.shape`, 'must list at least one dimension');
  }
  if (ref && rows(ref) !== realLen) f('tensors.ref.shape', `says ${rows(ref)} rows but prompt.real_len is ${realLen} (the reference holds the real tokens only)`);
  if (npu && rows(npu) < realLen) f('tensors.npu.shape', `says ${rows(npu)} rows, fewer than prompt.real_len ${realLen}`);
  if (npu && ref && cols(npu) !== cols(ref)) f('tensors.npu.shape', `has ${cols(npu)} columns but tensors.ref.shape has ${cols(ref)}`);
  p.layers?.entries.forEach((e, i) => {
    if (cols(e.npu) !== cols(e.ref)) f(`layers.entries[${i}].npu.shape`, `has ${cols(e.npu)} columns but its ref has ${cols(e.ref)}`);
  });
  const pos = p.prompt.positions;
  if (pos && pos.real_len !== realLen) f('prompt.positions.real_len', `is ${pos.real_len} but prompt.real_len is ${realLen}`);
  p.boundaries?.entries.forEach((e, i) => {
    // Every boundary file holds the real rows only, [real_len, features], the same shape on both sides.
    for (const side of ['npu', 'ref'] as const) {
      const t = e[side];
      if (t.shape.length !== 2 || t.shape[0] !== realLen) {
        f(`boundaries.entries[${i}].${side}.shape`, `is [${t.shape.join(', ')}]; a boundary is [real_len, features] with real_len ${realLen}`);
      }
    }
    if (e.npu.shape.join('x') !== e.ref.shape.join('x')) f(`boundaries.entries[${i}].ref.shape`, `is [${e.ref.shape.join(', ')}] but its npu side is [${e.npu.shape.join(', ')}]`);
    if (e.fp32 && e.fp32.shape.join('x') !== e.ref.shape.join('x')) f(`boundaries.entries[${i}].fp32.shape`, `is [${e.fp32.shape.join(', ')}] but its ref side is [${e.ref.shape.join(', ')}]`);
    if (e.twin && e.twin.shape.join('x') !== e.ref.shape.join('x')) f(`boundaries.entries[${i}].twin.shape`, `is [${e.twin.shape.join(', ')}] but its ref side is [${e.ref.shape.join(', ')}]`);
  });
}

/** The largest head a config may declare (today's models use 64 to 256). */
const HEAD_DIM_MAX = 1024;

/**
 * head_dim sets the G2 bar, so it must be the model's: emb_dim / n_heads, unless the config declares
 * its own (Qwen3: 128 with emb_dim 1024 and 16 heads; the probe records head_dim_explicit), and
 * then a plausible head: even (RoPE rotates pairs), at most HEAD_DIM_MAX, and the heads together
 * within 4x emb_dim.
 */
function headDimAgrees(c: ProbeJson['model']['config'], f: (field: string, problem: string) => never): void {
  const hd = c.head_dim;
  if (hd * c.n_heads === c.emb_dim) return;
  if ((c as { head_dim_explicit?: unknown }).head_dim_explicit !== true) {
    f('model.config.head_dim', `${hd} does not agree with emb_dim ${c.emb_dim} / n_heads ${c.n_heads} = ${c.emb_dim / c.n_heads} (and the config declares no head_dim of its own: head_dim_explicit)`);
  }
  if (hd % 2 !== 0 || hd > HEAD_DIM_MAX || hd * c.n_heads > 4 * c.emb_dim) {
    f('model.config.head_dim', `${hd} is not a plausible head size (even, at most ${HEAD_DIM_MAX}, n_heads x head_dim within 4x emb_dim ${c.emb_dim})`);
  }
}

export function tensorPath(runDir: string, entry: TensorEntry): string {
  return join(runDir, entry.file);
}

/**
 * Opens a tensor the run dir declares, after checking where it is (a regular file inside the run
 * dir) and that its dtype and shape are the ones probe.json declares (`field` names the entry).
 */
export function openRunTensor(runDir: string, entry: TensorEntry, field: string): TensorSource {
  const shown = tensorPath(runDir, entry);
  runFile(runDir, entry.file, `${field}.file`);
  // Opened by the name the run dir gives (messages name it so); checked just above: no link on the way.
  const t = openTensor(shown, { u2IsBf16: entry.dtype === 'bf16' });
  try {
    if (t.dtype !== entry.dtype) throw new InputError(`holds ${t.dtype} but probe.json ${field}.dtype says ${entry.dtype}`, shown);
    const declared = entry.shape.join('x');
    if (declared !== t.shape.join('x')) throw new InputError(`shape ${t.shape.join('x')} disagrees with probe.json ${field}.shape (${declared})`, shown);
  } catch (e) {
    t.close();
    throw e;
  }
  return t;
}
