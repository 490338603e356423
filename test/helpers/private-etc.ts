// A private /etc for the tests that add system users, groups or sudoers rules (issue 25,
// deliverable 8): the host's /etc is never written. privateEtc() re-runs the test process in its own
// mount namespace (`unshare -m`, every mount made private) in which /etc is a tmpfs holding a copy of
// the host's /etc; useradd, groupadd, sudo and the sudoers rules a test writes see and change only
// the copy. The namespace, the tmpfs and every change in it end with the last process in it: a test
// killed with SIGKILL leaves nothing behind on the host (the re-run process gets SIGKILL when the
// process that started it dies, through setpriv --pdeathsig).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** A file only the private copy holds: its presence says this process sees the copy. */
export const PRIVATE_ETC_MARK = '/etc/.npu-block-gate-test-private-etc';
const REEXEC = 'NPU_BLOCK_GATE_TEST_PRIVATE_ETC';

/**
 * Runs inside the new mount namespace, before the command ("$@"): every mount private (nothing
 * propagates back to the host), the host's /etc kept open as fd 3, a tmpfs over /etc, the host's
 * files copied into it through fd 3 (owners, modes and links kept), then the mark.
 */
const SCRIPT = [
  'set -e',
  'mount --make-rprivate /',
  'exec 3</etc',
  'mount -t tmpfs -o mode=0755 npu-block-gate-test-etc /etc',
  'cp -a /proc/self/fd/3/. /etc/',
  'exec 3<&-',
  `: > ${PRIVATE_ETC_MARK}`,
  'exec "$@"',
].join('\n');

/** The command line that runs `cmd` in a private /etc (as root). */
export function privateEtcArgv(cmd: string[]): [string, string[]] {
  return ['unshare', ['-m', '--', 'setpriv', '--pdeathsig', 'KILL', '--', 'sh', '-c', SCRIPT, 'sh', ...cmd]];
}

/** This process sees the private copy of /etc. */
export const inPrivateEtc = () => existsSync(PRIVATE_ETC_MARK);

/** Why a private /etc cannot be made here (not root, no unshare, mounts refused), or null. */
export function cannotPrivateEtc(): string | null {
  if (inPrivateEtc()) return null;
  if (process.getuid?.() !== 0) return 'not root: no private mount namespace over a copy of /etc';
  const [cmd, args] = privateEtcArgv(['test', '-e', PRIVATE_ETC_MARK]);
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error) return `${cmd}: ${r.error.message} (util-linux)`;
  if (r.status !== 0) return `no private mount namespace over a copy of /etc (unshare -m, mount): ${(r.stderr || `exit ${r.status}`).trim().split('\n').pop()}`;
  return null;
}

/**
 * Makes this test process one that sees a private copy of /etc: inside one already, returns null;
 * else, as root where a mount namespace can be made, runs this same process (same node, flags and
 * arguments) again inside one and exits with its status, never returning; else returns why not (the
 * caller skips what needs users and never touches the host's /etc). Call it at the top of a test
 * file, before any test runs (uvu runs the queued tests after every file has loaded).
 */
export function privateEtc(): string | null {
  if (inPrivateEtc()) return null;
  if (process.env[REEXEC]) return `re-run in a private /etc, but ${PRIVATE_ETC_MARK} is missing: refusing to touch the host's /etc`;
  const why = cannotPrivateEtc();
  if (why) return why;
  const [cmd, args] = privateEtcArgv([process.execPath, ...process.execArgv, ...process.argv.slice(1)]);
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, [REEXEC]: '1' } });
  if (r.signal) process.kill(process.pid, r.signal);
  process.exit(r.status ?? 1);
}
