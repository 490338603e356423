// report.json: JSON has no NaN or Infinity, so they are written as strings and read back as numbers.

export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => {
    if (typeof v === 'number' && !Number.isFinite(v)) return Number.isNaN(v) ? 'NaN' : v > 0 ? 'Infinity' : '-Infinity';
    return v;
  }, 2) + '\n';
}

const SPECIAL: Record<string, number> = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity };

export function fromJson<T>(text: string): T {
  return JSON.parse(text, (_k, v) => (typeof v === 'string' && v in SPECIAL ? SPECIAL[v] : v)) as T;
}
