// The functional probe: xrt-smi validate, run as the runner's jobs would run NPU work (as the user
// that runs them, under the memlock limit they get), with its own timeout. Its output says whose
// fault a failure is: the host's (memlock, permissions, the XRT install: a warning with the exact
// fix) or the NPU's (a timeout, a failed command: fails the job). When it runs (auto: whenever
// anything since the last good probe is not a plain ok) and when a result stands are pure
// functions here; the run itself goes through the Machine.
import { join } from 'node:path';
import type { Machine } from './machine.ts';
import { dev, host, type Check } from './checks.ts';
import { bootId, readJson, STATE_FILES, writeJson, type FunctionalRecord, type ProbeFindingKind } from './state.ts';
import { classifyValidate, compareVersions, parseXrtValidate, type ProbeFinding } from './parse.ts';
import { fmtLimit, fmtLimits, memlockFix, type Limits } from './memlock.ts';
import { UNEXPLAINED_FIX } from './signatures.ts';
import type { Account } from './runner.ts';
import type { ClearPoint } from './klog.ts';
import { oneLine } from '../errors.ts';

/** A good probe older than this is run again (the admin's interval; --functional-max-age). */
export const FUNCTIONAL_MAX_AGE_S = 600;
/** xrt-smi validate's own limit: a healthy NPU answers the latency test in a second or two. */
export const FUNCTIONAL_TIMEOUT_S = 30;
const XRT_SMI_FALLBACK = '/opt/xilinx/xrt/bin/xrt-smi';

const functionalPath = (stateDir: string) => join(stateDir, STATE_FILES.functional);

export function lastFunctional(stateDir: string): FunctionalRecord | null {
  return readJson<FunctionalRecord>(functionalPath(stateDir));
}

/** The xrt-smi validate test: "latency" (XRT >= 2.18), else "verify" (2.17's NPU test, which also measured latency). */
const defaultFunctionalTest = (xrt: string | null) => (!xrt || compareVersions(xrt, '2.18') >= 0 ? 'latency' : 'verify');

/** The last passing probe of this boot, from the last record. */
export function lastPass(rec: FunctionalRecord | null, boot: string | null): ClearPoint | null {
  if (!rec || !rec.boot_id || rec.boot_id !== boot) return null;
  if (rec.last_ok) return rec.last_ok;
  return rec.status === 'ok' ? { at: rec.at, npu_lines: rec.npu_lines, npu_last: rec.npu_last ?? null } : null;
}

/**
 * Why auto runs the probe now, or null: whenever anything since the last good probe is not a plain
 * ok (a warning or failure signature, a log that cannot vouch), or that probe is older than the
 * interval (or there is none this boot).
 */
export function probeReason(o: { kernel: Check; lastPass: ClearPoint | null; now: Date; intervalS: number; recentPassVouches?: boolean }): string | null {
  if (o.kernel.status === 'warn' || o.kernel.status === 'fail') return `the kernel log shows a ${o.kernel.status === 'fail' ? 'failure' : 'warning'} signature since the last good probe`;
  const age = o.lastPass ? (o.now.getTime() - new Date(o.lastPass.at).getTime()) / 1000 : NaN;
  const fresh = age >= 0 && age <= o.intervalS;
  // A log that cannot vouch: the probe decides, except right after one passed (job-completed after a
  // job that did not fail: job-started's probe of this job stands, so xrt-smi validate runs once per job).
  if (o.kernel.status === 'unknown' && !(o.recentPassVouches && fresh)) return 'the kernel log cannot vouch for the NPU';
  if (!o.lastPass) return 'no functional probe has passed this boot';
  if (!fresh) return `the last good probe is ${Math.round(age)}s old (interval ${o.intervalS}s)`;
  return null;
}

/**
 * A result that did not pass stands (is reused instead of probing the NPU again) while it is of
 * this boot, younger than the interval, and neither a driver reload nor an in-kernel reset came after it.
 */
export function reusable(rec: FunctionalRecord | null, o: { boot: string | null; now: Date; intervalS: number; resetSince: boolean }): boolean {
  if (!rec || rec.status === 'ok' || !rec.boot_id || rec.boot_id !== o.boot || o.resetSince) return false;
  const age = (o.now.getTime() - new Date(rec.at).getTime()) / 1000;
  return age >= 0 && age < o.intervalS;
}

