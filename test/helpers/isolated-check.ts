// Runs one check() the way the CLI does, in a process of its own (as another uid when the caller
// starts it through setpriv): a hostile probe's leftovers are judged from outside. Usage:
// node --import tsx isolated-check.ts '<json plan>'; prints one JSON line.
import { check } from '../../src/check/index.ts';

const plan = JSON.parse(process.argv[2]);
const quiet = { step: () => undefined, warn: () => undefined };
try {
  const r = await check(plan, { log: quiet });
  console.log(JSON.stringify({ ok: true, outcome: r.report.outcome, exitCode: r.exitCode, isolation: r.report.isolation ?? null }));
} catch (e) {
  console.log(JSON.stringify({ ok: false, error: (e as Error).message }));
}
