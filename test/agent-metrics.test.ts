// The agent's fleet metrics: the node_exporter textfile checked strictly (the text exposition
// format's grammar, and `promtool check metrics` where the prometheus package's promtool is
// installed), the same series after 1 and after 100 jobs, jobs.ndjson rotated by size and age, and
// `agent fleet` merging several runners' `agent status --json`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderTextfile, type JobLine } from '../src/agent/metrics.ts';
import { fakeRunner, agent, ok, restub, type Fake } from './fixtures/agent/fake.ts';
import { LINES, journal } from './fixtures/agent/kernel-log.ts';
import { dotRunner } from './fixtures/agent/runner.ts';
import * as X from './fixtures/agent/xrt-smi.ts';

interface Sample { name: string; labels: Record<string, string>; value: number }

/**
 * Parses a Prometheus text exposition (format 0.0.4) and throws on anything promtool or the
 * scraper would reject: name grammar, label grammar and escaping, HELP/TYPE once per family and
 * before its samples, samples of a family together, values, duplicate series, counters named _total.
 */
function parseExposition(text: string): { families: Map<string, { help: string | null; type: string | null }>; samples: Sample[] } {
  const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
  const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
  if (!text.endsWith('\n')) throw new Error('the last line does not end with a newline');
  const families = new Map<string, { help: string | null; type: string | null }>();
  const samples: Sample[] = [];
  const seen = new Set<string>();
  const done = new Set<string>();
  let current: string | null = null;
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) { f = { help: null, type: null }; families.set(name, f); }
    return f;
  };
  text.slice(0, -1).split('\n').forEach((line, i) => {
    const where = `line ${i + 1}: ${line}`;
    if (line === '') throw new Error(`${where}: blank line`);
    let m: RegExpExecArray | null;
    if ((m = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line))) {
      const [, kind, name, rest] = m;
      if (!NAME.test(name)) throw new Error(`${where}: bad metric name`);
      const f = family(name);
      if (kind === 'HELP') {
        if (f.help !== null) throw new Error(`${where}: second HELP`);
        if (/\\[^\\n]/.test(rest)) throw new Error(`${where}: bad escape in HELP`);
        f.help = rest;
      } else {
        if (f.type !== null) throw new Error(`${where}: second TYPE`);
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`${where}: bad type`);
        if (samples.some((s) => s.name === name)) throw new Error(`${where}: TYPE after its samples`);
        f.type = rest;
      }
      return;
    }
    if (line.startsWith('#')) return;
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$/.exec(line);
    if (!m) throw new Error(`${where}: not a sample`);
    const [, name, , body, raw] = m;
    const labels: Record<string, string> = {};
    let rest = body ?? '';
    while (rest.length) {
      const lm = /^([^=]+)="((?:[^"\\]|\\["\\n])*)"(,|$)/.exec(rest);
      if (!lm) throw new Error(`${where}: bad label set at ${rest}`);
      const [all, key, val] = lm;
      if (!LABEL.test(key) || key.startsWith('__')) throw new Error(`${where}: bad label name ${key}`);
      if (key in labels) throw new Error(`${where}: label ${key} twice`);
      labels[key] = val.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      rest = rest.slice(all.length);
    }
    if (!/^(NaN|[+-]Inf|[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)$/.test(raw)) throw new Error(`${where}: bad value`);
    if (name !== current) {
      if (done.has(name)) throw new Error(`${where}: samples of ${name} are not together`);
      if (current) done.add(current);
      current = name;
    }
    const f = families.get(name);
    if (!f?.type || f.help === null) throw new Error(`${where}: no HELP and TYPE before it`);
    if (f.type === 'counter' && !name.endsWith('_total')) throw new Error(`${where}: a counter not named _total`);
    const key = `${name}{${Object.keys(labels).sort().map((k) => `${k}=${labels[k]}`).join(',')}}`;
    if (seen.has(key)) throw new Error(`${where}: duplicate series`);
    seen.add(key);
    samples.push({ name, labels, value: raw === 'NaN' ? NaN : raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw) });
  });
  return { families, samples };
}

