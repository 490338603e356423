// The legs a matrix job runs, from the JSON the workflow gave it (affected's `matrix` output, or
// any strategy.matrix): vectors multiplied out, `exclude` taken away, `include` added or merged as
// GitHub Actions does. Each leg's `matrix` context is one of these objects, so the summary can
// name the leg that never reported. Pure.
import { InputError } from '../errors.ts';

export type Leg = Record<string, string | number | boolean>;

const SCALAR = (v: unknown): v is string | number | boolean => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

function legOfValue(v: unknown, at: string): Leg {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new InputError(`${at} is not an object of matrix values`);
  const out: Leg = {};
  for (const [k, x] of Object.entries(v)) {
    if (!SCALAR(x)) throw new InputError(`${at}.${k} is not a string, number or boolean (nested matrix values are not supported)`);
    out[k] = x;
  }
  return out;
}

const matches = (leg: Leg, part: Leg) => Object.entries(part).every(([k, v]) => leg[k] === v);

/** Expands a matrix as GitHub Actions does (vectors, exclude, include), or takes a list of legs as given. */
export function expandMatrix(m: unknown, at = 'legs'): Leg[] {
  if (Array.isArray(m)) return m.map((x, i) => legOfValue(x, `${at}[${i}]`));
  if (!m || typeof m !== 'object') throw new InputError(`${at} is not a matrix (an object of vectors, or a list of legs)`);
  const o = m as Record<string, unknown>;
  const vectors = Object.entries(o).filter(([k]) => k !== 'include' && k !== 'exclude');
  let legs: Leg[] = [{}];
  for (const [k, v] of vectors) {
    if (!Array.isArray(v)) throw new InputError(`${at}.${k} is not a list`);
    if (!v.every(SCALAR)) throw new InputError(`${at}.${k} holds a value that is not a string, number or boolean`);
    legs = legs.flatMap((l) => (v as (string | number | boolean)[]).map((x) => ({ ...l, [k]: x })));
  }
  if (!vectors.length || vectors.some(([, v]) => (v as unknown[]).length === 0)) legs = [];
  const exclude = o.exclude === undefined ? [] : Array.isArray(o.exclude) ? o.exclude.map((x, i) => legOfValue(x, `${at}.exclude[${i}]`)) : null;
  if (exclude === null) throw new InputError(`${at}.exclude is not a list`);
  legs = legs.filter((l) => !exclude.some((e) => matches(l, e)));
  const include = o.include === undefined ? [] : Array.isArray(o.include) ? o.include.map((x, i) => legOfValue(x, `${at}.include[${i}]`)) : null;
  if (include === null) throw new InputError(`${at}.include is not a list`);
  const original = new Set(vectors.map(([k]) => k));
  const added: Leg[] = [];
  for (const inc of include) {
    // GitHub's rule: an include entry is added to every combination whose original values it does
    // not overwrite; one that fits none is a combination of its own.
    const targets = legs.filter((l) => Object.entries(inc).every(([k, v]) => !original.has(k) || l[k] === v));
    if (targets.length) for (const t of targets) Object.assign(t, inc);
    else added.push({ ...inc });
  }
  return [...legs, ...added];
}

/** The model dir a leg runs: its `model` (affected's matrix), else `model-dir`. */
export function legModel(leg: Leg): string | null {
  const v = leg.model ?? leg['model-dir'];
  return typeof v === 'string' && v.trim() ? v.trim().replace(/\/+$/, '') : null;
}

/** The runner label a leg ran on, when the matrix names one (`runner`, `runs-on`, `label`). */
export function legRunner(leg: Leg): string | null {
  const v = leg.runner ?? leg['runs-on'] ?? leg.label;
  return typeof v === 'string' && v ? v : null;
}

/** Runner labels from comma- or newline-separated, repeatable values; duplicates dropped. */
export function parseLabels(values: string[]): string[] {
  const out: string[] = [];
  for (const v of values) for (const l of v.split(/[,\n]/).map((s) => s.trim()).filter(Boolean)) {
    if (!/^[A-Za-z0-9._-]{1,100}$/.test(l)) throw new InputError(`runner label ${JSON.stringify(l.slice(0, 60))} is not a label (letters, digits, . _ -)`);
    if (!out.includes(l)) out.push(l);
  }
  return out;
}

/** GitHub Actions runs at most this many jobs from one matrix (strategy.matrix). */
const GITHUB_MATRIX_LIMIT = 256;

/** Why a matrix of `count` legs will not run as given (over GitHub's limit of 256 jobs per matrix), or null. */
export function matrixLimitNote(count: number): string | null {
  if (count <= GITHUB_MATRIX_LIMIT) return null;
  return `${count} legs: GitHub Actions runs at most ${GITHUB_MATRIX_LIMIT} jobs from one matrix and fails the workflow on more; split the models over two matrix jobs, or give fewer --runners`;
}
