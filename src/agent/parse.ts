// Pure parsers: what xrt-smi, the kernel log, /proc/self/limits and /proc/locks say, as data.

export interface XrtInfo {
  xrt: string | null;
  amdxdna: string | null;
  firmware: string | null;
  devices: { bdf: string; name: string }[];
}

/** `xrt-smi examine`: the XRT section's versions and the "Device(s) Present" table. */
export function parseXrtSmi(text: string): XrtInfo {
  const info: XrtInfo = { xrt: null, amdxdna: null, firmware: null, devices: [] };
  let section = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+$/, '');
    if (/^\S/.test(line)) section = line.trim();
    const kv = /^\s+([^:|]+?)\s*:\s*(.+)$/.exec(line);
    if (kv) {
      const [, k, v] = kv;
      const key = k.toLowerCase();
      if (section === 'XRT' && key === 'version') info.xrt = v.trim();
      else if (key === 'amdxdna version') info.amdxdna = v.split(',')[0].trim();
      else if (/firmware version$/.test(key) && !info.firmware) info.firmware = v.trim();
    }
    const dev = /^\|\s*\[([0-9a-fA-F:.]+)\]\s*\|\s*([^|]*?)\s*\|/.exec(line);
    if (dev) info.devices.push({ bdf: dev[1], name: dev[2] });
  }
  return info;
}

export type WedgeId = 'command-timeout' | 'bad-message-id' | 'channel-bad-state' | 'ctx-connect' | 'smu-power';

export interface Wedge {
  id: WedgeId;
  severity: 'warn' | 'fail';
  what: string;
}

// Ordered worst first: a line takes the first signature it matches.
const SIGNATURES: (Wedge & { re: RegExp })[] = [
  { id: 'smu-power', severity: 'fail', what: 'SMU could not power the NPU (aie2_smu_start: Access power failed)', re: /Access power failed/i },
  { id: 'ctx-connect', severity: 'fail', what: 'hardware context could not connect (aie2_ctx_connect failed)', re: /aie2_ctx_connect\b.*(fail|err|ret\s*-?\d)|\*ERROR\*\s*aie2_ctx_connect/i },
  { id: 'channel-bad-state', severity: 'fail', what: 'mailbox channel in bad state', re: /Channel in bad state/i },
  { id: 'bad-message-id', severity: 'fail', what: 'mailbox got a bad message ID', re: /Bad message ID/i },
  { id: 'command-timeout', severity: 'warn', what: 'NPU command timed out', re: /\b(time[d ]?\s?out|timeout)\b/i },
];

/** The wedge signature of one kernel log line, or null (not amdxdna, or harmless). */
export function classifyKernelLine(line: string): Wedge | null {
  if (!/amdxdna|aie2_/i.test(line)) return null;
  for (const s of SIGNATURES) if (s.re.test(line)) return { id: s.id, severity: s.severity, what: s.what };
  return null;
}

/** A driver (re)load line: signatures before it were cleared by the reload. */
export function isDriverLoad(line: string): boolean {
  return /Initialized amdxdna/i.test(line);
}

export interface KernelLogScan {
  /** amdxdna lines seen. */
  lines: number;
  /** Signatures after the last driver load, worst first, with a count and the last line of each. */
  found: (Wedge & { count: number; last: string })[];
  /** Signatures before the last driver load (cleared). */
  cleared: number;
  reloaded: boolean;
}

export function scanKernelLog(text: string): KernelLogScan {
  const lines = text.split(/\r?\n/).filter((l) => /amdxdna|aie2_/i.test(l));
  let start = 0;
  lines.forEach((l, i) => { if (isDriverLoad(l)) start = i + 1; });
  const byId = new Map<WedgeId, Wedge & { count: number; last: string }>();
  let cleared = 0;
  lines.forEach((l, i) => {
    const w = classifyKernelLine(l);
    if (!w) return;
    if (i < start) { cleared++; return; }
    const prev = byId.get(w.id);
    byId.set(w.id, { ...w, count: (prev?.count ?? 0) + 1, last: l.trim() });
  });
  const order = SIGNATURES.map((s) => s.id);
  const found = [...byId.values()].sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id));
  return { lines: lines.length, found, cleared, reloaded: start > 0 };
}

/** Soft "Max locked memory" from /proc/<pid>/limits: a byte count, 'unlimited', or null when absent. */
export function parseMemlock(limits: string): number | 'unlimited' | null {
  const m = /^Max locked memory\s+(\S+)\s+(\S+)/m.exec(limits);
  if (!m) return null;
  return m[1] === 'unlimited' ? 'unlimited' : Number(m[1]);
}

export interface ProcLock {
  kind: string;
  mode: string;
  access: string;
  pid: number;
  inode: number;
  /** A waiter ("->"), not a holder. */
  blocked: boolean;
}

/** /proc/locks: "1: FLOCK  ADVISORY  WRITE 4242 00:2d:1234567 0 EOF"; waiters have "->" after the index. */
export function parseProcLocks(text: string): ProcLock[] {
  const out: ProcLock[] = [];
  for (const line of text.split(/\r?\n/)) {
    const parts = line.trim().split(/\s+/);
    const blocked = parts[1] === '->';
    const p = blocked ? [parts[0], ...parts.slice(2)] : parts;
    if (p.length < 6) continue;
    const pid = Number(p[4]);
    const inode = Number(p[5].split(':').pop());
    if (!Number.isInteger(pid) || !Number.isInteger(inode)) continue;
    out.push({ kind: p[1], mode: p[2], access: p[3], pid, inode, blocked });
  }
  return out;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}

/** "20G", "500M", "1.5GiB", "1048576" -> bytes; null when not a size. */
export function parseSize(s: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$/i.exec(s);
  if (!m) return null;
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[m[2].toLowerCase() as '' | 'k' | 'm' | 'g' | 't'];
  const n = Number(m[1]) * mult;
  return Number.isFinite(n) ? Math.floor(n) : null;
}