interface ProbeContext {
  stateDir: string;
  test: string | null;
  xrt: string | null;
  timeoutS: number;
  /** The memlock limits the runner's jobs get, and where they come from. */
  limits: Limits | null;
  limitsFrom: string;
  /** Apply them with prlimit (they are not this process's own: the admin runs the doctor from a shell). */
  applyLimits: boolean;
  /** Run as this user (when this process is root: setpriv), else as this process's user. */
  runAs: Account | null;
  bdf: string | null;
  npuLines: number | null;
  /** The newest NPU kernel-log line now (a pass clears dmesg lines up to it, by position). */
  npuLast?: string | null;
  service: string | null;
  /** The kernel log's fix for what it shows (one hang, one fix), else null. */
  kernelFix: string | null;
  /** The NPU's kernel-log lines since a time: what the driver said while the probe ran. */
  linesSince: (t: Date) => Promise<string[]>;
  lastPass: ClearPoint | null;
}

export interface ProbeResult { checks: Check[]; record: FunctionalRecord }

const limitArg = (v: number | 'unlimited') => (v === 'unlimited' ? 'unlimited' : String(v));
const tail = (text: string, n: number) => text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean).slice(-n);

function hostFix(f: ProbeFinding, o: { limits: Limits | null; service: string | null; user: string; xrt: string | null; test: string }): string {
  if (f.kind === 'memlock') return memlockFix(o.limits, o.service);
  if (f.kind === 'permissions') {
    if (f.denied === 'set-state') return `XRT ${o.xrt ?? 'before 2.19.194'}'s xrt-smi validate first sets the NPU's power mode, which only root may: upgrade XRT to 2.19.194 or later, whose validate keeps the current mode without root (Xilinx/XRT PR #8791)`;
    if (f.denied === 'node') return `${o.user} cannot open /dev/accel/accel0: add it to the node's group (sudo usermod -aG render ${o.user}), then restart the runner service`;
    return `run xrt-smi validate --run ${o.test} as ${o.user} to see what it may not open; /dev/accel/accel0 must be readable and writable by ${o.user}'s groups`;
  }
  const line = f.line ?? '';
  const xrt = `XRT${o.xrt ? ` ${o.xrt}` : ''}`;
  if (/No archive/i.test(line)) return `the XRT install lacks xrt-smi's validate archive (amdxdna/bins/xrt_smi_*.a, found through XRT's platform path): reinstall the amdxdna plugin package that matches ${xrt} (xrt_plugin-amdxdna), which ships it`;
  if (/not available/i.test(line)) return `the XRT install lacks the file the test needs (${line}): reinstall the amdxdna plugin package that matches ${xrt} (xrt_plugin-amdxdna)`;
  if (/Invalid test name/i.test(line)) return `this XRT has no "${o.test}" test: pass --functional-test with one that xrt-smi validate --help lists`;
  if (/xrt-smi (crashed|aborted|could not run)/.test(line)) return `${line}: the XRT install is broken, not the NPU (reinstall XRT and the amdxdna plugin package that matches ${xrt}; run xrt-smi examine by hand to see it)`;
  if (/No devices? (were )?found|Device not found|Specified device .*not found/i.test(line)) return `XRT sees no NPU although sysfs has one: its amdxdna plugin (libxrt_driver_xdna.so, the xrt_plugin-amdxdna package) is missing or does not match ${xrt}: reinstall it`;
  return `run xrt-smi validate --run ${o.test} --verbose to see why (XRT prints nothing for a skipped test): usually the test's xclbin or archive is missing from the XRT install; reinstall the amdxdna plugin package that matches XRT`;
}

const HOST_WHAT: Record<string, string> = { memlock: 'the memlock limit', permissions: 'a permission', 'xrt-install': 'the XRT install' };

/**
 * Runs xrt-smi validate once as the job would, classifies it, and when memlock alone stopped it and
 * the hard limit allows more (an mlir-air job raises it itself: prlimit -lunlimited), runs it again
 * raised so the NPU itself is tested too. Records the result (the cache and the last pass).
 */
