// JSON has no NaN or Infinity; Metrics carries them on purpose (a NaN cosine is a finding).
// On the way out they become the strings numpy's repr uses; on the way back, numbers again.
import type { Metrics } from './types.ts';

type NonFiniteText = 'NaN' | 'Infinity' | '-Infinity';

export type JsonSafe<T> = T extends number
  ? number | NonFiniteText
  : T extends readonly (infer U)[]
    ? JsonSafe<U>[]
    : T extends object
      ? { [K in keyof T]: JsonSafe<T[K]> }
      : T;

export type MetricsJson = JsonSafe<Metrics>;

function encode(v: unknown): unknown {
  if (typeof v === 'number') return Number.isFinite(v) ? v : Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity';
  if (Array.isArray(v)) return v.map(encode);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, encode(x)]));
  return v;
}

function decode(v: unknown): unknown {
  if (v === 'NaN') return NaN;
  if (v === 'Infinity') return Infinity;
  if (v === '-Infinity') return -Infinity;
  if (Array.isArray(v)) return v.map(decode);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, decode(x)]));
  return v;
}

export function metricsToJson(m: Metrics): MetricsJson {
  return encode(m) as MetricsJson;
}

/** Inverse of metricsToJson. Metrics has no string field that could collide (engine is 'js' | 'native'). */
export function metricsFromJson(j: MetricsJson): Metrics {
  return decode(j) as Metrics;
}

/** Generic forms for other records that embed numbers. */
export const toJsonSafe = <T>(v: T): JsonSafe<T> => encode(v) as JsonSafe<T>;
export const fromJsonSafe = <T>(v: JsonSafe<T>): T => decode(v) as T;
