// The facts the Python probe and this side share, read from the one file both load:
// scripts/probe/contract.json (exit codes, schema names and versions, run-dir file names, the
// probe.json keys, the bisect contract, the NPU lock, the probe's event protocol, the reference
// cache's layout, the HF hub's rules). test/contract.test.ts and test/python/test_contract.py
// hold each side's behaviour to it.
import { join } from 'node:path';
import contract from '../scripts/probe/contract.json' with { type: 'json' };

export const CONTRACT = contract;
export const EXIT_CODES = contract.exit;
export const PROBE = contract.probe;
export const RUN_FILES_CONTRACT = contract.run_files;
export const BISECT_CONTRACT = contract.bisect;
export const NPU_LOCK = contract.npu_lock;
export const EVENT_PREFIX = contract.control.event_prefix;
export const PROBE_KEYS = contract.probe.keys;
export const REF_CACHE = contract.reference_cache;
export const HF_HUB = contract.hf_hub;
/** The error budget's FP32 side in a reference cache entry: boundary_<prefix><name>.npy. */
export const FP32_PREFIX = contract.boundaries.fp32_cache_prefix;

type Env = Record<string, string | undefined>;

/** HF_HOME as huggingface_hub finds it: $HF_HOME, else ($XDG_CACHE_HOME or <home>/.cache)/huggingface. */
export function hfHome(env: Env, home: string): string {
  return env[HF_HUB.home_env] || join(env[HF_HUB.xdg_env] || join(home, HF_HUB.user_cache), HF_HUB.xdg_subdir);
}

/** The HF hub cache: $HF_HUB_CACHE (or its older name), else <HF_HOME>/hub. */
export function hfHubCache(env: Env, home: string): string {
  for (const v of HF_HUB.cache_env) if (env[v]) return env[v]!;
  return join(hfHome(env, home), HF_HUB.home_hub);
}

/** True when the HF libraries will not call the hub (any offline switch set true). */
export function hfOffline(env: Env): boolean {
  return HF_HUB.offline_env.some((v) => HF_HUB.true_values.includes((env[v] ?? '').trim().toUpperCase()));
}

/** The variables that turn the hub off, as the probe sets them without --online. */
export function hfOfflineEnv(): Record<string, string> {
  return Object.fromEntries([...HF_HUB.offline_env, ...HF_HUB.offline_also].map((v) => [v, '1']));
}
