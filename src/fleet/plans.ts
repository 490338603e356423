// The inputs of every model dir of a tree, from the probe's static plans (`probe plans`: no model
// code is imported, so this is safe on a pull request's tree), digested for affected.ts.
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, posix, resolve } from 'node:path';
import { InfraError, InputError, oneLine } from '../errors.ts';
import type { Log } from '../log.ts';
import { runProbe } from '../probe/run.ts';
import { pythonCandidates } from '../probe/python.ts';
import { airRootOf } from '../check/model-dir.ts';
import { inTree, LLMS, type InputKind, type ModelFacts } from './affected.ts';
import { forkPoint, treeAt, type Checkout } from './changes.ts';

/** The air root of a tree given as its root or any path inside it. */
export function airRootAt(tree: string): string {
  const dir = resolve(tree);
  if (!existsSync(dir)) throw new InputError('no such directory', tree);
  if (existsSync(join(dir, LLMS))) return dir;
  const up = airRootOf(dir);
  if (up) return up;
  throw new InputError(`not an mlir-air tree (no ${LLMS} here or above)`, tree);
}

/** Model dirs of a tree: the dirs of programming_examples/llms with a verify adapter (what Phase 2 runs through). */
export function modelNames(airRoot: string): string[] {
  const llms = join(airRoot, LLMS);
  let names: string[];
  try {
    names = readdirSync(llms);
  } catch {
    throw new InputError(`no ${LLMS} here; point --tree at an mlir-air checkout`, airRoot);
  }
  return names.filter((n) => !n.startsWith('.') && existsSync(join(llms, n, 'verify_adapter.py')) && statSync(join(llms, n)).isDirectory()).sort();
}

/** The verify prompt sets (any run may take its prompt from them: --prompt-style, --positions). */
export function promptSets(airRoot: string): string[] {
  const dir = join(airRoot, LLMS, 'verify/prompts');
  try {
    return readdirSync(dir).filter((f) => f.endsWith('.txt')).sort().map((f) => posix.join(LLMS, 'verify/prompts', f));
  } catch {
    return [];
  }
}

type Json = Record<string, any>;
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** "programming_examples/llms/llama32_1b/Makefile:28 PROMPT" or "verify/prompts/instruct.txt:3" -> an air-root-relative file. */
function sourceFile(src: unknown, airRoot: string): string | null {
  if (typeof src !== 'string') return null;
  const path = /^([^\s:]+):\d+/.exec(src)?.[1];
  if (!path || path.startsWith('/') || path.split('/').includes('..')) return null;
  for (const rel of [path, posix.join(LLMS, path)]) if (existsSync(join(airRoot, rel))) return rel;
  return null;
}

/** One model's facts from its plan JSON (a refused plan still lists what it read). */
export function factsOf(name: string, plan: Json, airRoot: string, prompts: string[]): ModelFacts {
  const inputs = new Map<string, InputKind>();
  const add = (f: string | null, kind: InputKind) => { if (f && !inputs.has(f)) inputs.set(f, kind); };
  for (const f of strings(plan.imports?.files)) add(f, 'import');
  for (const f of strings(plan.kernel_cache?.inputs?.files)) add(f, 'compile');
  for (const obj of [plan.defaults, plan.kernel_cache]) {
    if (!obj || typeof obj !== 'object') continue;
    for (const [k, v] of Object.entries(obj)) if (k.endsWith('_source')) add(sourceFile(v, airRoot), 'default');
  }
  for (const p of prompts) add(p, 'prompt');
  const inherits = new Set<string>(strings(plan.kernel_cache?.inputs?.models));
  const blockFile = plan.step1?.block?.file;
  for (const f of [...inputs.keys(), ...(typeof blockFile === 'string' ? [blockFile] : [])]) {
    const owner = /^programming_examples\/llms\/([^/]+)\//.exec(f)?.[1];
    if (owner && owner !== name && owner !== 'shared' && owner !== 'verify') inherits.add(owner);
  }
  const refusal = plan.refusal && typeof plan.refusal === 'object' ? oneLine(plan.refusal.reason ?? 'refused') : null;
  const fn = plan.step1?.block?.function;
  // An import that resolves to neither a tree file nor a package (a deleted or renamed file): the
  // run would fail, and what it reads instead is unknown, so the plan counts as failed.
  const gone = (Array.isArray(plan.imports?.unresolved) ? plan.imports.unresolved : []).filter((u: Json) => u && typeof u.module === 'string');
  const error = gone.length ? `${gone.map((u: Json) => `${u.file}:${u.line} imports ${u.module}`).slice(0, 3).join(', ')}${gone.length > 3 ? ` and ${gone.length - 3} more` : ''}, which ${gone.length === 1 ? 'is' : 'are'} neither a tree file nor an installed package` : null;
  return { name, refusal, error, inputs, inherits: [...inherits].sort(), block: typeof fn === 'string' ? fn : null };
}

