// The probe's environment, as an allow-list (DESIGN.md "Trust"). The probe imports the model tree's
// own Python (in a pull request, code nobody reviewed): it gets the variables a Python, XRT and the
// mlir-air toolchain need, the tree's own knobs, and what the admin names, never the runner's
// environment minus a list of names someone thought of (a runner holds GH_PAT, DATABASE_URL,
// KUBECONFIG, ... under names no pattern foresees).
import { HF_HUB, hfHome, hfHubCache } from '../contract.ts';

/** Passed when set: the basics of a process, Python and the HF cache (its offline switches included). */
const BASE_NAMES = [
  'PATH', 'HOME', 'LANG', 'LANGUAGE', 'TZ', 'TERM',
  'PYTHONPATH', 'PYTHONHOME', 'LD_LIBRARY_PATH',
  'HF_HOME', 'HF_HUB_CACHE', 'HUGGINGFACE_HUB_CACHE', 'HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE', 'HF_DATASETS_OFFLINE',
  'OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'OPENBLAS_NUM_THREADS',
  // What the probe itself reads: the NPU lock (shared with the mlir-air skills), its umask under uid isolation.
  'NPU_BLOCK_GATE_NPU_LOCK', 'NPU_BLOCK_GATE_UMASK',
] as const;

/** Passed when set: locale categories and the XRT / mlir-air / AIE toolchain families (install dirs, knobs). */
const FAMILIES = /^(LC_[A-Z]+|XILINX\w*|XRT_\w+|AIE\w*|AIR_\w+|MLIR_\w+|PEANO_\w+|VITIS\w*)$/;

/** A name in a family that still looks like a credential is left out: a family is a pattern, not a promise. */
const CREDENTIAL_NAME = /(^|_)(TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|CREDS|API_?KEY|KEY|ACCESS_KEY(_ID)?|PRIVATE_KEY|AUTH|PAT)(_|$)/i;

/** An environment variable name (what an admin may list, what a tree may read). */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export interface ProbeEnvOptions {
  /** Names the admin lists (`probe-env` input, `--probe-env`): passed when set, whatever they look like. */
  names?: readonly string[];
  /** The tree's own knobs (`plan`'s kernel_cache.inputs.env): passed when set unless they look like a credential. */
  knobs?: readonly string[];
}

/** Whether the probe may see `name` (before the explicit extras a caller adds). */
export function allowed(name: string, o: ProbeEnvOptions = {}): boolean {
  if ((BASE_NAMES as readonly string[]).includes(name) || o.names?.includes(name)) return true;
  if (CREDENTIAL_NAME.test(name)) return false;
  return FAMILIES.test(name) || !!o.knobs?.includes(name);
}

/** The probe's environment: the allowed variables of `env`, nothing else. */
export function probeEnv(env: NodeJS.ProcessEnv, o: ProbeEnvOptions = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && allowed(k, o)) out[k] = v;
  return out;
}

/** The home huggingface_hub expands `~` with in a process of this environment: its $HOME, else the
 * account's. Null when neither is known and no variable places the cache without it. */
function hubHome(env: NodeJS.ProcessEnv, home: string | null): string | null {
  const h = env.HOME || home;
  if (h) return h;
  const placed = HF_HUB.cache_env.some((v) => env[v]) || env[HF_HUB.home_env] || env[HF_HUB.xdg_env];
  return placed ? '' : null;
}

/** The HF hub cache a probe with this environment reads: contract.json's rule (src/contract.ts
 * hfHubCache, the probe's npu_probe.core.hfhub), from this environment's home. */
export function hubCacheOf(env: NodeJS.ProcessEnv, home: string | null): string | null {
  const h = hubHome(env, home);
  return h === null ? null : hfHubCache(env, h);
}

/** Where the HF token lives beside that cache (HF_TOKEN_PATH, else <HF_HOME>/token): the dir to hide. */
export function hfHomeOf(env: NodeJS.ProcessEnv, home: string | null): string | null {
  const h = env.HOME || home || (env[HF_HUB.home_env] || env[HF_HUB.xdg_env] ? '' : null);
  return h === null ? null : hfHome(env, h);
}

/** Parses an admin's list of names (`NAME1,NAME2` or one a line); the names that are not names, separately. */
export function parseEnvNames(raw: string): { names: string[]; bad: string[] } {
  const names: string[] = [];
  const bad: string[] = [];
  for (const n of raw.split(/[\s,]+/).filter(Boolean)) (ENV_NAME.test(n) ? names : bad).push(n);
  return { names: [...new Set(names)], bad };
}
