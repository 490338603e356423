// `agent cache stats|gc`: the kernel store (src/cache/kernel.ts) seen from the runner.
import { KernelStore, DEFAULT_MAX_BYTES } from '../cache/kernel.ts';
import { formatBytes } from './parse.ts';

interface CacheEntry { key: string; model: string; bytes: number; created_at: string; last_used: string }
interface CacheStats { root: string; entries: CacheEntry[]; total_bytes: number; max_bytes: number }

export function cacheStats(root: string, maxBytes = DEFAULT_MAX_BYTES): CacheStats {
  const entries = new KernelStore(root, maxBytes).list()
    .sort((a, b) => b.used - a.used)
    .map((e) => ({ key: e.key, model: e.model, bytes: e.bytes, created_at: e.created_at, last_used: new Date(e.used).toISOString() }));
  return { root, entries, total_bytes: entries.reduce((n, e) => n + e.bytes, 0), max_bytes: maxBytes };
}

interface GcResult { root: string; max_bytes: number; dropped: CacheEntry[]; kept: number; total_bytes: number }

/** Trims the store to maxBytes, least recently used first. */
export function cacheGc(root: string, maxBytes: number): GcResult {
  const before = new Map(cacheStats(root, maxBytes).entries.map((e) => [e.key, e]));
  const dropped = new KernelStore(root, maxBytes).gc().map((k) => before.get(k)!).filter(Boolean);
  const after = cacheStats(root, maxBytes);
  return { root, max_bytes: maxBytes, dropped, kept: after.entries.length, total_bytes: after.total_bytes };
}

const short = (t: string) => t.replace(/\.\d+Z$/, 'Z').replace('T', ' ');

function table(rows: CacheEntry[]): string[] {
  const head = ['key', 'model', 'size', 'created', 'last used'];
  const cells = rows.map((e) => [e.key.slice(0, 16), e.model, formatBytes(e.bytes), short(e.created_at), short(e.last_used)]);
  const w = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  return [head, ...cells].map((c) => '  ' + c.map((x, i) => x.padEnd(w[i])).join('  ').trimEnd());
}

export function renderStats(s: CacheStats): string {
  const lines = [`kernel cache ${s.root}: ${s.entries.length} entr${s.entries.length === 1 ? 'y' : 'ies'}, ${formatBytes(s.total_bytes)} of ${formatBytes(s.max_bytes)}`];
  if (s.entries.length) lines.push(...table(s.entries));
  return lines.join('\n') + '\n';
}

export function renderGc(g: GcResult): string {
  const lines = [`kernel cache ${g.root}: dropped ${g.dropped.length} (${formatBytes(g.dropped.reduce((n, e) => n + e.bytes, 0))}), kept ${g.kept} (${formatBytes(g.total_bytes)} of ${formatBytes(g.max_bytes)})`];
  if (g.dropped.length) lines.push(...table(g.dropped));
  return lines.join('\n') + '\n';
}
