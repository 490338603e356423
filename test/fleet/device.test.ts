// The device on every record (issue 19): the NPU generation from the PCI ids or the driver's name,
// history rows and the max_abs baseline keyed by model and generation, an emulated run marked so.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { generationOfName, generationOfPci, generationName, recordNpu, type NpuFacts } from '../../src/npu/generation.ts';
import { baselineFor, readHistory, updatePhase2, HISTORY_HEADER } from '../../src/docs/phase2.ts';
import { renderMarkdown, deviceText } from '../../src/report/markdown.ts';
import { fakeMetrics, fakeReport } from '../helpers/report.ts';
import type { Report } from '../../src/record/report.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fakeRunner, agent } from '../fixtures/agent/fake.ts';
import { BDF } from '../fixtures/agent/kernel-log.ts';

const F = 'phase2_block.md';
const npu = (generation: string | null, over: Partial<NpuFacts> = {}): NpuFacts => ({
  generation, name: generation === 'strix' ? 'NPU Strix' : 'RyzenAI-npu1', pci: generation === 'strix' ? '1022:17f0 rev 10' : '1022:1502 rev 00',
  bdf: '0000:c5:00.1', driver: '2.19.0', firmware: '1.5.2.380', xrt: '2.19.0', source: 'pci', ...over,
});
const on = (r: Report, facts: NpuFacts | null): Report => ({ ...r, environment: { ...r.environment!, npu: facts } });
const doc = (r: Report, prev: string | null = null) => updatePhase2(prev, r, renderMarkdown(r, { flavor: 'doc' }), F);

test('the generation from the PCI device id and revision, as the amdxdna driver maps them', () => {
  assert.is(generationOfPci('1502', '00')?.id, 'phoenix');
  assert.is(generationOfPci('0x17f0', '0x10')?.id, 'strix');
  assert.is(generationOfPci('17f0', '11')?.id, 'strix-halo');
  assert.is(generationOfPci('17F0', '20')?.id, 'krackan');
  assert.is(generationOfPci('1b0a', '0')?.id, 'npu3');
  assert.is(generationOfPci('17f0', '99'), null, 'an unknown revision is not guessed');
  assert.is(generationOfPci('1234', '00'), null);
  // Hawk Point has Phoenix's PCI id: the CPU model (Ryzen 8040 series) tells them apart.
  assert.is(generationOfPci('1502', '00', 'AMD Ryzen 7 8845HS w/ Radeon 780M Graphics')?.id, 'hawk-point');
  assert.is(generationOfPci('1502', '00', 'AMD Ryzen 9 7940HS w/ Radeon 780M Graphics')?.id, 'phoenix');
  assert.is(generationOfPci('1502', '00', 'AMD Ryzen 7 8700G w/ Radeon 780M Graphics')?.id, 'phoenix', 'the 8000G desktop parts are Phoenix');
});

test('the generation from the driver\'s name (sysfs vbnv, xrt-smi): the longest name wins', () => {
  assert.is(generationOfName('NPU Strix Halo')?.id, 'strix-halo');
  assert.is(generationOfName('NPU Strix')?.id, 'strix');
  assert.is(generationOfName('RyzenAI-npu4')?.id, 'strix');
  assert.is(generationOfName('NPU Kracken')?.id, 'krackan', "the driver's own spelling");
  assert.is(generationOfName('RyzenAI-npu1', 'AMD Ryzen 5 8645HS')?.id, 'hawk-point');
  assert.is(generationOfName('something else'), null);
  assert.is(generationOfName(''), null);
  assert.is(generationName('krackan'), 'Krackan');
  assert.is(generationName('npu42'), 'npu42', 'an id the table does not know is shown as it is');
});

test('issue 28: one rule, the board name first, then the PCI id: a "NPU Krackan 1" on 17f0:10 is krackan; Gorgon Point has its own key', async () => {
  assert.is(generationOfName('NPU Krackan 1')?.id, 'krackan');
  assert.is(generationOfName('NPU Gorgon Point 1')?.id, 'gorgon-point');
  assert.is(generationOfName('NPU Gorgon Point 3')?.id, 'gorgon-point');
  assert.is(generationName('gorgon-point'), 'Gorgon Point');
  // agent status on a host whose driver names the board Krackan 1 on Strix's PCI id (17f0 rev 10).
  const f = fakeRunner();
  writeFileSync(join(f.root, 'sys/bus/pci/devices', BDF, 'revision'), '0x10\n');
  writeFileSync(join(f.root, 'sys/bus/pci/devices', BDF, 'vbnv'), 'NPU Krackan 1\n');
  const st = JSON.parse((await agent(['status', '--json', '--root', f.root], f.deps)).out);
  assert.is(st.npu.generation, 'krackan');
  // The history key of a record the probe made there (its environment.npu.generation, test_probe_npu.py: krackan).
  assert.is(recordNpu(on(fakeReport(), npu('krackan', { name: 'NPU Krackan 1', pci: '1022:17f0 rev 10', source: 'name' }))), 'krackan');
});

