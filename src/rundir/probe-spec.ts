// probe.json, declared whole: every field's type, which are required, and what an older run dir
// that lacks a newer optional field reads as. The keys are contract.json's probe.keys, the list
// the probe writes by: this module refuses to load when the spec and that list differ (the check
// at the end), and the type this spec guarantees is checked against the ProbeJson interface by
// the compiler.
import { CONTRACT, PROBE_KEYS } from '../contract.ts';
import { PROBE_SCHEMA, PROBE_SCHEMA_VERSION, type ProbeJson } from './schema.ts';
import { ID_RE } from '../text/escape.ts';
import { GENERATION_ID_RE } from '../npu/generation.ts';
import {
  any, bool, int, keyTree, list, literal, nullable, num, obj, oneOf, optional, record, scalar, str, withDefault,
  type Infer, type KeyTree, type Spec,
} from './spec.ts';

/** A commit id: hex, as git prints it (short or full, SHA-1 or SHA-256). */
const COMMIT_RE = /^[0-9a-fA-F]{7,64}$/;

const line = (max = 4096) => str({ line: true, max });
/** prompt.text's limit (the longest prompt a run dir may record). */
const PROMPT_MAX = 1 << 20;
/** A defaults.differs line: the two prompts, each escaped (repr: a character may take up to 10), and the words around them. */
const DIFFERS_MAX = 2 * 10 * PROMPT_MAX + 4096;
const text = (max = 1 << 20) => str({ max });
const strList = (max = 1 << 16) => list(line(), max);
const nullStr = () => withDefault(nullable(line()), () => null);

/** A run-dir file name: relative, inside the run dir (checked again against the disk when opened). */
const runFile = str({
  line: true, max: 1024, what: 'a relative path inside the run dir',
  pattern: /^(?![\\/])(?![A-Za-z]:)(?!.*(^|[\\/])\.\.([\\/]|$)).+$/,
});

export const TENSOR_SPEC = obj({
  file: runFile,
  dtype: oneOf('f32', 'f16', 'bf16'),
  shape: list(int(1), 8),
}, { declare: false });

/** How CPU twins computed (probe.json emulate.twins, bisect.json twins). */
export const TWINS_SPEC = obj({
  precision: oneOf(...([...CONTRACT.emulate.twin_precision, ...Object.keys(CONTRACT.emulate.twin_precision_aliases)] as [string, ...string[]])), rms_eps: num(0), qk_eps: num(0),
  eps_from: withDefault(line(40), () => 'tree'),
}, { declare: false, rest: any() });

const workaround = obj({ id: line(200), detail: line(), prerequisite: line() }, { declare: false, rest: any() });

const step1 = obj({
  path: optional(oneOf('kernel-first', 'inheritance')),
  matches: optional(bool()),
  inheritance_allowed: optional(bool()),
  llama_sequence: optional(strList()),
  model_sequence: optional(strList()),
  breaks: optional(list(obj({ rule: line(), op: optional(line(200)), detail: line() }, { declare: false, rest: any() }))),
  path_why: optional(nullable(line())),
  block: optional(nullable(obj({
    function: line(), file: withDefault(nullable(line()), () => null), line: optional(nullable(int(0))),
    where: line(), via: withDefault(nullable(line()), () => null), compile: withDefault(nullable(line()), () => null),
  }, { declare: false, rest: any() }))),
}, { declare: false, rest: any() });

const step2 = obj({
  triggers: optional(list(obj({ id: line(), detail: line(), seed_workaround: optional(line()) }, { declare: false, rest: any() }))),
  tree_does: optional(list(obj({ id: line(), detail: line(), evidence: optional(line()) }, { declare: false, rest: any() }))),
  prerequisite: optional(nullable(line())),
}, { declare: false, rest: any() });

const coverageRow = obj({
  section: optional(nullable(line())), shape: optional(nullable(line())), used_by: optional(nullable(line())), reason: optional(nullable(line())),
}, { declare: false, rest: any() });
const coverage = obj({ unwired: optional(list(coverageRow)) }, { declare: false, rest: any() });