export async function runFunctional(m: Machine, c: ProbeContext): Promise<ProbeResult> {
  const test = c.test ?? defaultFunctionalTest(c.xrt);
  const cmd = `xrt-smi validate --run ${test}`;
  const switchTo = c.runAs && m.uid === 0 && c.runAs.uid !== 0 ? c.runAs : null;
  let user = m.user();
  const now = m.now();
  const save = (r: Omit<FunctionalRecord, 'at' | 'test' | 'boot_id' | 'npu_lines' | 'user' | 'memlock'>): ProbeResult => {
    const rec: FunctionalRecord = { at: now.toISOString(), test, boot_id: bootId(m), npu_lines: c.npuLines, user, memlock: c.limits, ...r };
    try { writeJson(functionalPath(c.stateDir), rec); } catch { /* a read-only state dir: no cache */ }
    return { checks: checksFromRecord(rec), record: rec };
  };
  const base = { power_mode: null as string | null, host: null as FunctionalRecord['host'], last_ok: c.lastPass };
  if (!m.has('xrt-smi', [XRT_SMI_FALLBACK])) {
    return save({ ...base, status: 'unknown', finding: 'xrt-install', detail: 'xrt-smi not found: the functional probe needs XRT', fix: 'source /opt/xilinx/xrt/setup.sh (or install XRT) so xrt-smi is on PATH' });
  }
  const exe = m.which('xrt-smi', [XRT_SMI_FALLBACK]) ?? 'xrt-smi';
  const notes: string[] = [];
  let asUser: string[] = [];
  if (switchTo) {
    if (m.has('setpriv', ['/usr/bin/setpriv', '/bin/setpriv'])) {
      asUser = ['setpriv', '--reuid', String(switchTo.uid), '--regid', String(switchTo.gid), '--init-groups', '--'];
      user = switchTo.name;
    } else notes.push(`setpriv not found, so not as ${switchTo.name}`);
  }
  const run = async (limits: Limits | null) => {
    const wrap = limits ? ['prlimit', `--memlock=${limitArg(limits.soft)}:${limitArg(limits.hard)}`, '--'] : [];
    const argv = [...wrap, ...asUser, exe, 'validate', '--run', test];
    let r = await m.exec(argv[0], argv.slice(1), { timeoutMs: c.timeoutS * 1000 });
    if (limits && (r.missing || /prlimit: failed to set/i.test(r.stderr))) {
      notes.push(r.missing ? 'prlimit not found: the limits were not applied' : `prlimit could not apply the limits (${oneLine(r.stderr.trim().split('\n')[0])})`);
      const plain = [...asUser, exe, 'validate', '--run', test];
      r = await m.exec(plain[0], plain.slice(1), { timeoutMs: c.timeoutS * 1000 });
    }
    return r;
  };
  const limitsNote = c.limits ? `memlock ${fmtLimits(c.limits)} (${c.limitsFrom})` : 'memlock unknown';
  const who = () => `as ${user}, ${limitsNote}${notes.length ? `; ${notes.join('; ')}` : ''}`;
  const r = await run(c.applyLimits ? c.limits : null);
  const out = `${r.stdout}\n${r.stderr}`;
  const power = parseXrtValidate(out).powerMode;
  const evidence = async () => {
    const lines = await c.linesSince(now);
    return lines.length ? `; the driver logged meanwhile: ${lines.slice(-3).map((l) => l.trim()).join(' | ')}` : '';
  };
  if (r.timedOut) {
    const said = tail(out, 2);
    return save({
      ...base, status: 'fail', finding: 'timeout', power_mode: power,
      detail: `${cmd} did not finish in ${c.timeoutS}s and was killed (${who()}): the NPU does not answer${said.length ? `; its last output: ${said.join(' | ')}` : ''}${await evidence()}`,
      fix: c.kernelFix ?? UNEXPLAINED_FIX,
    });
  }
  const f = classifyValidate(out, r.status);
  if (f.kind === 'pass') return save({ ...base, ...passed(cmd, out, who(), power), last_ok: { at: now.toISOString(), npu_lines: c.npuLines, npu_last: c.npuLast ?? null } });
  if (f.kind === 'device') {
    return save({ ...base, status: 'fail', finding: 'device', power_mode: power, detail: `${cmd} failed (${who()}): ${oneLine(f.line ?? `exit ${r.status}`)}${await evidence()}`, fix: c.kernelFix ?? UNEXPLAINED_FIX });
  }
  const hostFinding = {
    kind: f.kind as ProbeFindingKind,
    detail: `${cmd} failed on ${HOST_WHAT[f.kind]} (${who()}), not on the NPU: ${oneLine(f.line ?? `exit ${r.status}`)}`,
    fix: hostFix(f, { limits: c.limits, service: c.service, user, xrt: c.xrt, test }),
  };
  // Memlock alone, and the hard limit allows more: test the NPU itself at the limit a job can raise to.
  const raised = c.limits && f.kind === 'memlock' && c.limits.soft !== 'unlimited' && (c.limits.hard === 'unlimited' || c.limits.hard > c.limits.soft) ? { soft: c.limits.hard, hard: c.limits.hard } : null;
  if (raised) {
    const r2 = await run(raised);
    const out2 = `${r2.stdout}\n${r2.stderr}`;
    const again = `then with memlock raised to ${fmtLimit(raised.hard)}, as a job that raises it`;
    if (r2.timedOut) {
      return save({ ...base, host: hostFinding, status: 'fail', finding: 'timeout', detail: `${cmd} did not finish in ${c.timeoutS}s ${again}: the NPU does not answer${await evidence()}`, fix: c.kernelFix ?? UNEXPLAINED_FIX });
    }
    const f2 = classifyValidate(out2, r2.status);
    const power2 = parseXrtValidate(out2).powerMode;
    if (f2.kind === 'pass') {
      const p = passed(cmd, out2, `${who()}; ${again}`, power2);
      return save({ ...base, host: hostFinding, ...p, last_ok: { at: now.toISOString(), npu_lines: c.npuLines, npu_last: c.npuLast ?? null } });
    }
    if (f2.kind === 'device') {
      return save({ ...base, host: hostFinding, status: 'fail', finding: 'device', power_mode: power2, detail: `${cmd} failed ${again}: ${oneLine(f2.line ?? `exit ${r2.status}`)}${await evidence()}`, fix: c.kernelFix ?? UNEXPLAINED_FIX });
    }
  }
  return save({ ...base, host: hostFinding, status: 'unknown', finding: hostFinding.kind, power_mode: power, detail: `${hostFinding.detail}; the NPU itself was not tested`, fix: hostFinding.fix });
}

