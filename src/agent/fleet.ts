// `agent fleet FILE...`: the `agent status --json` of several runners merged into one table, one
// row per runner: its name, NPU generation, driver and firmware, health, drained, last job. Pure:
// the CLI reads the files (or stdin) and hands their text over.
import { InputError, oneLine } from '../errors.ts';
import { generationName } from '../npu/generation.ts';

interface FleetRow {
  runner: string;
  npu: string;
  driver: string;
  firmware: string;
  health: string;
  drained: string;
  last_job: string;
  /** Where the row came from. */
  source: string;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : null);
const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);

function row(s: Json, source: string): FleetRow {
  const npu = obj(s.npu);
  const versions = obj(s.versions);
  const driver = obj(s.driver);
  const lastJob = obj(s.last_job);
  const drain = obj(s.drain);
  const gen = str(npu?.generation);
  const name = str(npu?.name);
  const drained = !drain ? 'no' : drain.drained === true ? `yes (${str(drain.method) ?? '?'}, since ${str(drain.at) ?? '?'})` : `no (${str(drain.state) ?? '?'})`;
  return {
    runner: str(s.runner) ?? source,
    npu: gen ? `${generationName(gen)}${name && name !== generationName(gen) ? ` (${name})` : ''}` : name ?? (Array.isArray(s.device) && s.device.length ? '?' : 'none'),
    driver: str(versions?.amdxdna) ?? str(driver?.version) ?? (driver?.loaded === false ? 'not loaded' : '?'),
    firmware: str(versions?.firmware) ?? '?',
    health: str(s.health) ?? 'unknown',
    drained,
    last_job: lastJob ? `${str(lastJob.finished_at) ?? '?'}${str(lastJob.outcome) ? ` ${lastJob.outcome}` : ''}${lastJob.device_ok === false ? ' (NPU failed after it)' : ''}` : 'none',
    source,
  };
}

/** The rows of every input: each an `agent status --json` object, or an array of them. Bad input: one line naming the file. */
export function fleetRows(inputs: { source: string; text: string }[]): FleetRow[] {
  const rows: FleetRow[] = [];
  for (const { source, text } of inputs) {
    let j: unknown;
    try { j = JSON.parse(text); } catch (e) { throw new InputError(`not JSON (${oneLine(e)}): expected the output of npu-block-gate agent status --json`, source); }
    const list = Array.isArray(j) ? j : [j];
    list.forEach((s, i) => {
      const o = obj(s);
      const where = Array.isArray(j) ? `${source}[${i}]` : source;
      if (!o || !('device' in o) || !('versions' in o)) throw new InputError('not an agent status (no "device" and "versions"): expected the output of npu-block-gate agent status --json', where);
      rows.push(row(o, where));
    });
  }
  return rows.sort((a, b) => a.runner.localeCompare(b.runner) || a.source.localeCompare(b.source));
}

const HEAD: [keyof FleetRow, string][] = [['runner', 'runner'], ['npu', 'npu'], ['driver', 'driver'], ['firmware', 'firmware'], ['health', 'health'], ['drained', 'drained'], ['last_job', 'last job']];

export function renderFleet(rows: FleetRow[]): string {
  const cells = rows.map((r) => HEAD.map(([k]) => r[k]));
  const w = HEAD.map(([, h], i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(w[i])).join('  ').trimEnd();
  const failing = rows.filter((r) => r.health === 'failing').length;
  const drained = rows.filter((r) => r.drained.startsWith('yes')).length;
  return [line(HEAD.map(([, h]) => h)), ...cells.map(line), `${rows.length} runner(s): ${failing} failing, ${drained} drained`].join('\n') + '\n';
}