const series = (text: string) => parseExposition(text).samples.map((s) => `${s.name}{${Object.entries(s.labels).filter(([k]) => !['xrt', 'amdxdna', 'firmware'].includes(k)).map(([k, v]) => `${k}=${v}`).join(',')}}`).sort();

function registered(f: Fake, name = 'npu-runner-1') {
  const d = join(f.base, `runner-${name}`);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, '.runner'), dotRunner({ id: 42, name, gitHubUrl: 'https://github.com/acme/mlir-air' }));
  writeFileSync(join(d, '.service'), `actions.runner.acme-mlir-air.${name}.service\n`);
  f.services[`actions.runner.acme-mlir-air.${name}.service`] = { state: 'active' };
  return d;
}

function event(f: Fake, head: string) {
  const p = join(f.cwd, `event-${head.replace('/', '-')}.json`);
  writeFileSync(p, JSON.stringify({ pull_request: { head: { repo: { full_name: head } }, base: { repo: { full_name: 'acme/mlir-air' } } } }));
  return p;
}

/** One job through both hooks: ok, refused (a fork under pull_request_target), or the NPU failing after it. */
async function job(f: Fake, rd: string, n: number, kind: 'ok' | 'refused' | 'device_failed') {
  const env: NodeJS.ProcessEnv = { ...f.env, GITHUB_REPOSITORY: `acme/repo-${n % 7}`, GITHUB_RUN_ID: String(1000 + n), GITHUB_JOB: `job "${n}"\nwith a newline` };
  if (kind === 'refused') Object.assign(env, { GITHUB_EVENT_PATH: event(f, `fork-${n}/mlir-air`), GITHUB_EVENT_NAME: 'pull_request_target' });
  const deps = { ...f.deps, env };
  f.clock.now = new Date(Date.UTC(2026, 7, 30, 4, 0, 0) + n * 60_000);
  await agent(['hook', 'job-started', '--root', f.root, '--runner-dir', rd], deps);
  if (kind === 'device_failed') {
    f.setJournal(journal([LINES.enabling, LINES.load]) + journal([LINES.badState], new Date(f.clock.now.getTime() + 10_000).toISOString().slice(0, 19)));
    restub(f, 'xrt-smi', (a) => (a[0] === 'validate' ? { status: 1, stdout: X.VALIDATE_FAIL, stderr: '' } : ok(X.EXAMINE_CURRENT)));
  }
  f.clock.now = new Date(f.clock.now.getTime() + 30_000);
  const r = await agent(['hook', 'job-completed', '--root', f.root, '--dir', join(f.base, 'hooks'), '--runner-dir', rd], deps);
  assert.is(r.code, 0, r.out);
  if (kind === 'device_failed') {
    // The admin reloads the driver: a clean log again.
    f.setJournal(journal([LINES.enabling, LINES.load]) + journal([LINES.load], new Date(f.clock.now.getTime() + 1000).toISOString().slice(0, 19)));
    restub(f, 'xrt-smi', (a) => (a[0] === 'validate' ? ok(X.VALIDATE_CURRENT_PASS) : ok(X.EXAMINE_CURRENT)));
  }
}

const prom = (f: Fake) => readFileSync(join(f.state, 'npu_block_gate.prom'), 'utf8');

