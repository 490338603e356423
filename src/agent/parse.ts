// Pure parsers: what xrt-smi, the kernel log, /proc/self/limits and /proc/locks say, as data.
// The formats are the real ones (see test/fixtures/agent/, each line with its source):
// - xrt-smi examine: XRT's ReportHost / fill_xrt_versions / Table2D, which changed between
//   2.17 ("AMDXDNA : 2.17.0, hash", "Firmware Version", "Devices present", "[bdf]  :  name"),
//   2.19-2.21 ("amdxdna : 2.19.0_date, hash", "NPU Firmware Version", "|[bdf]  |name  |") and
//   current XRT ("amdxdna Version : ...", a four-column device table).
// - xrt-smi validate: SubCmdValidate ("Test 1 [bdf] : latency", "Test Status : [PASSED]",
//   "Validation completed|failed").
// - the kernel log: which lines are the NPU's, and the signatures after the last reset point (the
//   signature table itself, with its sources, is src/agent/signatures.ts).
import { isDriverLoad, isErrorLine, isRecovery, matchSignature, SIGNATURE_IDS, type SignatureHit, type SignatureId } from './signatures.ts';

export interface XrtInfo {
  xrt: string | null;
  /** The amdxdna version xrt-smi reports: out-of-tree "2.19.0_20250330"; for the in-tree driver, XRT >= 2.21 prints the kernel release. */
  amdxdna: string | null;
  amdxdnaHash: string | null;
  /** The driver is the in-tree one (XRT printed the kernel release for it, or 2.17's "0.1, unknown"). */
  inTree: boolean;
  firmware: string | null;
  devices: { bdf: string; name: string }[];
  /** Which output layout this is: 2.17, 2.19 (to 2.21) or current (>= 2.22). */
  layout: '2.17' | '2.19' | 'current' | null;
  /** An mmap that failed with EAGAIN (err=-11): the memlock limit, not the device. */
  memlockError: string | null;
}

const na = (v: string | undefined | null) => (!v || /^(n\/a|unknown)$/i.test(v.trim()) ? null : v.trim());

/** The line that says an mmap hit the memlock limit (EAGAIN), if any: XRT's "mmap(...) failed (err=-11): Resource temporarily unavailable". */
export function memlockError(text: string): string | null {
  for (const line of text.split(/\r?\n/)) {
    if (/mmap\(.*\)\s*failed\s*\(err=-?11\)|Resource temporarily unavailable|RLIMIT_MEMLOCK/i.test(line)) return line.trim();
  }
  return null;
}

/** `xrt-smi examine` of XRT 2.17, 2.19 and current: versions and the device table. */
export function parseXrtSmi(text: string): XrtInfo {
  const info: XrtInfo = { xrt: null, amdxdna: null, amdxdnaHash: null, inTree: false, firmware: null, devices: [], layout: null, memlockError: memlockError(text) };
  let section = '';
  let release: string | null = null;
  let driverKey: string | null = null;
  let tableColumns = 0;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+$/, '');
    // Section headers have no colon; "WARNING: xclmgmt version is unknown..." inside XRT is not one.
    if (/^\S/.test(line) && !/^[-|[]/.test(line) && !line.includes(':')) { section = line.trim(); continue; }
    if (/^(Device\(s\) Present|Devices present)$/i.test(section)) {
      const piped = /^\|\s*\[([0-9a-fA-F:.]+)\]\s*\|([^|]*)\|/.exec(line);
      const colon = /^\s*\[([0-9a-fA-F:.]+)\]\s+:\s+(\S.*)$/.exec(line);
      if (/^\|BDF/.test(line)) tableColumns = line.split('|').length - 2;
      if (piped) info.devices.push({ bdf: piped[1], name: piped[2].trim() });
      else if (colon) info.devices.push({ bdf: colon[1], name: colon[2].trim() });
      continue;
    }
    const kv = /^\s+([^:]+?)\s*:\s?(.*)$/.exec(line);
    if (!kv) continue;
    const key = kv[1].trim();
    const value = kv[2].trim();
    if (section === 'System Configuration' && key === 'Release') release = value;
    if (section !== 'XRT') continue;
    if (key === 'Version') info.xrt = na(value);
    else if (/^amdxdna( version)?$/i.test(key)) {
      driverKey = key;
      const [v, h] = value.split(/,\s*/);
      info.amdxdna = na(v);
      info.amdxdnaHash = na(h);
    } else if (/^(NPU )?Firmware Version$/i.test(key)) info.firmware = na(value);
  }
  if (driverKey) {
    info.layout = driverKey === 'AMDXDNA' ? '2.17' : /version$/i.test(driverKey) && (info.amdxdnaHash || tableColumns > 2) ? 'current' : '2.19';
    if (tableColumns > 2) info.layout = 'current';
    // XRT prints the kernel release for an in-tree driver; 2.17 printed "0.1, unknown" for it.
    info.inTree = (!!release && info.amdxdna === release) || (info.amdxdna === '0.1' && !info.amdxdnaHash);
  }
  return info;
}