test('the record\'s NPU key: its generation, "emulated" when no NPU ran, else "unknown"', () => {
  const r = fakeReport();
  assert.is(recordNpu(on(r, npu('strix'))), 'strix');
  assert.is(recordNpu(on(r, npu(null))), 'unknown');
  assert.is(recordNpu(r), 'unknown');
  assert.is(recordNpu(on(r, npu('../../etc'))), 'unknown', 'a generation that is not an id is not a key');
  assert.is(recordNpu({ ...on(r, npu('strix')), emulate: { runtime: 'twins', inject: null } }), 'emulated');
});

test('one history row per commit, prompt and generation: a second NPU adds its own row, a re-run on the same NPU replaces it', () => {
  const base = fakeReport();
  let text = doc(on(base, npu('phoenix')));
  text = doc(on(base, npu('strix')), text);
  let h = readHistory(text, F);
  assert.equal(h.map((x) => x.npu), ['phoenix', 'strix']);
  assert.ok(text.includes(HISTORY_HEADER[0]));
  const again = on(fakeReport(fakeMetrics({ whole: 0.9993 })), npu('strix'));
  text = doc(again, text);
  h = readHistory(text, F);
  assert.is(h.length, 2);
  assert.is(h.find((x) => x.npu === 'strix')!.cosine, 0.9993);
  assert.is(h.find((x) => x.npu === 'phoenix')!.cosine, 0.9991);
});

test('the max_abs baseline comes from the same generation only', () => {
  const old = on(fakeReport(fakeMetrics({ maxAbs: 0.5 }), { commit: '1111111111111111' }), npu('phoenix'));
  const text = doc(old);
  const h = readHistory(text, F);
  const now = (g: string) => on(fakeReport(fakeMetrics({ maxAbs: 0.9 })), npu(g));
  assert.equal(baselineFor(h, now('phoenix')), { maxAbs: 0.5, commit: '111111111111' });
  assert.is(baselineFor(h, now('strix')), null, 'a Phoenix row is no baseline for Strix');
  assert.is(baselineFor(h, fakeReport()), null, 'nor for a run whose NPU is unknown');
});

test('a history table written before the npu column gets the new header; its rows read as generation unknown', () => {
  const r = fakeReport();
  const oldHeader = HISTORY_HEADER.map((l) => l.replace(' npu |', '').replace('|---|---|---|---|---|---|---|---|---|---|---|---|---|', '|---|---|---|---|---|---|---|---|---|---|---|---|'));
  const written = doc(r).split('\n').map((l) => (l === HISTORY_HEADER[0] ? oldHeader[0] : l === HISTORY_HEADER[1] ? oldHeader[1] : l.replace(/ unknown \|$/, ''))).join('\n');
  assert.not.ok(written.includes(HISTORY_HEADER[0]));
  assert.is(readHistory(written, F)[0].npu, 'unknown');
  // The old row is the baseline of a run whose NPU is unknown too, not of one on Strix.
  const next = fakeReport(fakeMetrics(), { commit: '2222222222222222' });
  assert.ok(baselineFor(readHistory(written, F), next));
  const text = doc(on(next, npu('strix')), written);
  assert.ok(text.includes(HISTORY_HEADER[0]) && text.includes(HISTORY_HEADER[1]));
  assert.not.ok(text.includes(oldHeader[0] + '\n'));
  assert.equal(readHistory(text, F).map((x) => x.npu), ['unknown', 'strix']);
});

test('the device row: generation, name, PCI id and versions; an emulated run says so instead', () => {
  const r = on(fakeReport(), npu('strix'));
  assert.is(deviceText(r), 'Strix (NPU Strix, 1022:17f0 rev 10); amdxdna 2.19.0, firmware 1.5.2.380, XRT 2.19.0');
  assert.match(renderMarkdown(r, { flavor: 'comment' }), /\| device +\| Strix \\\(NPU Strix, 1022:17f0 rev 10\\\); amdxdna 2\.19\.0/);
  assert.is(deviceText({ ...r, emulate: { runtime: 'twins', inject: null } }), 'none: emulated run (no NPU ran)');
  assert.is(deviceText(fakeReport()), 'not detected');
  // A hostile name from the run dir is escaped in the table like every foreign string.
  const hostile = on(fakeReport(), npu('strix', { name: 'NPU | <img src=x> @team' }));
  assert.not.match(renderMarkdown(hostile, { flavor: 'comment' }), /<img|@team|NPU \| </);
});

test.run();
