// A short command whose end we wait for, bounded whatever it leaves behind: it runs in a process
// group of its own; its answer is what it printed by the time it exited, plus a short grace for the
// pipes (a background child that keeps stdout open never holds us); at the timeout, or once the
// grace is over, the whole group is killed. Used for the questions asked of a Python (its dirs, the
// doctor's numpy test): a wrapper script's `sleep &` must cost at most the grace, never forever.
import { spawn } from 'node:child_process';

/** How long the pipes may stay open after the command exited. */
export const EXIT_GRACE_MS = 2000;

export interface Bounded {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The command itself did not exit within the timeout (it was killed). */
  timedOut: boolean;
  /** It exited, but something it started kept its output open past the grace (then killed). */
  heldOpen: boolean;
  /** It could not be started (ENOENT, EACCES...). */
  error: NodeJS.ErrnoException | null;
  /** `until` held: the answer was taken before the command exited (then killed). */
  answered: boolean;
}

interface BoundedOptions {
  timeoutMs: number;
  graceMs?: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Cap on what is kept of each stream. */
  maxChars?: number;
  /** The answer is complete once this holds of stdout: taken at once, whether the command exits or not. */
  until?: (stdout: string) => boolean;
  /** Stops it (its group killed) when aborted. */
  signal?: AbortSignal;
}

const killGroup = (pid: number | undefined, sig: NodeJS.Signals) => {
  if (!pid) return;
  try { process.kill(-pid, sig); } catch { /* gone */ }
};

export function runBounded(command: string, args: string[], o: BoundedOptions): Promise<Bounded> {
  const grace = o.graceMs ?? EXIT_GRACE_MS;
  const cap = o.maxChars ?? 1 << 20;
  return new Promise((done) => {
    const r: Bounded = { status: null, signal: null, stdout: '', stderr: '', timedOut: false, heldOpen: false, error: null, answered: false };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: o.cwd, env: o.env, detached: true });
    } catch (e) {
      r.error = e as NodeJS.ErrnoException;
      return done(r);
    }
    let exited = false;
    let finished = false;
    let graceTimer: NodeJS.Timeout | null = null;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      if (graceTimer) clearTimeout(graceTimer);
      // Nothing it started outlives the answer.
      killGroup(child.pid, 'SIGKILL');
      child.stdout?.destroy();
      child.stderr?.destroy();
      done(r);
    };
    o.signal?.addEventListener('abort', () => { killGroup(child.pid, 'SIGKILL'); finish(); }, { once: true });
    const timer = setTimeout(() => {
      r.timedOut = !exited;
      killGroup(child.pid, 'SIGKILL');
      // A process that left the group may still hold the pipes: stop reading them.
      setTimeout(finish, 200).unref();
    }, o.timeoutMs);
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      if (r.stdout.length < cap) r.stdout += d;
      if (!exited && o.until?.(r.stdout)) {
        r.answered = true;
        finish();
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => { if (r.stderr.length < cap) r.stderr += d; });
    child.on('error', (e: NodeJS.ErrnoException) => { r.error ??= e; finish(); });
    child.on('exit', (status, signal) => {
      exited = true;
      r.status = status;
      r.signal = signal;
      graceTimer = setTimeout(() => { r.heldOpen = true; finish(); }, grace);
    });
    child.on('close', finish);
  });
}