interface XrtValidate {
  bdf: string | null;
  platform: string | null;
  /** "Power Mode" (2.19+) or "Performance Mode" (2.17). */
  powerMode: string | null;
  tests: { name: string; status: string; details: string[]; errors: string[] }[];
  /** From the closing line: "Validation completed" (passed, or "but with warnings") or "Validation failed". */
  result: 'passed' | 'warning' | 'failed' | null;
}

/** `xrt-smi validate` text output (XRT 2.17 to current). */
export function parseXrtValidate(text: string): XrtValidate {
  const v: XrtValidate = { bdf: null, platform: null, powerMode: null, tests: [], result: null };
  let cur: XrtValidate['tests'][number] | null = null;
  let tag = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+$/, '');
    let m: RegExpExecArray | null;
    if ((m = /^Validate Device\s*:\s*\[([^\]]+)\]/.exec(line))) { v.bdf = m[1]; continue; }
    if ((m = /^Test \d+ \[[^\]]*\]\s*:\s*(\S+)/.exec(line))) { cur = { name: m[1], status: '', details: [], errors: [] }; v.tests.push(cur); tag = ''; continue; }
    if ((m = /^Validation (completed|failed)(, but with warnings)?/.exec(line))) { v.result = m[1] === 'failed' ? 'failed' : m[2] ? 'warning' : 'passed'; continue; }
    if ((m = /^\s{4}(\S[^:]*?)?\s*:\s(.*)$/.exec(line)) || (m = /^\s{28}()(\S.*)$/.exec(line))) {
      const continued = !(m[1] ?? '').trim();
      const key = (m[1] ?? '').trim() || tag;
      const value = m[2].trim();
      if (key) tag = key;
      // A wrapped error message continues the one before it.
      if (cur && continued && key === 'Error(s)' && cur.errors.length) { cur.errors[cur.errors.length - 1] += ` ${value}`; continue; }
      if (!cur) {
        if (key === 'Platform') v.platform = value;
        else if (key === 'Power Mode' || key === 'Performance Mode') v.powerMode = value;
        continue;
      }
      if (key === 'Test Status') cur.status = value.replace(/^\[|\]$/g, '');
      else if (key === 'Details') cur.details.push(value);
      else if (key === 'Error(s)') cur.errors.push(value);
    }
  }
  return v;
}

/**
 * What a failed (or passed) `xrt-smi validate` says about who is at fault. The host's problems
 * come first, each from the text XRT and its amdxdna shim print:
 * - memlock: the shim's mmap of the device heap under RLIMIT_MEMLOCK, "mmap(...) failed (err=-11):
 *   Resource temporarily unavailable" (amd/xdna-driver issue #903, XRT 2.21; Xilinx/XRT PR #9132);
 * - permissions: err=13 / -13, Permission denied: the shim's "<ioctl> IOCTL failed (err=%d)"
 *   (src/shim/host/platform_host.cpp:76 with shim_debug.h's " (err=%d)"), e.g. XRT 2.19.0's
 *   DRM_IOCTL_AMDXDNA_SET_STATE as non-root (amd/xdna-driver issue #307), or "Open /dev/accel/accel0
 *   failed (err=-13)" (src/shim/platform.cpp:67);
 * - xrt-install: the validate archive or xclbin is missing (XRT TestNPULatency.cpp "No archive found,
 *   skipping test", TestValidateUtilities.cpp "%s not available"), an unknown test ("Invalid test
 *   name: '%s'", SubCmdValidate.cpp), no test ran at all, or XRT sees no device ("No devices found");
 * - device: anything else that failed (an ioctl's EIO, a context that cannot be created, a hang).
 */
