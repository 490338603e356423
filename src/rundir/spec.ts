// A small typed schema language for JSON read from an untrusted run dir: each Spec both checks a
// value (naming the field on the first violation) and gives the TypeScript type it guarantees,
// so the declaration of probe.json can be compared with the ProbeJson interface at compile time
// and with PROBE_KEYS at test time. Nothing here throws anything but a SpecError.

/** A violation: the dotted field path and what is wrong with it. */
export class SpecError extends Error {
  constructor(readonly field: string, readonly problem: string) {
    super(`${field} ${problem}`);
  }
}

export interface Spec<T> {
  /** Checks `v` (present: not undefined) found at `at` and returns it, normalised. */
  readonly check: (v: unknown, at: string) => T;
  /** What an absent key becomes; undefined: the key is required. */
  readonly absent?: { value: () => T } | { optional: true };
  /** For objects: the declared keys, as PROBE_KEYS writes them (nested object, or null for a leaf). */
  readonly keys?: KeyTree;
  /** Human description for messages. */
  readonly describe: string;
}

export type KeyTree = { readonly [k: string]: KeyTree | null };
export type Infer<S> = S extends Spec<infer T> ? T : never;

/** A short rendering of a bad value for a one-line message. */
export function shown(v: unknown): string {
  let s: string;
  try {
    s = v === undefined ? 'nothing' : JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  s = s.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

const fail = (at: string, want: string, v: unknown): never => {
  throw new SpecError(at, `must be ${want}, got ${shown(v)}`);
};

function make<T>(describe: string, check: (v: unknown, at: string) => T): Spec<T> {
  return { describe, check };
}

export const str = (opts: { line?: boolean; pattern?: RegExp; what?: string; max?: number } = {}): Spec<string> => {
  const what = opts.what ?? (opts.line ? 'a one-line string' : 'a string');
  return make(what, (v, at) => {
    if (typeof v !== 'string') return fail(at, what, v);
    if (opts.max !== undefined && v.length > opts.max) throw new SpecError(at, `is ${v.length} characters long; at most ${opts.max} are accepted`);
    // A document line or table cell must stay one line: no line breaks or other control characters.
    if (opts.line && /[\u0000-\u001f\u007f\u2028\u2029]/.test(v)) throw new SpecError(at, `must be one line without control characters, got ${shown(v)}`);
    if (opts.pattern && !opts.pattern.test(v)) return fail(at, what, v);
    return v;
  });
};

export const oneOf = <const V extends readonly (string | number | boolean)[]>(...values: V): Spec<V[number]> => {
  const what = `one of ${values.map((x) => JSON.stringify(x)).join(', ')}`;
  return make(what, (v, at) => ((values as readonly unknown[]).includes(v) ? (v as V[number]) : fail(at, what, v)));
};

export const int = (min = 0, max = Number.MAX_SAFE_INTEGER): Spec<number> => {
  const what = max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer in [${min}, ${max}]`;
  return make(what, (v, at) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max ? v : fail(at, what, v)));
};

export const num = (min = -Infinity): Spec<number> => {
  const what = min === -Infinity ? 'a finite number' : `a finite number >= ${min}`;
  return make(what, (v, at) => (typeof v === 'number' && Number.isFinite(v) && v >= min ? v : fail(at, what, v)));
};

export const bool = (): Spec<boolean> => make('true or false', (v, at) => (typeof v === 'boolean' ? v : fail(at, 'true or false', v)));

export const literal = <const V extends string | number | boolean>(value: V): Spec<V> =>
  make(JSON.stringify(value), (v, at) => (v === value ? value : fail(at, JSON.stringify(value), v)));

/** Any JSON value (a leaf whose content is data, e.g. a toolchain field). */
export const any = (): Spec<unknown> => make('any value', (v) => v);

/** A JSON scalar: string, number, boolean or null. */
export const scalar = (): Spec<string | number | boolean | null> =>
  make('a string, number, true/false or null', (v, at) =>
    v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)) ? (v as string | number | boolean | null) : fail(at, 'a string, number, true/false or null', v));

export function nullable<T>(s: Spec<T>): Spec<T | null> {
  return { describe: `${s.describe} or null`, keys: s.keys, check: (v, at) => (v === null ? null : s.check(v, at)) };
}

/** The key may be absent; it then reads as `value()`. */
export function withDefault<T>(s: Spec<T>, value: () => NoInfer<T>): Spec<T> {
  return { ...s, absent: { value } };
}

/** The key may be absent (and stays absent). */
export function optional<T>(s: Spec<T>): Spec<T> & { readonly absent: { optional: true } } {
  return { ...s, absent: { optional: true } };
}

export function list<T>(item: Spec<T>, max = 1 << 20): Spec<T[]> {
  const what = `a list of ${item.describe}`;
  return make(what, (v, at) => {
    if (!Array.isArray(v)) return fail(at, what, v);
    if (v.length > max) throw new SpecError(at, `holds ${v.length} items; at most ${max} are accepted`);
    return v.map((x, i) => item.check(x, `${at}[${i}]`));
  });
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An object whose keys are data (config fields, timings): every value checked by `value`. */
export function record<T>(value: Spec<T>): Spec<Record<string, T>> {
  const what = `an object of ${value.describe}`;
  return make(what, (v, at) => {
    if (!isObj(v)) return fail(at, what, v);
    const out: Record<string, T> = {};
    for (const [k, x] of Object.entries(v)) out[k] = value.check(x, `${at}.${k}`);
    return out;
  });
}

type Props = Record<string, Spec<any>>;
type OptionalKeys<P extends Props> = { [K in keyof P]: P[K] extends { absent: { optional: true } } ? K : never }[keyof P];
type Simplify<T> = { [K in keyof T]: T[K] } & {};
type ObjOut<P extends Props, Extra> = Simplify<
  { [K in Exclude<keyof P, OptionalKeys<P>>]: Infer<P[K]> } & { [K in OptionalKeys<P>]?: Infer<P[K]> } & Extra
>;

/**
 * An object with declared keys. `rest`: 'refuse' (an undeclared key is an error: the object is
 * declared whole), or a Spec every undeclared key's value must meet (objects whose other keys
 * are free data, e.g. a model config). `declare`: whether the keys are part of the key tree
 * (a nested object PROBE_KEYS spells out) or the object is a leaf there.
 */
export function obj<P extends Props>(props: P, opts?: { rest?: 'refuse'; declare?: boolean }): Spec<ObjOut<P, {}>>;
export function obj<P extends Props, R>(props: P, opts: { rest: Spec<R>; declare?: boolean }): Spec<ObjOut<P, { [k: string]: R | Infer<P[keyof P]> }>>;
export function obj<P extends Props>(props: P, opts: { rest?: 'refuse' | Spec<unknown>; declare?: boolean } = {}): Spec<any> {
  const rest = opts.rest ?? 'refuse';
  const keys: Record<string, KeyTree | null> = {};
  for (const [k, s] of Object.entries(props)) keys[k] = s.keys ?? null;
  return {
    describe: 'an object',
    keys: opts.declare === false ? undefined : keys,
    check: (v, at) => {
      if (!isObj(v)) return fail(at, 'an object', v);
      const out: Record<string, unknown> = {};
      for (const [k, s] of Object.entries(props)) {
        const field = at ? `${at}.${k}` : k;
        const x = v[k];
        if (x === undefined) {
          if (!s.absent) throw new SpecError(field, `is missing (${s.describe} is required)`);
          if ('value' in s.absent) out[k] = s.absent.value();
          continue;
        }
        out[k] = s.check(x, field);
      }
      for (const [k, x] of Object.entries(v)) {
        if (k in props) continue;
        const field = at ? `${at}.${k}` : k;
        if (rest === 'refuse') throw new SpecError(field, 'is not a field of this schema (written by another version of npu-block-gate?)');
        out[k] = rest.check(x, field);
      }
      return out;
    },
  };
}

/** The key tree a spec declares (nested objects only), as PROBE_KEYS writes it. */
export function keyTree(s: Spec<unknown>): KeyTree | null {
  return s.keys ?? null;
}
