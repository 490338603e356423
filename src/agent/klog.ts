// This boot's kernel log, read as a stream: journalctl -k -b 0 newest first (stopping at the last
// reset point: a driver load, an in-kernel NPU reset, or the last passing functional probe), else
// dmesg. Only the NPU's lines are kept, and at most a stated number of bytes is read: a journal of
// any size is scanned within the bound, never refused for its size.
import type { Machine } from './machine.ts';
import { dev, host, type Check } from './checks.ts';
import { oneLine } from '../errors.ts';
import { blindJournal, formatBytes, isDriverLoad, isNpuLine, isRecovery, lineTime, scanKernelLog, type KernelLogScan } from './parse.ts';
import { PROBE_DECIDES } from './signatures.ts';

/** How much of this boot's kernel log is read at most (the newest part, from journalctl). */
const KERNEL_LOG_MAX_BYTES = 64 * 1024 ** 2;

export const JOURNAL_FIX = 'let the runner user read the kernel log: sudo usermod -aG systemd-journal <runner user> (then restart the runner service), or allow dmesg: sudo sysctl -w kernel.dmesg_restrict=0';

export interface KernelLogText {
  /** journalctl -k -b 0, or dmesg. */
  source: string;
  /** The NPU's lines, oldest first. */
  lines: string[];
  /** Bytes of log read, and the bound. */
  bytes: number;
  bound: number;
  /** The bound was reached before a reset point: older lines were not read. */
  truncated: boolean;
  /** Where reading back stopped: a driver load, an in-kernel reset, the given time (the last passing probe), or null (the start of the boot). */
  stop: 'load' | 'recovery' | 'since' | null;
  newestFirst: boolean;
  /** When it was read: a probe that passed after this vouches for all of it, read or beyond the bound. */
  readAt: string;
}

type KernelLog = KernelLogText | { error: string };

interface ReadOptions {
  /** The NPU's PCI address: IOMMU lines name it instead of the driver. */
  bdf: string | null;
  maxBytes?: number;
  /** Stop reading back at lines older than this (the last passing functional probe). */
  since?: Date | null;
  /** Only the last N hours (the job-completed diagnostics). */
  sinceHours?: number;
}

const HEAD_BYTES = 64 * 1024;
const bare = (why: string) => oneLine(why).replace(/^(dmesg|journalctl):\s*/, '');

async function readOne(m: Machine, cmd: string, args: string[], o: ReadOptions, newestFirst: boolean) {
  const bound = o.maxBytes ?? KERNEL_LOG_MAX_BYTES;
  const kept: string[] = [];
  let head = '';
  let stop: KernelLogText['stop'] = null;
  const since = o.since?.getTime() ?? null;
  const r = await m.exec(cmd, args, {
    maxBytes: bound,
    timeoutMs: 60_000,
    onLine: (line) => {
      if (head.length < HEAD_BYTES) head += line + '\n';
      if (newestFirst && since !== null) {
        const t = lineTime(line);
        if (t && t.getTime() <= since) { stop = 'since'; return false; }
      }
      if (!isNpuLine(line, o.bdf)) return true;
      kept.push(line);
      if (newestFirst && isDriverLoad(line)) { stop = 'load'; return false; }
      if (newestFirst && isRecovery(line)) { stop = 'recovery'; return false; }
      return true;
    },
  });
  const why = r.missing ? 'not found'
    : r.timedOut ? (r.error ?? 'timed out')
      : r.status !== 0 && !r.stopped && !r.truncated ? (r.error ?? (r.stderr.trim().split('\n').pop() || `exit ${r.status}`))
        : blindJournal(head, r.stderr);
  return { why, r, kept, stop: stop as KernelLogText['stop'], bound };
}

/**
 * This boot's kernel log: journalctl -k -b 0 newest first (ISO timestamps), else dmesg (ISO
 * timestamps, else plain), whole or up to the bound. A log the user cannot read (the journal's
 * "not seeing messages" hint, "No journal files were found.", dmesg_restrict) is an error even when
 * the command exits 0.
 */
export async function readKernelLog(m: Machine, o: ReadOptions): Promise<KernelLog> {
  const readAt = m.now().toISOString();
  const since = o.sinceHours ? ['--since', `-${o.sinceHours}h`] : [];
  const j = await readOne(m, 'journalctl', ['-k', '-b', '0', '-r', ...since, '--no-pager', '-o', 'short-iso-precise'], o, true);
  if (!j.why) {
    return { source: `journalctl -k -b 0${o.sinceHours ? ` (last ${o.sinceHours}h)` : ''}`, lines: j.kept.reverse(), bytes: j.r.bytes, bound: j.bound, truncated: j.r.truncated, stop: j.stop, newestFirst: true, readAt };
  }
  let d = await readOne(m, 'dmesg', ['--time-format', 'iso'], o, false);
  if (d.r.status !== 0 && /unrecognized option|invalid option|unknown time format/i.test(d.r.stderr)) d = await readOne(m, 'dmesg', [], o, false);
  if (!d.why) return { source: 'dmesg', lines: d.kept, bytes: d.r.bytes, bound: d.bound, truncated: d.r.truncated, stop: null, newestFirst: false, readAt };
  return { error: `kernel log unreadable: journalctl -k: ${bare(j.why)}; dmesg: ${bare(d.why)}` };
}

