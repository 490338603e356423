// One validated description of a run, built by the CLI (flags) or the Action (inputs).
import { InputError } from './errors.ts';
import { CONTRACT } from './contract.ts';

/** The bugs `--inject` can put into the emulated NPU. */
export const INJECTIONS: readonly string[] = CONTRACT.emulate.inject;
/** How the CPU twins round (contract.json emulate.twin_precision): hw (default: bf16 plus the BFP16 operand
 *  cast), bf16 or fp32; `hardware`, bf16's older name, is still taken (emulate.twin_precision_aliases). */
export const TWIN_PRECISIONS: readonly string[] = [...CONTRACT.emulate.twin_precision, ...Object.keys(CONTRACT.emulate.twin_precision_aliases)];
/** Which RMSNorm eps the emulated NPU's twins use (contract.json emulate.twin_eps): tree (default) or config. */
export const TWIN_EPS: readonly string[] = CONTRACT.emulate.twin_eps;

export type Mode = 'full' | 'probe' | 'report';
export const PROMPT_STYLES = ['base', 'instruct'] as const;
export type PromptStyle = (typeof PROMPT_STYLES)[number];

export interface Plan {
  mode: Mode;
  /** The model dir (programming_examples/llms/<model>); may be null in report mode (taken from the run dir). */
  modelDir: string | null;
  /** A prompt set to take the first prompt of; null: the prompt `make diagnosis` uses. */
  promptStyle: PromptStyle | null;
  prompt: string | null;
  /** MODEL_CHOICES key or HF id; null: the MODEL `make diagnosis` uses. */
  model?: string | null;
  /** Attention on the CPU (true) or the NPU (false); null: as `make diagnosis` (NPU). */
  cpuAttn?: boolean | null;
  /** Allow HuggingFace hub calls; default offline (the local HF cache only). */
  online?: boolean;
  /** `plan --sanity`: also run Step 2's padded-vs-original check on the CPU (the probe's Python needs torch). */
  sanity?: boolean;
  /** `plan --hf-config`: an HF config.json path or a model id; the plan then needs no model dir. */
  hfConfig?: string;
  python: string | null;
  runDir: string;
  /** Per-position threshold override; null uses T(head_dim). */
  threshold: number | null;
  writeDocs: boolean;
  /** Why the documents are not written when writeDocs is false (G4's skip says it); default: turned off. */
  docsSkipped?: string;
  /** `--break-lock`: break at once a documents lock whose owner cannot be checked from here (another host). */
  breakLock?: boolean;
  /** On a failed gate, bisect kernel by kernel (mode full, when the model exposes the hook). Default true. */
  bisect?: boolean;
  /** Also run every layer through the adapter for the informational per-layer table. Default false. */
  layers?: boolean;
  /** The lens: every boundary inside block 0 on both sides (probe `--no-boundaries` when false). Default true. */
  boundaries?: boolean;
  /** Block 0 on N real tokens instead of the prompt's (probe `--positions N`); null: the prompt. */
  positions?: number | null;
  /** No NPU: the tree's own block on the probe's emulated runtime (CPU twins); every report marks it. CLI only (tests). */
  emulate?: boolean;
  /** With `emulate`: one named bug in the emulated NPU (contract.json emulate.inject). */
  inject?: string | null;
  /** How the CPU twins round (the emulated NPU's and the bisect's); null: hw, the registry's kernels' roundings plus the BFP16 operand cast. */
  twinPrecision?: string | null;
  /** With `emulate`: the twins' RMSNorm eps, the ELFs' own (tree) or the checkpoint's (config); null: tree. */
  twinEps?: string | null;
  /** Use the content-addressed kernel cache (restore on a hit). Default false. */
  cache?: boolean;
  /** Kernel cache root; default $NPU_BLOCK_GATE_CACHE_DIR, else ~/.cache/npu-block-gate. */
  cacheDir?: string | null;
  /** Store fresh compiles in the cache: trusted runs only (never code from a fork). Default true. */
  cacheWrite?: boolean;
  timeoutSec: number | null;
  /**
   * An existing, non-empty run dir may be replaced (its run files removed first). false: refused
   * (the CLI without --force); unset: allowed (the Action, whose run dir is its own).
   */
  force?: boolean;
  /** Overrides the commit the history is keyed by (default: the tree's HEAD, then GITHUB_SHA). */
  commit: string | null;
  /** Extra environment for the probe (e.g. AIR_MINI_INJECT in tests). */
  probeEnv?: Record<string, string>;
  /** Names of this process's variables the probe also sees (`--probe-env`, the `probe-env` input);
   * everything else it gets is the allow-list in src/probe/env.ts. */
  probeEnvNames?: string[];
  /** Documents are never read or written through a symlink in the model dir (the Action: a pull
   * request's code may have left one in a persistent checkout). */
  confineDocs?: boolean;
  /** How the probe (the model tree's own Python) is kept away from this process, its tokens and the
   * caches (src/probe/isolate.ts). Default: the strongest mode the machine offers. */
  isolation?: import('./probe/isolate.ts').IsolationRequest;
}

