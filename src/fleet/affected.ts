// `affected` (DESIGN.md "Fleet"): which model dirs a change touches. Each model's inputs are what
// its Phase 2 check reads, as the probe's static plan found them: the import closure of block 0 and
// the reference (imports.files), everything the kernel compile reads (the kernel-cache key's
// inputs: Python closure, C++ sources, registry data), the files make diagnosis's defaults come
// from (Makefile, verify_runner.py), the verify prompt sets, and the model's own dir. Inheritance
// (a model running another model's block or builders) shows up as those files; the table names it.
// A changed file no model reads is placed or not: documentation, or a file under
// programming_examples/ that nothing reads, affects nothing; a file the closure cannot place (a
// top-level file, the compiler's own sources) affects every model, and says so. Pure.
import { posix } from 'node:path';

/** Where model dirs live, relative to the air root. */
export const LLMS = 'programming_examples/llms';

/** Why a file is one of a model's inputs. */
export type InputKind = 'import' | 'compile' | 'default' | 'prompt';

export interface ModelFacts {
  /** The model dir's name (llama32_1b). */
  name: string;
  /** Phase 2 cannot run on it (the plan's refusal), one line; null when it can. */
  refusal: string | null;
  /** The plan failed (not a refusal): its inputs are unknown, so any change may affect it. */
  error: string | null;
  /** Air-root-relative files the check reads, and why. */
  inputs: Map<string, InputKind>;
  /** Other model dirs whose code it runs (its block, builders or helpers). */
  inherits: string[];
  /** The block function Step 1 found (e.g. llama32_1b_prefill.run_transformer_block). */
  block: string | null;
}

type ChangeKind =
  /** Read by the models named. */
  | 'input'
  /** Inside a model's dir (its Makefile, scripts): that model. */
  | 'model-dir'
  /** Documentation: nothing. */
  | 'docs'
  /** Under programming_examples/ but no model's check reads it: nothing. */
  | 'unread'
  /** The closure cannot place it (outside programming_examples/, or outside the tree): every model. */
  | 'unplaced';

export interface Change {
  /** As given: relative to the repository's top level. */
  file: string;
  kind: ChangeKind;
  /** Model names it affects (every runnable model for 'unplaced'). */
  models: string[];
}

export interface Row {
  name: string;
  /** The model dir as the workflow passes it to `model-dir` (relative to the repository's top level). */
  model: string;
  /** In the matrix: affected, and Phase 2 can run on it. */
  in: boolean;
  /** The change touches it (also true for a refused model that the change touches). */
  touched: boolean;
  runnable: boolean;
  why: string;
}

export interface Affected {
  /** The matrix list: model dirs (repository-relative) in, in name order. */
  models: string[];
  /** A change no closure can place: every runnable model is in. */
  everything: boolean;
  changes: Change[];
  rows: Row[];
}

const DOC_EXT = /\.(md|markdown|rst|adoc|png|jpe?g|gif|svg|pdf)$/i;
const DOC_NAMES = /^(LICENSE|LICENCE|NOTICE|AUTHORS|CODEOWNERS)(\.[A-Za-z]+)?$|^\.gitignore$/;

/** Documentation: under a docs/ dir, a prose or image file, a licence. (Never .txt: CMakeLists.txt,
 * requirements.txt and the prompt sets are not prose.) */
export function isDoc(file: string): boolean {
  const parts = file.split('/');
  return parts.slice(0, -1).includes('docs') || DOC_EXT.test(file) || DOC_NAMES.test(parts[parts.length - 1]);
}