/** A model whose plan could not be made: its inputs are unknown. */
function failedFacts(name: string, error: string): ModelFacts {
  return { name, refusal: null, error, inputs: new Map(), inherits: [], block: null };
}

export interface PlanOptions {
  python: string | null;
  /** Bound on the whole tree's plans. */
  timeoutSec: number | null;
  log: Log;
}

/**
 * Every model's facts, from one `probe plans` process (one interpreter start for the tree). A
 * model whose plan could not be made is kept with its error (its inputs are unknown).
 */
export async function planFacts(airRoot: string, names: string[], o: PlanOptions): Promise<ModelFacts[]> {
  if (!names.length) return [];
  const prompts = promptSets(airRoot);
  const dirs = names.map((n) => join(airRoot, LLMS, n));
  const r = await runProbe(pythonCandidates(o.python), {
    subcommand: 'plans', args: [...dirs.flatMap((d) => ['--model-dir', d]), '--air-root', airRoot],
    runDir: null, timeoutSec: o.timeoutSec,
  }, { onLine: () => undefined });
  let plans: { model_dir?: unknown; exit?: unknown; plan?: Json; error?: unknown }[];
  try {
    plans = JSON.parse(r.stdout).plans;
    if (!Array.isArray(plans) || plans.length !== names.length) throw new Error('not one entry per model dir');
  } catch (e) {
    throw new InfraError(`probe plans did not answer with one plan per model dir (${oneLine(e)})`);
  }
  return names.map((name, i) => {
    const p = plans[i];
    if (p.plan && typeof p.plan === 'object') return factsOf(name, p.plan, airRoot, prompts);
    const error = typeof p.error === 'string' ? p.error : 'no plan';
    o.log.warn(`plan of ${name} failed (${error}); it is kept in the matrix on any change`);
    return failedFacts(name, error);
  });
}

/**
 * What a change removes: each head model also reads the files it read at the base that the head no
 * longer has (`gone`: deleted, or renamed away), so a pull request that deletes llama32_1b/ or
 * renames a shared module is checked on the models that used them.
 */
function withRemoved(head: ModelFacts[], base: ModelFacts[], gone: ReadonlySet<string>): ModelFacts[] {
  const before = new Map(base.map((m) => [m.name, m]));
  return head.map((m) => {
    const b = before.get(m.name);
    if (!b) return m;
    const extra = [...b.inputs].filter(([f]) => gone.has(f) && !m.inputs.has(f));
    return extra.length ? { ...m, inputs: new Map([...m.inputs, ...extra]) } : m;
  });
}

/** Changed files (repository-relative) that the tree at `airRoot` no longer has, air-root-relative. */
function goneFiles(airRoot: string, changed: string[], prefix: string): Set<string> {
  const out = new Set<string>();
  for (const f of changed) {
    const rel = inTree(f, prefix);
    if (rel !== null && !existsSync(join(airRoot, rel))) out.add(rel);
  }
  return out;
}

/**
 * The head's facts with what the change removes (withRemoved): when a changed file is gone from the
 * head, the tree at the fork point of base and head is planned too (from `git archive`, into a
 * temporary directory removed afterwards).
 */
export async function planWithBase(c: { top: Checkout; airRoot: string; prefix: string; base: string; head: string; changed: string[]; facts: ModelFacts[] }, o: PlanOptions): Promise<ModelFacts[]> {
  const gone = goneFiles(c.airRoot, c.changed, c.prefix);
  if (!gone.size) return c.facts;
  const rev = forkPoint(c.top, c.base, c.head);
  const dir = treeAt(c.top, rev, c.prefix);
  try {
    const baseRoot = join(dir, c.prefix);
    if (!existsSync(join(baseRoot, LLMS))) return c.facts;
    const names = modelNames(baseRoot);
    o.log.step(`affected: ${gone.size} changed file${gone.size === 1 ? ' is' : 's are'} gone from the head; planning the ${names.length} model dirs at ${rev.slice(0, 12)} for what read them`);
    return withRemoved(c.facts, await planFacts(baseRoot, names, o), gone);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
