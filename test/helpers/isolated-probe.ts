// Runs one probe the way the Action does (chooseIsolation + runProbe) in a process of its own, so
// the environment this process started with (tokens, as the Action's own) is what a hostile
// probe could find in /proc/<ppid>/environ. Usage: node --import tsx isolated-probe.ts '<json>'
// with {python, mode, user, args, runDir, writable, readable, extraEnv, timeoutSec, untrusted,
// stub}; prints one JSON line. stub 'bwrap-refused': a host where bubblewrap cannot start (as on
// Ubuntu 24.04 for the probe user), the rest of the machine real.
import { chooseIsolation, realHost, type IsolationHost } from '../../src/probe/isolate.ts';
import { runProbe } from '../../src/probe/run.ts';

const a = JSON.parse(process.argv[2]);
const host: IsolationHost = a.stub === 'bwrap-refused' ? { ...realHost, works: (argv) => !argv.some((x) => x.endsWith('/bwrap')) && realHost.works(argv) } : realHost;
try {
  const untrusted = a.untrusted ?? true;
  const iso = chooseIsolation({ mode: a.mode, untrusted, allowUnisolated: a.mode === 'none', user: a.user ?? null }, host, {
    writable: a.writable, readable: a.readable ?? [], env: process.env, network: false, cwd: a.runDir,
  });
  await runProbe([{ command: a.python, source: 'option' }], {
    subcommand: 'block', args: a.args, runDir: a.runDir, timeoutSec: a.timeoutSec ?? 120,
    isolation: iso, writable: a.writable, readable: a.readable, extraEnv: a.extraEnv,
  }, { onLine: () => undefined });
  console.log(JSON.stringify({ ok: true, mode: iso.mode, detail: iso.detail, degraded: iso.degraded }));
} catch (e) {
  console.log(JSON.stringify({ ok: false, error: (e as Error).message, status: (e as { status?: number }).status ?? null }));
}
