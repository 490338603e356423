// The GitHub Actions runner this agent serves, from its install dir: the .runner file config.sh
// writes (JSON with "agentId", "agentName", "gitHubUrl"), the .service file svc.sh install writes,
// the user it runs as (the owner of .runner), and whether a job is running now.
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InputError, oneLine } from '../errors.ts';
import type { Machine } from './machine.ts';

export interface RunnerSettings { agentId: number; agentName: string | null; gitHubUrl: string | null; ephemeral: boolean; file: string }

/** The runner's .runner file (JSON, UTF-8 with a BOM as .NET writes it). */
export function readRunnerSettings(runnerDir: string): RunnerSettings {
  const file = join(resolve(runnerDir), '.runner');
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch {
    throw new InputError(`no .runner file: is --runner-dir the runner's install dir (where config.sh wrote it)?`, file);
  }
  let j: Record<string, unknown>;
  try { j = JSON.parse(text.replace(/^\uFEFF/, '')); } catch (e) {
    throw new InputError(`not JSON (${oneLine(e)})`, file);
  }
  const id = Number(j.agentId);
  if (!Number.isInteger(id) || id <= 0) throw new InputError('no "agentId" (the runner id): configure the runner with config.sh first', file);
  return { agentId: id, agentName: typeof j.agentName === 'string' ? j.agentName : null, gitHubUrl: typeof j.gitHubUrl === 'string' ? j.gitHubUrl : null, ephemeral: j.ephemeral === true, file };
}

/** The runner's systemd service, from the .service file svc.sh install writes; null when it runs otherwise. */
export function serviceName(runnerDir: string | null): string | null {
  if (!runnerDir) return null;
  try { return readFileSync(join(resolve(runnerDir), '.service'), 'utf8').trim() || null; } catch { return null; }
}

/**
 * The runner's name, for the metrics' runner label and the fleet view: .runner's agentName, else
 * RUNNER_NAME (the runner sets it for every job step, hooks included), else the host name.
 */
export function runnerName(m: Machine, runnerDir: string | null): string {
  if (runnerDir) {
    try { const s = readRunnerSettings(runnerDir); if (s.agentName) return s.agentName; } catch { /* fall through */ }
  }
  return m.env.RUNNER_NAME || m.hostname;
}

/** A job is running: the runner starts bin/Runner.Worker for each job. */
export function jobRunning(m: Machine): boolean {
  for (const pid of (m.list('/proc') ?? []).filter((n) => /^\d+$/.test(n))) {
    const c = m.readBytes(`/proc/${pid}/cmdline`)?.toString('utf8') ?? '';
    if (/Runner\.Worker/.test(c)) return true;
  }
  return false;
}

export interface Account { name: string; uid: number; gid: number }

/** A user by uid from /etc/passwd under the root prefix, or null. */
function accountByUid(m: Machine, uid: number): Account | null {
  for (const l of (m.read('/etc/passwd') ?? '').split('\n')) {
    const f = l.split(':');
    if (f.length >= 4 && Number(f[2]) === uid && f[2].trim() !== '') return { name: f[0], uid, gid: Number(f[3]) };
  }
  return null;
}

/** The user the runner's jobs run as: the owner of its .runner file (config.sh runs as that user). */
export function runnerAccount(m: Machine, runnerDir: string | null): Account | null {
  if (!runnerDir) return null;
  let uid: number;
  try { uid = statSync(join(resolve(runnerDir), '.runner')).uid; } catch { return null; }
  return accountByUid(m, uid) ?? { name: String(uid), uid, gid: uid };
}

/** Where sudo finds systemctl (sudoers rules name the full path). */
export const systemctlPath = (m: Machine) => (m.exists('/usr/bin/systemctl') || !m.exists('/bin/systemctl') ? '/usr/bin/systemctl' : '/bin/systemctl');

/**
 * A user name as useradd takes it (shadow-utils' default NAME_REGEX, as Debian and Ubuntu ship it):
 * a lower-case letter or _ first, then lower-case letters, digits, _ and -, an optional trailing $
 * (a Samba machine account), at most 32 characters. Nothing in it means anything to sudoers.
 */
const USER_NAME = /^[a-z_][a-z0-9_-]*[$]?$/;
const USER_NAME_MAX = 32;
export const isUserName = (s: string) => s.length <= USER_NAME_MAX && USER_NAME.test(s);

/**
 * A systemd service name as svc.sh writes it into .service: ASCII letters, digits, @ . _ - and
 * systemd's own \xNN escapes (systemd-escape, which older svc.sh versions ran, writes a - in a repo or
 * runner name as \x2d), ending in .service, at most 255 characters (systemd's limit), and not starting
 * with - (systemctl would read it as an option, -H a host to act on). A \ is accepted only as the
 * start of such an escape: the rule escapes it (\\), so sudoers reads a plain backslash and nothing
 * of the name can end the rule, start another (a line break), widen it (* ? [ ]), list another
 * command (,) or another argument (a blank).
 */
const UNIT_NAME = /^[A-Za-z0-9@._](?:[A-Za-z0-9@._-]|\\x[0-9a-fA-F]{2})*\.service$/;
export const isUnitName = (s: string) => s.length <= 255 && UNIT_NAME.test(s);

/** A command argument in a sudoers rule: sudoers(5) wants , : = and \\ escaped (a unit name may hold systemd's \\x2d escapes). */
const sudoersArg = (a: string) => a.replace(/[\\,:=]/g, (c) => `\\${c}`);

/**
 * The one sudoers rule drain and undrain need: stop and start this runner's service, nothing else
 * (no SETENV). Built only from a checked user name, a checked unit name and a fixed systemctl path;
 * anything else is refused (InputError), never escaped into a rule.
 */
export function drainSudoersRule(user: string, service: string, systemctl = '/usr/bin/systemctl'): string {
  if (!isUserName(user)) throw new InputError(`${JSON.stringify(user)}: not a user name (lower case letters, digits, _ and -, at most 32): no sudoers rule is made for it`);
  if (!isUnitName(service)) throw new InputError(`${JSON.stringify(service)}: not a systemd service name (letters, digits, @ . _ - and \\xNN escapes, ending in .service): no sudoers rule is made for it`);
  if (systemctl !== '/usr/bin/systemctl' && systemctl !== '/bin/systemctl') throw new InputError(`${JSON.stringify(systemctl)}: not /usr/bin/systemctl or /bin/systemctl`);
  return `${user} ALL=(root) NOPASSWD: ${systemctl} stop ${sudoersArg(service)}, ${systemctl} start ${sudoersArg(service)}`;
}
