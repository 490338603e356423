// bisect/bisect.json, the run-dir file `probe bisect` writes (DESIGN.md "Lens and bisect"). Two
// methods, one file:
//  - hook: the model's own bisect_steps (air-mini): one row per step swapped to its CPU equivalent;
//  - twins: the real tree's fused ELFs, from one captured NPU run: the launch-level table (each
//    launch's buffers, NPU against its CPU twin computed from the launch's own inputs) and the
//    swap-forward table (ffn_out after ELFs 1..i answered by their twins), in the step format.
// It carries tensors only; the numbers are ours (src/bisect/judge.ts into record/bisect.ts).
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { BISECT_CONTRACT } from '../contract.ts';
import { InputError, fsError } from '../errors.ts';
import { readRegularFile, runFile } from './read.ts';
import { any, bool, int, list, nullable, num, obj, oneOf, optional, str, withDefault, SpecError, type Infer } from './spec.ts';
import { TENSOR_SPEC, TWINS_SPEC } from './probe-spec.ts';

export const BISECT_SCHEMA = BISECT_CONTRACT.schema as 'npu-block-gate/bisect';
export const BISECT_SCHEMA_VERSION = BISECT_CONTRACT.version;
export const BISECT_FILE = `${BISECT_CONTRACT.dir}/${BISECT_CONTRACT.json}`;
export const BISECT_METHODS = BISECT_CONTRACT.methods as ['hook', 'twins'];

// Names and texts here come from the model tree's code (a hook's step names): any string, bounded;
// the renderers escape them (a name that is not an identifier is shown escaped and marked).
const text = (max = 4096) => str({ max });
/** A run-dir file name: relative, no `..` (runFile/openRunTensor check it against the disk). */
const relFile = str({
  max: 1024, what: 'a relative path inside the run dir',
  pattern: /^(?![\\/])(?![A-Za-z]:)(?!.*(^|[\\/])\.\.([\\/]|$))[^\u0000]+$/,
});

const STEP = obj({
  index: optional(int(0)),
  step: text(200),
  kernel: withDefault(text(200), () => ''),
  cpu_equivalent: withDefault(text(), () => ''),
  file: relFile,
  seconds: optional(num(0)),
  /** twins: the ELFs answered by their twins at this step. */
  swapped: optional(list(text(200), 256)),
}, { declare: false, rest: any() });

const BUFFER = obj({
  buffer: text(200),
  arg: optional(nullable(int(0))),
  boundary: withDefault(nullable(text(200)), () => null),
  stage: withDefault(text(200), () => ''),
  step: withDefault(nullable(text(200)), () => null),
  rows: optional(list(int(0), 2)),
  npu: TENSOR_SPEC,
  twin: TENSOR_SPEC,
}, { declare: false, rest: any() });

const LAUNCH = obj({
  index: int(0),
  launch: text(200),
  occurrence: withDefault(int(0), () => 0),
  kind: withDefault(text(200), () => ''),
  layout: optional(text(200)),
  twin: withDefault(text(), () => ''),
  buffers: list(BUFFER, 256),
}, { declare: false, rest: any() });

/** bisect/bisect.json as `probe bisect` writes it (tensors only; the numbers are ours). */
const BISECT_SPEC = obj({
  schema: text(100),
  schema_version: int(0),
  available: bool(),
  reason: withDefault(text(), () => ''),
  hook: withDefault(nullable(text()), () => null),
  /** Absent in bisect.json files written before the twins: a hook bisect then. */
  method: withDefault(nullable(oneOf(...BISECT_METHODS)), () => null),
  emulated: withDefault(bool(), () => false),
  steps: list(STEP, 1024),
  launches: withDefault(nullable(list(LAUNCH, 1024)), () => null),
  /** twins: how they computed (absent in older files: fp32 numerics). */
  twins: withDefault(nullable(TWINS_SPEC), () => null),
  /** Block 0 re-run unswapped before any swap (absent in older files: nothing to check it against). */
  rerun: withDefault(nullable(obj({ file: relFile, python: withDefault(text(), () => '') }, { declare: false, rest: any() })), () => null),
}, { declare: false, rest: any() });

export type BisectJson = Infer<typeof BISECT_SPEC>;
export type BisectJsonLaunch = Infer<typeof LAUNCH>;

/** bisect.json is a few KB (one entry per step and buffer); anything larger is not one. */
const BISECT_JSON_MAX_BYTES = 16 << 20;

export function readBisectJson(runDir: string): BisectJson | null {
  const file = join(runDir, BISECT_FILE);
  try {
    lstatSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw fsError(e, file, 'cannot read');
  }
  // A regular file inside the run dir (a link out of it, a FIFO or a directory is refused).
  const bytes = readRegularFile(runFile(runDir, BISECT_FILE, 'bisect.json'), BISECT_JSON_MAX_BYTES);
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(bytes.toString('utf8'));
  } catch (e) {
    throw new InputError(`not valid JSON (${(e as Error).message.split('\n')[0]})`, file);
  }
  if (o?.schema !== BISECT_SCHEMA) throw new InputError(`schema is ${JSON.stringify(o?.schema)}, expected ${JSON.stringify(BISECT_SCHEMA)}`, file);
  if (o.schema_version !== BISECT_SCHEMA_VERSION) throw new InputError(`schema_version ${JSON.stringify(o.schema_version)} is not supported (this npu-block-gate reads version ${BISECT_SCHEMA_VERSION})`, file);
  try {
    return BISECT_SPEC.check(o, '');
  } catch (e) {
    if (e instanceof SpecError) throw new InputError(e.message, file);
    throw e;
  }
}