test('the textfile passes a strict exposition check, and promtool check metrics where promtool is installed', async () => {
  const f = fakeRunner();
  const rd = registered(f);
  await job(f, rd, 1, 'ok');
  const text = prom(f);
  const { families, samples } = parseExposition(text);
  assert.ok(families.size >= 12);
  assert.ok(samples.every((s) => s.labels.runner === 'npu-runner-1'), 'a runner label on every series');
  assert.is(families.get('npu_block_gate_jobs_total')!.type, 'counter');
  // Label values with quotes, backslashes and newlines are escaped.
  const line: JobLine = {
    ts: '2026-08-30T04:00:00.000Z', runner: 'npu "1"\\gpu\nrack', repository: null, run_id: null, job: null, started_at: null, duration_s: null, outcome: 'ok', refused: null,
    device_ok: true, failing: [], versions: { xrt: '2.23.0', amdxdna: null, firmware: '1.1.2.64' }, functional: null, drained: false, drain_pending: false,
  };
  const odd = renderTextfile(line, { ok: 1, refused: 0, device_failed: 0 });
  const parsed = parseExposition(odd);
  assert.is(parsed.samples[0].labels.runner, 'npu "1"\\gpu\nrack');
  assert.ok(odd.includes('runner="npu \\"1\\"\\\\gpu\\nrack"'));
  assert.ok(Number.isNaN(parsed.samples.find((s) => s.name === 'npu_block_gate_last_job_duration_seconds')!.value));
  // The validator rejects what it must.
  for (const bad of ['x 1', '# TYPE x gauge\nx{a="1"} 1\n', '# HELP x h\n# TYPE x gauge\nx{a="\\q"} 1\n', '# HELP x h\n# TYPE x gauge\nx 1\nx 2\n', '# HELP x h\n# TYPE x counter\nx 1\n', '# HELP x h\n# TYPE x gauge\nx{__a="1"} 1\n']) {
    assert.throws(() => parseExposition(bad.endsWith('\n') ? bad : bad + '\n'), undefined, bad);
  }
  const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (promtool.error) {
    console.warn('agent-metrics: promtool is not installed (Debian: apt-get install prometheus); the strict check above stands in for it');
    return;
  }
  assert.is(promtool.status, 0, `${promtool.stdout}${promtool.stderr}`);
  const odd2 = spawnSync('promtool', ['check', 'metrics'], { input: odd, encoding: 'utf8' });
  assert.is(odd2.status, 0, `${odd2.stdout}${odd2.stderr}`);
});

test('the same series after 1 job and after 100 (no per-job label values), the last job\'s facts as gauge values', async () => {
  const f = fakeRunner();
  const rd = registered(f);
  await job(f, rd, 0, 'ok');
  const one = series(prom(f));
  const kinds = ['ok', 'refused', 'device_failed'] as const;
  for (let n = 1; n < 100; n++) await job(f, rd, n, kinds[n % 3]);
  const text = prom(f);
  assert.equal(series(text), one);
  const { samples } = parseExposition(text);
  const value = (name: string, labels: Record<string, string> = {}) => samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))!.value;
  assert.is(value('npu_block_gate_jobs_total', { outcome: 'ok' }) + value('npu_block_gate_jobs_total', { outcome: 'refused' }) + value('npu_block_gate_jobs_total', { outcome: 'device_failed' }), 100);
  assert.is(value('npu_block_gate_jobs_total', { outcome: 'refused' }), 33);
  assert.is(value('npu_block_gate_jobs_total', { outcome: 'device_failed' }), 33);
  // The last job (99) ran fine: its run id is a value, its outcome one of a fixed set.
  assert.is(value('npu_block_gate_last_job_run_id'), 1099);
  assert.equal(kinds.map((k) => value('npu_block_gate_last_job_outcome', { outcome: k })), [1, 0, 0]);
  assert.not.match(text, /run_id=|repository=|job=/);
  assert.is(readFileSync(join(f.state, 'jobs.ndjson'), 'utf8').trim().split('\n').length, 100);
});

