// Runs one probe the way the Action does (chooseIsolation + runProbe) in a process of its own, so
// the environment this process started with (tokens, as the Action's own) is what a hostile
// probe could find in /proc/<ppid>/environ. Usage: node --import tsx isolated-probe.ts '<json>'
// with {python, mode, args, runDir, writable, extraEnv, timeoutSec}; prints one JSON line.
import { chooseIsolation } from '../../src/probe/isolate.ts';
import { runProbe } from '../../src/probe/run.ts';

const a = JSON.parse(process.argv[2]);
try {
  const iso = chooseIsolation({ mode: a.mode, untrusted: true, allowUnisolated: a.mode === 'none', user: a.user ?? null });
  await runProbe([{ command: a.python, source: 'option' }], {
    subcommand: 'block', args: a.args, runDir: a.runDir, timeoutSec: a.timeoutSec ?? 120,
    isolation: iso, writable: a.writable, readable: a.readable, extraEnv: a.extraEnv,
  }, { onLine: () => undefined });
  console.log(JSON.stringify({ ok: true, mode: iso.mode, detail: iso.detail }));
} catch (e) {
  console.log(JSON.stringify({ ok: false, error: (e as Error).message, status: (e as { status?: number }).status ?? null }));
}