export function parsePromptStyle(v: string, from: string): PromptStyle {
  if ((PROMPT_STYLES as readonly string[]).includes(v)) return v as PromptStyle;
  throw new InputError(`${from} must be one of ${PROMPT_STYLES.join(', ')}, got ${JSON.stringify(v)}`);
}

/** Node's timers hold at most 2^31 - 1 ms; a longer --timeout would fire at once. */
export const MAX_TIMEOUT_SECONDS = 2147483;

/**
 * `plan`'s timeout when --timeout is not given: the plan reads files (seconds); --sanity also loads
 * the checkpoint and runs four CPU forwards in float32 (minutes for a 1B model on a small machine).
 */
export const PLAN_TIMEOUT_SECONDS = 120;
export const PLAN_SANITY_TIMEOUT_SECONDS = 1800;

/**
 * A number as a person writes it in decimal: digits, an optional fraction, an optional sign.
 * No hex (0x1), exponents (1e3), underscores, "Infinity" or surrounding spaces.
 */
function parseDecimal(v: string, from: string, range: string): number {
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(v)) throw new InputError(`${from} must be a decimal number ${range}, got ${JSON.stringify(v)}`);
  return Number(v);
}

export function parseThreshold(v: string, from: string): number {
  const n = parseDecimal(v, from, 'in (0, 1]');
  if (!(n > 0 && n <= 1)) throw new InputError(`${from} must be a decimal number in (0, 1], got ${JSON.stringify(v)}`);
  return n;
}

export function parseTimeout(v: string, from: string): number {
  const range = `of seconds in (0, ${MAX_TIMEOUT_SECONDS}] (about 24.8 days, the longest timer Node can set)`;
  const n = parseDecimal(v, from, range);
  if (!(n > 0 && n <= MAX_TIMEOUT_SECONDS)) throw new InputError(`${from} must be a decimal number ${range}, got ${JSON.stringify(v)}`);
  return n;
}

/** Longest `--positions` accepted here (the probe refuses more than the compiled seq_len, 2048 in production). */
export const MAX_POSITIONS = 1 << 20;

/** `--positions N`: a whole decimal number of real tokens in [1, MAX_POSITIONS]. */
export function parsePositions(v: string, from: string): number {
  const range = `of tokens in [1, ${MAX_POSITIONS}] (at most the compiled seq_len, 2048 in production)`;
  if (!/^\+?\d+$/.test(v)) throw new InputError(`${from} must be a whole decimal number ${range}, got ${JSON.stringify(v.length > 40 ? `${v.slice(0, 37)}...` : v)}`);
  const n = Number(v);
  if (!(n >= 1 && n <= MAX_POSITIONS)) throw new InputError(`${from} must be a whole decimal number ${range}, got ${JSON.stringify(v)}`);
  return n;
}

/** `--inject BUG`: one of the bugs the probe's emulated NPU knows (contract.json emulate.inject). */
export function parseInject(v: string, from: string): string {
  if ((INJECTIONS as readonly string[]).includes(v)) return v;
  throw new InputError(`${from} must be one of ${INJECTIONS.join(', ')}, got ${JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v)}`);
}

/** A choice from a short list (--twin-precision, --twin-eps): one line naming the choices otherwise. */
export function parseChoice(v: string, from: string, choices: readonly string[]): string {
  if (choices.includes(v)) return v;
  throw new InputError(`${from} must be one of ${choices.join(', ')}, got ${JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v)}`);
}

/** A history row is keyed by the commit: a hex commit id (7 to 64 digits), or "uncommitted". */
export function parseCommit(v: string, from: string): string {
  if (v === 'uncommitted') return v;
  if (!/^[0-9a-fA-F]{7,64}$/.test(v)) throw new InputError(`${from} must be a hex commit id (7 to 64 hex digits) or "uncommitted", got ${JSON.stringify(v.length > 80 ? `${v.slice(0, 77)}...` : v)}`);
  return v.toLowerCase();
}

/** A default run dir name, unique to this run: runs/<model>-YYYYmmdd-HHMMSS-mmm-<pid> (UTC, to the
 * millisecond, and the process id: two runs started in the same millisecond are two processes). */
export function defaultRunDirName(model: string, now = new Date(), pid = process.pid): string {
  const ts = now.toISOString().replace(/[-:]/g, '').replace('T', '-').replace('.', '-').slice(0, 19);
  return `runs/${model}-${ts}-${pid}`;
}