test('two runners sharing one textfile directory never collide: each file\'s series carry their own runner label', async () => {
  const dir = join(fakeRunner().base, 'textfile_collector');
  const names = ['npu-runner-1', 'npu-runner-2'];
  for (const name of names) {
    const f = fakeRunner();
    const rd = registered(f, name);
    await agent(['hook', 'job-completed', '--root', f.root, '--dir', join(f.base, 'hooks'), '--runner-dir', rd, '--textfile', join(dir, `${name}.prom`)], f.deps);
  }
  const all = names.map((n) => readFileSync(join(dir, `${n}.prom`), 'utf8'));
  // node_exporter merges the directory: no series of one runner equals one of the other.
  const a = new Set(series(all[0]));
  assert.ok(series(all[1]).every((s) => !a.has(s)));
  // Without a runner dir: RUNNER_NAME (the runner sets it for hooks), else the host name.
  const f = fakeRunner();
  await agent(['hook', 'job-completed', '--root', f.root, '--dir', join(f.base, 'hooks')], { ...f.deps, env: { ...f.env, RUNNER_NAME: 'from-env' } });
  assert.match(prom(f), /^npu_block_gate_healthy\{runner="from-env"\} 1$/m);
  const g = fakeRunner();
  await agent(['hook', 'job-completed', '--root', g.root, '--dir', join(g.base, 'hooks')], g.deps);
  assert.match(prom(g), /^npu_block_gate_healthy\{runner="amdryzenai5pro340"\} 1$/m);
});

test('jobs.ndjson is rotated by size and by age; the counters go on across rotations', async () => {
  const f = fakeRunner();
  const rd = registered(f);
  const jobs = join(f.state, 'jobs.ndjson');
  const old = join(f.state, 'jobs.ndjson.1');
  const completed = (extra: string[] = []) => agent(['hook', 'job-completed', '--root', f.root, '--dir', join(f.base, 'hooks'), '--runner-dir', rd, ...extra], f.deps);
  await completed();
  await completed();
  assert.is(readFileSync(jobs, 'utf8').trim().split('\n').length, 2);
  assert.not.ok(existsSync(old));
  // By size: jobs.ndjson past the bound moves to jobs.ndjson.1 (the older generation replaced).
  const size = readFileSync(jobs).length;
  const { appendJob } = await import('../src/agent/metrics.ts');
  const line = JSON.parse(readFileSync(jobs, 'utf8').split('\n')[0]) as JobLine;
  const rot = appendJob(f.state, line, { now: f.clock.now, maxBytes: size + 10 });
  assert.equal(rot, { rotated: true, dropped: false });
  assert.is(readFileSync(old, 'utf8').trim().split('\n').length, 2);
  assert.is(readFileSync(jobs, 'utf8').trim().split('\n').length, 1);
  // By age: a first line older than 30 days rotates; a rotated generation older than 30 days is dropped.
  f.clock.now = new Date('2026-10-05T00:00:00Z');
  utimesSync(old, new Date('2026-08-30T04:00:00Z'), new Date('2026-08-30T04:00:00Z'));
  const r = await completed();
  assert.match(r.out, /rotated the previous lines to jobs\.ndjson\.1/);
  assert.is(readFileSync(old, 'utf8').trim().split('\n').length, 1, 'the 2-line generation (older than 30 days) was dropped, the 1-line file rotated');
  assert.equal(readFileSync(jobs, 'utf8').trim().split('\n').map((l) => JSON.parse(l).ts), ['2026-10-05T00:00:00.000Z']);
  assert.match(prom(f), /^npu_block_gate_jobs_total\{runner="npu-runner-1",outcome="ok"\} 3$/m);
});