type ProbeKind = 'pass' | 'memlock' | 'permissions' | 'xrt-install' | 'device';

export interface ProbeFinding {
  kind: ProbeKind;
  /** The line that says so (the evidence), or null. */
  line: string | null;
  /** permissions: what was denied. */
  denied?: 'set-state' | 'node' | null;
}

const firstLine = (text: string, re: RegExp) => text.split(/\r?\n/).map((l) => l.trim()).find((l) => re.test(l)) ?? null;

export function classifyValidate(text: string, exitStatus: number | null): ProbeFinding {
  const v = parseXrtValidate(text);
  const failed = v.tests.filter((t) => /^FAILED/.test(t.status));
  const passed = v.tests.filter((t) => /^PASSED/.test(t.status));
  if (exitStatus === 0 && passed.length && !failed.length && v.result !== 'failed') return { kind: 'pass', line: null };
  const mem = memlockError(text);
  if (mem) return { kind: 'memlock', line: mem };
  const perm = firstLine(text, /\(err=-?13\)|Permission denied/i);
  if (perm) return { kind: 'permissions', line: perm, denied: /SET_STATE/.test(perm) ? 'set-state' : /Open \S+ failed|\/dev\/accel/.test(perm) ? 'node' : null };
  const install = firstLine(text, /No archive (found|provided)|\bnot available\b|Invalid test name|No devices? (were )?found|Device not found|Specified device .*not found|cannot open shared object file|command not found/i);
  if (install) return { kind: 'xrt-install', line: install };
  // xrt-smi itself did not run or crashed (127: not found or a missing library under a wrapper; 126: not
  // executable; 139 / 134: SIGSEGV / SIGABRT in the tool): the XRT install, never evidence against the NPU.
  if (exitStatus === 126 || exitStatus === 127 || exitStatus === 134 || exitStatus === 139) {
    const what = exitStatus === 139 ? 'crashed (exit 139, SIGSEGV)' : exitStatus === 134 ? 'aborted (exit 134, SIGABRT)' : `could not run (exit ${exitStatus})`;
    return { kind: 'xrt-install', line: `xrt-smi ${what}${text.trim() ? `: ${text.trim().split(/\r?\n/).pop()}` : ''}` };
  }
  const errors = v.tests.flatMap((t) => t.errors);
  if (exitStatus === 0 || (!failed.length && !errors.length && v.result !== 'failed' && /^Validation completed/m.test(text))) {
    return { kind: 'xrt-install', line: v.tests.length ? `every test was skipped (${v.tests.map((t) => `${t.name}: ${t.status || '?'}`).join(', ')})` : 'xrt-smi validate ran no test' };
  }
  return { kind: 'device', line: errors[0] ?? firstLine(text, /ERROR|error|failed/) };
}

/** `xrt-smi examine -r platform`: the NPU's power mode ("Power Mode : Turbo"), or null. */
export function parsePowerMode(text: string): string | null {
  const m = /^\s*Power Mode\s*:\s*(\S[^\n]*?)\s*$/m.exec(text);
  return m ? m[1] : null;
}

/** "0000:c5:00.1" -> "c5:00.1", the form the AMD IOMMU printed (before the PCI segment was added) when it cannot name the device's driver. */
const shortBdf = (bdf: string) => bdf.replace(/^[0-9a-f]{4}:/i, '').toLowerCase();

/** A kernel log line about the NPU: the driver's, its mailbox's, or (given the BDF) the IOMMU's about its address. */
export function isNpuLine(line: string, bdf?: string | null): boolean {
  if (/amdxdna|aie2_|xdna_mailbox/i.test(line)) return true;
  if (!bdf) return false;
  const l = line.toLowerCase();
  return l.includes(bdf.toLowerCase()) || l.includes(`device=${shortBdf(bdf)}`);
}

/** The signature of one kernel log line, or null (not the NPU's, or harmless). */
export function classifyKernelLine(line: string, bdf?: string | null): SignatureHit | null {
  if (!isNpuLine(line, bdf)) return null;
  return matchSignature(line, bdf ?? null);
}