/** A changed path (repository-relative) as air-root-relative, or null when it is outside the tree. */
export function inTree(file: string, prefix: string): string | null {
  const f = posix.normalize(file.replace(/\\/g, '/')).replace(/^\.\//, '');
  if (f.startsWith('../') || f.startsWith('/')) return null;
  if (!prefix) return f;
  const p = prefix.endsWith('/') ? prefix : `${prefix}/`;
  return f.startsWith(p) ? f.slice(p.length) : null;
}

const KIND_WORD: Record<InputKind, string> = {
  import: 'imports',
  compile: 'compiles from',
  default: "takes make diagnosis's defaults from",
  prompt: 'reads the prompt set',
};

function ownerOf(rel: string): string | null {
  const m = /^programming_examples\/llms\/([^/]+)\//.exec(rel);
  return m ? m[1] : null;
}

/** Why a model is in: the first few changed files it reads, inheritance named. */
function whyIn(m: ModelFacts, models: ReadonlySet<string>, hits: { rel: string; kind: InputKind | 'model-dir' | 'unplaced' | 'plan-failed' | 'all' }[]): string {
  const parts: string[] = [];
  for (const h of hits.slice(0, 3)) {
    if (h.kind === 'unplaced') parts.push(`${h.rel} cannot be placed (every model is checked)`);
    else if (h.kind === 'all') parts.push(h.rel);
    else if (h.kind === 'plan-failed') parts.push(`its plan failed (${m.error}), so any change may affect it; changed: ${h.rel}`);
    else if (h.kind === 'model-dir') parts.push(`${h.rel} is in its model dir`);
    else {
      const owner = ownerOf(h.rel);
      const inherited = owner && owner !== m.name && models.has(owner) ? ` (${m.block?.startsWith(`${owner}_`) ? `runs ${owner}'s block` : `inherits from ${owner}`})` : '';
      parts.push(`${KIND_WORD[h.kind]} ${h.rel}${inherited}`);
    }
  }
  if (hits.length > 3) parts.push(`and ${hits.length - 3} more changed files`);
  return parts.join('; ');
}

/**
 * Which models a change affects. `prefix`: the air root relative to the repository's top level
 * ('' when they are the same), for the changed paths and the model keys. `all`: no change can be
 * computed (a push that created the branch, a scheduled run): why every model is checked.
 */
export function affected(models: ModelFacts[], changedFiles: string[], prefix = '', all: string | null = null): Affected {
  const byName = new Map(models.map((m) => [m.name, m]));
  const names: ReadonlySet<string> = new Set(byName.keys());
  const readers = new Map<string, { name: string; kind: InputKind }[]>();
  for (const m of models) for (const [f, kind] of m.inputs) {
    const list = readers.get(f) ?? [];
    list.push({ name: m.name, kind });
    readers.set(f, list);
  }
  const runnable = models.filter((m) => !m.refusal);
  const hits = new Map<string, { rel: string; kind: InputKind | 'model-dir' | 'unplaced' | 'plan-failed' | 'all' }[]>();
  const hit = (name: string, rel: string, kind: InputKind | 'model-dir' | 'unplaced' | 'plan-failed' | 'all') => {
    const list = hits.get(name) ?? [];
    if (!list.some((h) => h.rel === rel)) list.push({ rel, kind });
    hits.set(name, list);
  };
  const changes: Change[] = [];
  const files = [...new Set(changedFiles.map((f) => f.trim()).filter(Boolean))].sort();
  for (const file of files) {
    const rel = inTree(file, prefix);
    const who = rel !== null ? readers.get(rel) : undefined;
    let change: Change;
    if (rel !== null && who?.length) {
      for (const r of who) hit(r.name, rel, r.kind);
      change = { file, kind: 'input', models: [...new Set(who.map((r) => r.name))].sort() };
    } else if (isDoc(rel ?? file)) {
      change = { file, kind: 'docs', models: [] };
    } else if (rel !== null && ownerOf(rel) && byName.has(ownerOf(rel)!)) {
      hit(ownerOf(rel)!, rel, 'model-dir');
      change = { file, kind: 'model-dir', models: [ownerOf(rel)!] };
    } else if (rel !== null && rel.startsWith('programming_examples/')) {
      change = { file, kind: 'unread', models: [] };
    } else {
      for (const m of runnable) hit(m.name, rel ?? file, 'unplaced');
      change = { file, kind: 'unplaced', models: runnable.map((m) => m.name) };
    }
    // A model whose plan failed has unknown inputs: any change but documentation may touch it.
    if (change.kind !== 'docs') for (const m of models) if (m.error && !change.models.includes(m.name)) {
      hit(m.name, rel ?? file, 'plan-failed');
      change.models = [...change.models, m.name].sort();
    }
    changes.push(change);
  }
  if (all) for (const m of runnable) hit(m.name, all, 'all');
  const everything = !!all || changes.some((c) => c.kind === 'unplaced');
  const keyOf = (name: string) => posix.join(prefix, LLMS, name);
  const rows: Row[] = [...models].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((m) => {
    const h = hits.get(m.name) ?? [];
    const touched = h.length > 0;
    const ok = !m.refusal;
    let why: string;
    if (!ok) why = `${touched ? `touched (${whyIn(m, names, h)}), but ` : ''}Phase 2 cannot run on it: ${m.refusal}`;
    else if (touched) why = whyIn(m, names, h);
    else why = files.length ? 'no changed file is among its inputs' : 'nothing changed';
    return { name: m.name, model: keyOf(m.name), in: ok && touched, touched, runnable: ok, why };
  });
  return { models: rows.filter((r) => r.in).map((r) => r.model), everything, changes, rows };
}

/** The JSON `strategy.matrix` takes: every model x every runner label (`include`), or the models alone. */
export function matrixOf(models: string[], runners: string[]): { include: Record<string, string>[] } | { model: string[] } {
  if (!runners.length) return { model: models };
  return { include: models.flatMap((model) => runners.map((runner) => ({ model, runner }))) };
}