test('agent fleet merges several runners\' agent status --json into one table; bad input is one line naming the file', async () => {
  const dir = join(fakeRunner().base, 'fleet');
  mkdirSync(dir);
  const files: string[] = [];
  // Runner 1: healthy. Runner 2: the NPU failed after a job and it is drained (verified). Runner 3: NPU 1 on XRT 2.17.
  for (const [i, setup] of [
    [1, async () => undefined],
    [2, async (f: Fake, rd: string) => {
      await job(f, rd, 5, 'device_failed');
      f.clock.now = new Date('2026-08-30T05:00:00Z');
      assert.is((await agent(['drain', '--root', f.root, '--runner-dir', rd], f.deps)).code, 0);
    }],
    [3, async (f: Fake) => { restub(f, 'xrt-smi', () => ok(X.EXAMINE_2_17_OOT)); }],
  ] as [number, (f: Fake, rd: string) => Promise<void>][]) {
    const f = fakeRunner();
    const rd = registered(f, `npu-runner-${i}`);
    if (i === 3) { writeFileSync(join(f.root, 'sys/bus/pci/devices/0000:c5:00.1/device'), '0x1502\n'); writeFileSync(join(f.root, 'sys/bus/pci/devices/0000:c5:00.1/revision'), '0x00\n'); writeFileSync(join(f.root, 'sys/bus/pci/devices/0000:c5:00.1/vbnv'), 'RyzenAI-npu1\n'); }
    if (i !== 2) await job(f, rd, 1, 'ok');
    await setup(f, rd);
    const s = await agent(['status', '--json', '--root', f.root, '--runner-dir', rd], f.deps);
    assert.is(s.code, 0, s.err);
    const p = join(dir, `r${i}.json`);
    writeFileSync(p, s.out);
    files.push(p);
  }
  const r = await agent(['fleet', ...files.reverse()], {});
  assert.is(r.code, 0, r.err);
  const lines = r.out.trimEnd().split('\n');
  assert.match(lines[0], /^runner +npu +driver +firmware +health +drained +last job$/);
  assert.match(lines[1], /^npu-runner-1 +Strix Halo \(RyzenAI-npu5\) +2\.23\.0_20260402 +1\.1\.2\.64 +ok +no +2026-08-30T04:01:30\.000Z ok$/);
  assert.match(lines[2], /^npu-runner-2 +Strix Halo \(RyzenAI-npu5\) +2\.23\.0_20260402 +1\.1\.2\.64 +failing +yes \(service, since 2026-08-30T05:00:00\.000Z\) +2026-08-30T04:05:30\.000Z device_failed \(NPU failed after it\)$/);
  assert.match(lines[3], /^npu-runner-3 +Phoenix \(RyzenAI-npu1\) +2\.23\.0_20260402 +1\.1\.2\.64 +ok +no +/);
  assert.is(lines[4], '3 runner(s): 1 failing, 1 drained');
  const j = JSON.parse((await agent(['fleet', '--json', ...files], {})).out);
  assert.equal(j.map((x: { runner: string; health: string }) => [x.runner, x.health]), [['npu-runner-1', 'ok'], ['npu-runner-2', 'failing'], ['npu-runner-3', 'ok']]);
  // stdin, and an array of statuses.
  const arr = `[${files.map((p) => readFileSync(p, 'utf8')).join(',')}]`;
  assert.is((await agent(['fleet', '-'], { stdin: () => arr })).out, r.out.replace(/\n$/, '\n'));
  // Bad input: one line naming the file, exit 2.
  const junk = join(dir, 'junk.json');
  writeFileSync(junk, '{"hello": 1}');
  for (const [args, re] of [
    [[junk], /^npu-block-gate: error: .*junk\.json: not an agent status \(no "device" and "versions"\)/],
    [[join(dir, 'missing.json')], /^npu-block-gate: error: .*missing\.json: cannot read it/],
    [[], /agent fleet needs the agent status --json of each runner/],
  ] as [string[], RegExp][]) {
    writeFileSync(join(dir, 'notjson.json'), 'nope');
    const b = await agent(['fleet', ...args], {});
    assert.is(b.code, 2, args.join(' '));
    assert.match(b.err, re);
    assert.is(b.err.split('\n').length, 2);
  }
  assert.match((await agent(['fleet', join(dir, 'notjson.json')], {})).err, /notjson\.json: not JSON/);
});

test.run();