export { isDriverLoad, isRecovery };

/** The time at the start of a line: journalctl -o short-iso(-precise) or dmesg --time-format iso. */
export function lineTime(line: string): Date | null {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:?\d{2})?\s/.exec(line);
  if (!m) return null;
  const frac = m[2] ? `.${m[2].slice(0, 3).padEnd(3, '0')}` : '';
  const tz = !m[3] ? 'Z' : m[3] === 'Z' ? 'Z' : m[3].includes(':') ? m[3] : `${m[3].slice(0, 3)}:${m[3].slice(3)}`;
  const d = new Date(`${m[1]}${frac}${tz}`);
  return Number.isNaN(d.getTime()) ? null : d;
}

export interface KernelLogScan {
  /** NPU lines seen. */
  lines: number;
  /** A driver-load line is in the text (this boot's log reaches back to the load). */
  loaded: boolean;
  /** The last point that cleared older signatures: a driver load, an in-kernel reset, or a passing functional probe. */
  reset: { kind: 'load' | 'recovery' | 'functional'; line: string | null } | null;
  /** Signatures after the last reset point, worst first, with a count and the last line of each. */
  found: (SignatureHit & { count: number; last: string })[];
  /** Signature lines before the last reset point (cleared). */
  cleared: number;
  /** NPU error lines after the last reset point that match no signature (the functional probe decides), and the last. */
  unexplained: { count: number; last: string } | null;
}

interface ScanOptions {
  /** The NPU's PCI address: IOMMU lines name it instead of the driver. */
  bdf?: string | null;
  /** A functional probe passed at this time: timestamped lines before it are cleared. */
  clearedAt?: Date | null;
  /** ... and this many NPU lines had been logged then (for lines without a timestamp). */
  clearedLines?: number | null;
  /** ... and this was the newest NPU line then: lines after it are new, whatever their stamp says. */
  clearedLine?: string | null;
  /** The stamps cannot be trusted to order lines against the probe (dmesg: its clock stops during suspend): clear by position only. */
  byPosition?: boolean;
}

export function scanKernelLog(text: string, o: ScanOptions = {}): KernelLogScan {
  const lines = text.split(/\r?\n/).filter((l) => isNpuLine(l, o.bdf));
  let start = 0;
  let reset: KernelLogScan['reset'] = null;
  // By position: the last occurrence of the line the passing probe saw last (not found: the buffer
  // wrapped or the probe predates this record, so nothing is cleared by it).
  const seen = o.byPosition && o.clearedLine ? lines.map((l) => l.trim()).lastIndexOf(o.clearedLine.trim()) : -1;
  lines.forEach((l, i) => {
    if (isDriverLoad(l)) { start = i + 1; reset = { kind: 'load', line: l.trim() }; }
    else if (isRecovery(l)) { start = i + 1; reset = { kind: 'recovery', line: l.trim() }; }
    else if (o.byPosition) {
      const before = seen >= 0 ? i <= seen : !o.clearedLine && !lineTime(l) && o.clearedLines != null && i < o.clearedLines;
      if (before && i + 1 > start) { start = i + 1; reset = { kind: 'functional', line: null }; }
    } else if (o.clearedAt || o.clearedLines) {
      const t = lineTime(l);
      const before = t && o.clearedAt ? t.getTime() <= o.clearedAt.getTime() : !t && o.clearedLines != null && i < o.clearedLines;
      if (before && i + 1 > start) { start = i + 1; reset = { kind: 'functional', line: null }; }
    }
  });
  const byId = new Map<SignatureId, SignatureHit & { count: number; last: string }>();
  let cleared = 0;
  let unexplained: KernelLogScan['unexplained'] = null;
  lines.forEach((l, i) => {
    const w = classifyKernelLine(l, o.bdf);
    if (!w) {
      if (i >= start && isErrorLine(l)) unexplained = { count: (unexplained?.count ?? 0) + 1, last: l.trim() };
      return;
    }
    if (i < start) { cleared++; return; }
    const prev = byId.get(w.id);
    byId.set(w.id, { ...w, count: (prev?.count ?? 0) + 1, last: l.trim() });
  });
  const found = [...byId.values()].sort((a, b) => SIGNATURE_IDS.indexOf(a.id) - SIGNATURE_IDS.indexOf(b.id));
  return { lines: lines.length, loaded: lines.some(isDriverLoad), reset, found, cleared, unexplained };
}

