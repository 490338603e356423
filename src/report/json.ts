// report.json: JSON has no NaN or Infinity, so they are written as the strings "NaN", "Infinity"
// and "-Infinity" (one encoding for the whole report, shared with the metrics records).
import { fromJsonSafe, toJsonSafe } from '../metrics/json.ts';

export function toJson(value: unknown): string {
  return JSON.stringify(toJsonSafe(value), null, 2) + '\n';
}

/** The inverse of toJson (numbers come back; a text field that is exactly "NaN" would too). */
export function fromJson<T>(text: string): T {
  return fromJsonSafe<T>(JSON.parse(text));
}