/** "12.3 KiB read newest first, bound 64 MiB": what was scanned, stated in every kernel-log check. */
export function readNote(log: KernelLogText): string {
  return `${formatBytes(log.bytes)} read${log.newestFirst ? ' newest first' : ''}, bound ${formatBytes(log.bound)}`;
}

/** The last passing functional probe this boot: timestamped lines up to it are cleared, and so are the first npu_lines untimestamped ones. */
export interface ClearPoint { at: string; npu_lines: number | null; /** The newest NPU line then (dmesg is cleared by position: its clock stops during suspend). */ npu_last?: string | null }

interface KernelLogCheck {
  /** Device signatures: ok, warn (the functional probe decides), fail, or unknown (cannot vouch). */
  check: Check;
  /** Host signatures (a warning with their fix), or null. */
  host: Check | null;
  scan: KernelLogScan | null;
}

export function checkKernelLog(log: KernelLog, o: { bdf: string | null; node: boolean; cleared: ClearPoint | null }): KernelLogCheck {
  if ('error' in log) return { check: dev.unknown('kernel-log', `${log.error}: no wedge can be seen, so none is ruled out`, JOURNAL_FIX), host: null, scan: null };
  const f = o.cleared;
  // journalctl stamps a line when journald receives it (wall time); dmesg's ISO stamps are boot time plus a
  // clock that stops during suspend, so after a suspend they lie early: dmesg is cleared by position only.
  const scan = scanKernelLog(log.lines.join('\n'), {
    bdf: o.bdf, clearedAt: f ? new Date(f.at) : null, clearedLines: f?.npu_lines ?? null, clearedLine: f?.npu_last ?? null, byPosition: !log.newestFirst,
  });
  if (log.stop === 'since' && !scan.reset) scan.reset = { kind: 'functional', line: null };
  const note = readNote(log);
  const resetNote = scan.cleared
    ? `; ${scan.cleared} older signature line(s) cleared by ${scan.reset?.kind === 'recovery' ? 'an in-kernel NPU reset (aie2_hw_reset)' : scan.reset?.kind === 'functional' ? `a passing functional probe (${f!.at})` : 'a driver load'}`
    : '';
  const device = scan.found.filter((w) => w.severity !== 'host');
  const hosted = scan.found.filter((w) => w.severity === 'host');
  const hostCheck = hosted.length
    ? host.warn('kernel-log-host', `${log.source}: ${hosted.map((w) => `${w.what} x${w.count}`).join('; ')}; last: ${hosted[0].last}`, hosted.map((w) => w.fix).join('; '))
    : null;
  if (device.length) {
    const worst = device[0];
    const detail = `${log.source}: ${device.map((w) => `${w.what} x${w.count}`).join('; ')}; last: ${worst.last}${resetNote} (${note})`;
    return { check: worst.severity === 'fail' ? dev.fail('kernel-log', detail, worst.fix) : dev.warn('kernel-log', detail, worst.fix), host: hostCheck, scan };
  }
  if (scan.unexplained) {
    const u = scan.unexplained;
    return {
      check: dev.warn('kernel-log', `${log.source}: ${u.count} amdxdna error line(s) that no signature explains${scan.reset ? ' since the last reset point' : ' this boot'}; last: ${u.last} (${note})`, PROBE_DECIDES),
      host: hostCheck, scan,
    };
  }
  // A probe that passed after the log was read vouches for every line before it, beyond the bound too.
  const covered = !!f && new Date(f.at).getTime() >= new Date(log.readAt).getTime();
  if (log.truncated && !scan.reset && !covered) {
    return {
      check: dev.unknown('kernel-log', `${log.source}: no wedge signatures in the newest ${formatBytes(log.bytes)} of this boot's log (the bound), but no driver load, in-kernel reset or passing functional probe in it either: the older part was not read, so it cannot vouch for the NPU`,
        'npu-block-gate agent doctor --functional tests the NPU itself (the hooks run it on their own); a passing probe becomes the point the log is read back to'),
      host: hostCheck, scan,
    };
  }
  if (o.node && !scan.loaded && log.stop === null) {
    if (f) return { check: dev.ok('kernel-log', `${log.source}: no wedge signatures in ${scan.lines} NPU line(s); no driver-load line this boot, but the functional probe passed at ${f.at} (${note})`), host: hostCheck, scan };
    return {
      check: dev.unknown('kernel-log', `${log.source}: ${scan.lines} NPU line(s) and no amdxdna driver-load line ("[drm] Initialized amdxdna_accel_driver") this boot: the log does not reach back to the driver load, so it cannot vouch for the NPU (${note})`,
        'npu-block-gate agent doctor --functional tests the NPU itself; make the journal keep this boot (Storage=persistent, a larger SystemMaxUse)'),
      host: hostCheck, scan,
    };
  }
  const since = !scan.reset ? 'this boot' : `since the ${scan.reset.kind === 'recovery' ? 'in-kernel reset' : scan.reset.kind === 'functional' ? `functional pass (${f?.at ?? '?'})` : 'driver load'}`;
  return { check: dev.ok('kernel-log', `${log.source}: no wedge signatures in ${scan.lines} NPU line(s) ${since}${resetNote} (${note})`), host: hostCheck, scan };
}

/** A reset point logged after t (a driver reload or an in-kernel reset): a cached failure from before it is stale. */
export function resetAfter(log: KernelLog, t: Date): boolean {
  if ('error' in log) return false;
  return log.lines.some((l) => (isDriverLoad(l) || isRecovery(l)) && (lineTime(l)?.getTime() ?? 0) > t.getTime());
}