const config = obj({
  n_layers: int(1), emb_dim: int(1), n_heads: int(1), n_kv_heads: int(1), head_dim: int(1), hidden_dim: int(1),
  vocab_size: optional(int(1)), rope_base: optional(num(0)),
  qkv_bias: withDefault(bool(), () => false), qk_norm: withDefault(bool(), () => false),
}, { declare: false, rest: any() });

const refCache = obj({
  key: line(200), hit: bool(), dir: line(),
  root: optional(line()), kind: optional(nullable(line())),
  inputs: optional(nullable(obj({ layers: optional(list(int(0))) }, { declare: false, rest: any() }))),
}, { declare: false, rest: any() });

const compileInputs = obj({
  files: list(line()), env: record(nullable(str())), models: optional(strList()),
}, { declare: false, rest: any() });

const nullableNum = () => optional(nullable(num(0)));

/** A boundary's name: an identifier (it names files and shows in tables, charts and annotations). */
const boundaryName = str({ pattern: ID_RE, what: 'a boundary name (1-64 of A-Z a-z 0-9 _ . -)' });

export const PROBE_SPEC = obj({
  schema: literal(PROBE_SCHEMA),
  schema_version: literal(PROBE_SCHEMA_VERSION),
  stage: oneOf(...(CONTRACT.probe.stages as ['config', 'block'])),
  created_at: withDefault(line(100), () => ''),
  tool: withDefault(obj({ name: line(100), version: line(100) }), () => ({ name: 'npu-block-gate', version: 'unknown' })),
  model: obj({
    // The model dir's basename: it titles the documents, so nothing that is not a name gets in.
    name: str({ line: true, max: 200, pattern: /^(?!\.\.?$)(?!.*<!--)(?!.*-->)[^/\\]+$/, what: 'a directory name (no / or \\, not . or .., no "<!--" or "-->")' }),
    dir: line(),
    hf_id: nullStr(),
    config,
  }),
  prompt: obj({
    // The style keys the history row: a word, never a table cell breaker.
    style: str({ line: true, max: 40, pattern: /^[A-Za-z0-9_.:+-]+$/, what: 'a word (letters, digits, _ . : + -)' }),
    text: text(PROMPT_MAX),
    source: withDefault(line(), () => ''),
    token_ids: withDefault(list(int(0), 1 << 20), () => []),
    real_len: int(1),
    padded_len: withDefault(nullable(int(1)), () => null),
    tokenizer: withDefault(line(), () => ''),
    positions: optional(nullable(obj({
      requested: int(1), real_len: int(1), prompt_tokens: int(0),
      method: oneOf('prompt', 'truncated', 'continued', 'repeated'),
      set: nullable(line()), prompts_used: int(0), cycles: int(0), text_chars: int(0),
    }, { declare: false }))),
  }),
  defaults: optional(nullable(obj({
    make_diagnosis: obj({ prompt: nullable(text()), model_choice: nullable(line()), cpu_attn: nullable(bool()) }, { declare: false, rest: any() }),
    // One line per difference, quoting both prompts whole: as long as two prompts (prompt.text's limit each), escaped.
    differs: list(line(DIFFERS_MAX)),
  }))),
  integration: obj({
    path: oneOf(...(CONTRACT.integration_paths as ['kernel-first', 'inheritance', 'adapter'])),
    entry: line(),
    runner: optional(oneOf('single', 'block', 'adapter')),
    reason: withDefault(line(), () => ''),
    kernels: withDefault(strList(), () => []),
    tiles: withDefault(record(line(200)), () => ({})),
    workarounds: withDefault(list(workaround, 64), () => []),
    cpu_attn: withDefault(nullable(bool()), () => null),
    step1: optional(nullable(step1)),
    step2: optional(nullable(step2)),
    coverage: optional(nullable(coverage)),
    defined_in: optional(nullable(obj({
      module: line(), file: nullable(line()), model: nullable(line()),
    }, { declare: false, rest: any() }))),
  }),
  reference: obj({
    kind: oneOf(...(CONTRACT.reference_kinds as ['hf-bf16', 'emulated'])),
    runner: withDefault(line(), () => ''),
    // The seed's reference is HfRunner with lite_mode=False; anything else is not the reference.
    lite_mode: withDefault(literal(false), () => false as const),
    dtype: withDefault(line(100), () => ''),
    model_id: nullStr(),
    transformers: nullStr(),
    torch: nullStr(),
    cache: optional(nullable(refCache)),
    hub_offline: optional(bool()),
  }),
  environment: obj({
    python: withDefault(line(200), () => ''),
    python_executable: withDefault(line(), () => ''),
    numpy: withDefault(line(200), () => ''),
    platform: withDefault(line(), () => ''),
    device: nullStr(),
    xrt: nullStr(),
    // The NPU and its generation (npu_probe.core.npu); absent in older run dirs, null when none was found or the run was emulated.
    npu: optional(nullable(obj({
      generation: nullable(str({ pattern: GENERATION_ID_RE, what: 'a generation id' })),
      name: nullStr(), pci: nullStr(), bdf: nullStr(), driver: nullStr(), firmware: nullStr(), xrt: nullStr(),
      source: oneOf('pci', 'name', 'none'),
    }, { declare: false }))),
    toolchain: withDefault(nullable(record(scalar())), () => null),
    git_commit: withDefault(nullable(str({ pattern: COMMIT_RE, what: 'a hex commit id' })), () => null),
    air_root: withDefault(line(), () => ''),
  }),
  timings: withDefault(record(num(0)), () => ({})),
  kernel_cache: withDefault(obj({
    dir: withDefault(nullable(line()), () => null),
    key: withDefault(nullable(line(200)), () => null),
    hit: withDefault(nullable(bool()), () => null),
    seconds_saved: withDefault(nullable(num(0)), () => null),
    entries: withDefault(strList(), () => []),
    seq_len: optional(nullable(int(1))),
    cpu_attn: optional(nullable(bool())),
    toolchain: optional(any()),
    compile_command: optional(nullable(line())),
    compiled: optional(strList()),
    reused: optional(strList()),
    compile_seconds: nullableNum(),
    manifest_loaded: optional(nullable(bool())),
    inputs: optional(nullable(compileInputs)),
  }), () => ({ dir: null, key: null, hit: null, seconds_saved: null, entries: [] })),
  tensors: withDefault(obj({
    npu: withDefault(nullable(TENSOR_SPEC), () => null),
    ref: withDefault(nullable(TENSOR_SPEC), () => null),
    input: withDefault(nullable(TENSOR_SPEC), () => null),
  }), () => ({ npu: null, ref: null, input: null })),
  bisect: withDefault(nullable(obj({
    available: bool(), reason: line(),
    steps: list(obj({ step: line(), cosine: num() }, { declare: false, rest: any() })),
  }, { declare: false, rest: any() })), () => null),
  layers: optional(nullable(obj({
    source: line(),
    entries: list(obj({ layer: int(0), npu: TENSOR_SPEC, ref: TENSOR_SPEC }, { declare: false }), 4096),
  }, { declare: false }))),
  // The lens (scripts/probe/README.md "Boundaries"): every pair's files are opened through
  // openRunTensor (regular files inside the run dir, of the declared dtype and shape).
  boundaries: optional(nullable(obj({
    source: nullable(oneOf('launches', 'returned', 'launches+returned')),
    table: nullable(line()),
    emulated: bool(),
    reference: nullable(line(200)),
    layout: line(),
    entries: list(obj({
      name: boundaryName,
      order: int(0, 99),
      step: nullable(line(100)),
      launch: nullable(line(200)),
      arg: nullable(int(0)),
      source: oneOf('launch', 'returned'),
      produced_by: nullable(line(200)),
      npu: TENSOR_SPEC,
      ref: TENSOR_SPEC,
      fp32: optional(nullable(TENSOR_SPEC)),
      twin: optional(nullable(TENSOR_SPEC)),
    }, { declare: false }), 256),
    unpaired: list(obj({ name: boundaryName, side: oneOf('npu', 'ref', 'both'), reason: line() }, { declare: false }), 256),
    fp32: optional(nullable(obj({ dtype: line(40), what: line() }, { declare: false, rest: any() }))),
    // The error budget's expected side (npu_probe.lens.expected): how the hardware twins computed.
    twin: optional(nullable(obj({
      precision: oneOf(...(CONTRACT.emulate.twin_precision as [string, ...string[]])), rms_eps: num(0), qk_eps: num(0),
      eps_from: line(40), what: line(),
    }, { declare: false, rest: any() }))),
    // The tree's RMSNorm eps against the checkpoint's (npu_probe.lens.eps): a known upstream finding.
    norm_eps: optional(nullable(obj({
      tree: num(0), file: str({ pattern: /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*\.py$/, max: 200, what: 'a .py path inside the tree' }), line: int(1),
      config: num(0), config_from: line(400), twins: num(0), twins_from: line(40),
    }, { declare: false, rest: any() }))),
  }))),
  // --emulate (scripts/probe/README.md "Emulated NPU"): no NPU ran; every report marks the run.
  emulate: optional(nullable(obj({
    runtime: line(200),
    inject: nullable(oneOf(...(CONTRACT.emulate.inject as [string, ...string[]]))),
    config_from: nullable(line()),
    config_changes: record(list(scalar(), 2)),
    artifacts: strList(),
    registry: list(obj({
      shape: list(int(0), 8), as: nullable(list(int(0), 8)), dtype: line(40),
      precision: nullable(line(40)), method: nullable(line(40)),
    }, { declare: false, rest: any() }), 4096),
    launches: int(0),
    compile: line(),
    twins: optional(nullable(TWINS_SPEC)),
  }))),
  // Step 2's padded-vs-original check (scripts/probe/README.md "Step 2 sanity"): informational.
  step2_sanity: optional(nullable(obj({
    gate: num(0),
    skipped: optional(line()),
    dtype: optional(line(40)),
    tokens: optional(int(0)),
    model_id: optional(nullable(line())),
    original: optional(record(int(0))),
    padded: optional(record(int(0))),
    rows: optional(list(obj({
      id: oneOf('reindexed', 'tree_helper', 'naive_end'),
      label: line(),
      ffn_out_cosine: optional(num()),
      logits_cosine: optional(num()),
      pass: optional(bool()),
      skipped: optional(line()),
    }, { declare: false, rest: any() }), 8)),
    ok: optional(bool()),
    why: optional(line()),
    misrouted_heads: optional(int(0)),
  }, { declare: false, rest: any() }))),
});