function passed(cmd: string, out: string, who: string, power: string | null) {
  const details = parseXrtValidate(out).tests.flatMap((t) => t.details).join('; ');
  return { status: 'ok' as const, finding: 'pass' as const, power_mode: power, fix: null, detail: `${cmd} passed${details ? `: ${details}` : ''}${power ? ` (power mode ${power})` : ''} [${who}]` };
}

/**
 * The checks a probe result gives: "functional" (device scope: ok or fail; a host problem that kept
 * the NPU from being tested is host scope, a warning), and "functional-host" for a host problem
 * found on the way to a device verdict.
 */
export function checksFromRecord(rec: FunctionalRecord, cached: { intervalS: number } | null = null): Check[] {
  const note = cached ? ` (cached: ran at ${rec.at}, re-runs after ${cached.intervalS}s)` : '';
  const detail = rec.detail + note;
  const out: Check[] = [];
  if (rec.status === 'ok') out.push(dev.ok('functional', detail));
  else if (rec.status === 'fail') out.push(dev.fail('functional', detail, rec.fix ?? UNEXPLAINED_FIX));
  else out.push(host.warn('functional', detail, rec.fix ?? 'see the detail'));
  if (rec.host && rec.status !== 'unknown') out.push(host.warn('functional-host', rec.host.detail + note, rec.host.fix));
  return out;
}

/** The same record with the fix the kernel log gives for what it shows (one hang, one fix). */
export function withFix(res: ProbeResult, stateDir: string, fix: string): ProbeResult {
  const rec = { ...res.record, fix };
  try { writeJson(functionalPath(stateDir), rec); } catch { /* no cache */ }
  return { record: rec, checks: checksFromRecord(rec) };
}