/**
 * Why journalctl or dmesg did not show the kernel log, even with exit 0, or null when it did.
 * journalctl run by a user outside systemd-journal/adm prints "No journal files were found." or the
 * "Hint: You are currently not seeing messages from other users and the system." notice on stderr
 * and "-- No entries --"; dmesg under kernel.dmesg_restrict=1 says "read kernel buffer failed:
 * Operation not permitted". A kernel log with no message at all this boot is blind too: the
 * kernel always logs at boot.
 */
export function blindJournal(stdout: string, stderr: string): string | null {
  const m = /No journal files were (found|opened)[^\n]*|You are currently not seeing messages[^\n]*|read kernel buffer failed[^\n]*|Operation not permitted[^\n]*/i.exec(stderr)
    ?? /^(No journal files were (found|opened)[^\n]*|Hint: You are currently not seeing messages[^\n]*)$/im.exec(stdout);
  if (m) return m[0].trim();
  const real = stdout.split(/\r?\n/).filter((l) => l.trim() && !/^-- .* --$/.test(l.trim()) && !/^Hint:|^\s{6}(Users in groups|Pass -q)/.test(l));
  if (real.length) return null;
  // "some journal files were not opened due to insufficient permissions" alone is blind only when nothing came through.
  const partial = /[^\n]*journal files were not opened due to insufficient permissions[^\n]*/i.exec(stderr);
  if (partial) return partial[0].trim();
  return stdout.includes('-- No entries --') ? 'no kernel messages (-- No entries --)' : 'no kernel messages at all';
}

/** Soft "Max locked memory" from /proc/<pid>/limits: a byte count, 'unlimited', or null when absent. */
export function parseMemlock(limits: string): number | 'unlimited' | null {
  return parseMemlockLimits(limits)?.soft ?? null;
}

export type Limit = number | 'unlimited';

/** Soft and hard "Max locked memory" from /proc/<pid>/limits. */
export function parseMemlockLimits(limits: string): { soft: Limit; hard: Limit } | null {
  const m = /^Max locked memory\s+(\S+)\s+(\S+)/m.exec(limits);
  if (!m) return null;
  const v = (s: string): Limit => (s === 'unlimited' ? 'unlimited' : Number(s));
  return { soft: v(m[1]), hard: v(m[2]) };
}

interface ProcLock {
  kind: string;
  mode: string;
  access: string;
  pid: number;
  /** The lock file's device (major, minor: hex in /proc/locks) and inode: an inode number is unique on one device only. */
  major: number;
  minor: number;
  inode: number;
  /** A waiter ("->"), not a holder. */
  blocked: boolean;
}

/**
 * /proc/locks: "1: FLOCK  ADVISORY  WRITE 4242 00:2d:1234567 0 EOF"; waiters have "->" after the index.
 * The file is MAJ:MIN:INODE, major and minor in hex (fs/locks.c lock_get_status: "%02x:%02x:%lu").
 */
export function parseProcLocks(text: string): ProcLock[] {
  const out: ProcLock[] = [];
  for (const line of text.split(/\r?\n/)) {
    const parts = line.trim().split(/\s+/);
    const blocked = parts[1] === '->';
    const p = blocked ? [parts[0], ...parts.slice(2)] : parts;
    if (p.length < 6) continue;
    const pid = Number(p[4]);
    const f = p[5].split(':');
    if (f.length !== 3 || !/^[0-9a-f]+$/i.test(f[0]) || !/^[0-9a-f]+$/i.test(f[1])) continue;
    const inode = Number(f[2]);
    if (!Number.isInteger(pid) || !Number.isInteger(inode)) continue;
    out.push({ kind: p[1], mode: p[2], access: p[3], pid, major: parseInt(f[0], 16), minor: parseInt(f[1], 16), inode, blocked });
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

/** Compares dotted versions ("2.19.0" vs "2.17"): negative, 0 or positive. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[^0-9]+/).filter(Boolean).map(Number);
  const pb = b.split(/[^0-9]+/).filter(Boolean).map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d) return d;
  }
  return 0;
}