type CheckedProbeJson = Infer<typeof PROBE_SPEC>;

// Compile-time: what the spec guarantees is a ProbeJson (a field the interface requires cannot be
// left optional here, nor typed wider than the interface says).
const _isProbeJson = (p: CheckedProbeJson): ProbeJson => p;
void _isProbeJson;
export type { Spec };

/** Keys declared on one side only, as dotted paths: `spec: x` (typed here, not in the contract),
 * `contract: y` (in the contract, not typed here). A key is declared with its nested keys or as a
 * leaf; declaring it one way on one side and the other way on the other is a difference too. */
export function keyDrift(spec: KeyTree | null, contract: KeyTree | null, prefix = ''): string[] {
  const out: string[] = [];
  const a = spec ?? {};
  const b = contract ?? {};
  for (const k of Object.keys(a)) if (!(k in b)) out.push(`spec: ${prefix}${k}`);
  for (const k of Object.keys(b)) if (!(k in a)) out.push(`contract: ${prefix}${k}`);
  for (const k of Object.keys(a)) {
    if (!(k in b)) continue;
    const x = a[k], y = b[k];
    if ((x === null) !== (y === null)) out.push(`${x === null ? 'contract' : 'spec'}: ${prefix}${k}.* (an object there, a leaf on the other side)`);
    else if (x && y) out.push(...keyDrift(x, y, `${prefix}${k}.`));
  }
  return out;
}

// One key list for both languages: a key typed here but missing from contract.json, or declared
// there but not typed here, stops every command at once instead of when a run dir first holds it.
const drift = keyDrift(keyTree(PROBE_SPEC), PROBE_KEYS);
if (drift.length) {
  throw new Error(`src/rundir/probe-spec.ts and scripts/probe/contract.json probe.keys declare different probe.json keys: ${drift.join(', ')}`);
}
