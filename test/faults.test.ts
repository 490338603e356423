// The fault suite of issue 9 ("nothing lost, nothing hung, nothing misblamed"): one test (or a
// few) per point 2-10, each reproducing the report's case; then issue 16's 18 defects (two runs at
// once, the wrong model dir, a read-only disk, ...), its newcomer cases and the lens on air-mini,
// one test or more each, named "issue 16.N". Every bad input must give one line
// naming the file or argument, exit 2 (bad input) or 3 (infrastructure), and leave the documents
// byte-identical with no report.json behind. Synthetic run dirs (no Python) unless a point needs
// the probe. Points 1 (signals) and the probe's own faults are tested elsewhere.
import { test, skip } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import {
  chmodSync, cpSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync,
  mkdtempSync, renameSync, openSync, closeSync, readdirSync,
} from 'node:fs';
import { join } from 'node:path';
import { hostname, tmpdir } from 'node:os';
import { spawn, spawnSync } from 'node:child_process';
import { deflateRawSync } from 'node:zlib';
import { fixture, report, cli, errorLine, refValues, npyOf, REAL_LEN, PADDED, COLS, TODO_MD, fullProbeJson, type Fixture } from './helpers/rundir.ts';
import { mountTmpfs } from './helpers/tmpfs.ts';
import { copyAirMini, REPO } from './helpers/airmini.ts';
import { copyRealTree, realTreeRoot } from './helpers/mlirair.ts';
import { findNumpyPython, missingNumpy, runPython } from './helpers/python.ts';
import { zipBytes, npyBytes, npyHeader, f32Bytes } from './helpers/bytes.ts';
import { openTensor } from '../src/tensor/index.ts';
import { InputError } from '../src/errors.ts';
import { NPZ_MAX_INFLATED } from '../src/tensor/npz.ts';
import { fromJson } from '../src/report/json.ts';
import { main } from '../src/cli.ts';
import { Writable } from 'node:stream';
import { prepareRunDir } from '../src/check/rundir.ts';
import { renderTerminal } from '../src/report/terminal.ts';
import type { Report } from '../src/record/report.ts';
import { PROBE_KEYS } from '../src/rundir/schema.ts';
import { PROBE_SPEC } from '../src/rundir/probe-spec.ts';
import { keyTree } from '../src/rundir/spec.ts';
import { MARK } from '../src/docs/markers.ts';
import { updateTodo } from '../src/docs/todo.ts';
import { fakeReport, fakeMetrics } from './helpers/report.ts';
import { decodeDoc, encodeDoc, joinLines, splitLines } from '../src/docs/text.ts';
import { ensureCli } from './helpers/dist.ts';

process.env.NPU_BLOCK_GATE_CACHE_DIR ??= mkdtempSync(join(tmpdir(), 'nbg-kcache-'));
// The CLI as a process, as users run it: the bundle (of the current sources when dist/ is older).
const CLI = await ensureCli();

/** The documents (every file under the model dir, bytes and mode). */
const docs = (f: Fixture) => [...f.snapshot()].filter(([k]) => !k.startsWith('run/'));

/** A failed run: the exit code, one error line matching `line`, the documents as they were, and no report in the run dir. */
async function refused(f: Fixture, code: 2 | 3, line: RegExp, args: string[] = []) {
  const before = docs(f);
  const r = await report(f, args);
  assert.is(r.code, code, r.err);
  assert.match(errorLine(r), line);
  assert.equal(docs(f), before, 'documents byte-identical');
  assert.not.ok(existsSync(join(f.runDir, 'report.json')) || existsSync(join(f.runDir, 'report.md')), 'no report left in the run dir');
  return r;
}

/** A documents failure (issue 16.16): the exit code and one error line, the documents as they were,
 * and the verdict kept: report.json in the run dir, G4 skipped saying why, a warning naming how to re-judge. */
async function docsRefused(f: Fixture, code: 2 | 3, line: RegExp, args: string[] = []) {
  const before = docs(f);
  const r = await report(f, args);
  assert.is(r.code, code, r.err);
  assert.match(errorLine(r), line);
  assert.equal(docs(f), before, 'documents byte-identical');
  assertVerdictKept(f.runDir, code);
  return r;
}

/** report.json holds the verdict (pass) with G4 skipped and a warning that says how to re-judge. */
function assertVerdictKept(runDir: string, code: number): Report {
  const rep = fromJson<Report>(readFileSync(join(runDir, 'report.json'), 'utf8'));
  assert.is(rep.outcome, 'pass');
  assert.is(rep.exit_code, code);
  assert.equal(rep.gates.map((g) => `${g.id} ${g.status}`), ['G1 pass', 'G2 pass', 'G3 pass', 'G4 skip']);
  assert.match(rep.gates[3].detail, /^not written: /);
  assert.match(rep.warnings.map((w) => w.message).join('\n'), new RegExp(`re-judge this run dir with \`npx npu-block-gate report --run-dir ${runDir}\` \\(add --no-docs`));
  assert.is(rep.docs, null);
  return rep;
}

test('the synthetic run dir passes and documents (the baseline every fault below starts from)', async () => {
  const f = fixture();
  const r = await report(f, ['--json']);
  assert.is(r.code, 0, r.err);
  assert.is(fromJson<Report>(r.out).outcome, 'pass');
  assert.match(readFileSync(f.todo, 'utf8'), /- \[x\] 2: Single-Block Validation/);
  assert.ok(existsSync(f.phase2) && existsSync(join(f.runDir, 'report.json')));
});

// ---- Point 2: probe.json validated whole, types included, before anything is judged ----

test('point 2: the schema declares exactly PROBE_KEYS', () => {
  assert.equal(keyTree(PROBE_SPEC), PROBE_KEYS);
});

const WRONG_TYPES: [string, unknown, RegExp][] = [
  ['timings.total', '1.2s', /timings\.total must be a finite number/],
  ['kernel_cache', 'x', /kernel_cache must be an object/],
  ['reference.cache.key', 5, /reference\.cache\.key must be a one-line string/],
  ['environment.git_commit', 12345, /environment\.git_commit must be a hex commit id/],
  ['environment.git_commit', 'a|b', /environment\.git_commit must be a hex commit id/],
  ['model.config.head_dim', '8', /model\.config\.head_dim must be an integer/],
  ['prompt.real_len', 5.5, /prompt\.real_len must be an integer/],
  ['prompt.style', 'in|struct', /prompt\.style must be a word/],
  ['model.name', 'two\nlines', /model\.name must be one line/],
  ['integration.workarounds', [{ id: 1, detail: 'd', prerequisite: 'p' }], /integration\.workarounds\[0\]\.id must be/],
  ['integration.step1.breaks', 'x', /integration\.step1\.breaks must be a list/],
  ['defaults.differs', [1], /defaults\.differs\[0\] must be/],
  ['tensors.npu.shape', ['8', 16], /tensors\.npu\.shape\[0\] must be an integer/],
  ['tensors.npu.dtype', 'f64', /tensors\.npu\.dtype must be one of/],
  ['reference.lite_mode', true, /reference\.lite_mode must be false/],
  ['integration.coverage.unwired', [{ shape: 3 }], /integration\.coverage\.unwired\[0\]\.shape must be/],
  ['surprise', 1, /surprise is not a field of this schema/],
];

for (const [field, value, message] of WRONG_TYPES) {
  test(`point 2: ${field} = ${JSON.stringify(value)} is exit 2 naming probe.json and the field; documents untouched`, async () => {
    const f = fixture({ probe: (p) => setPath(p, field, value) });
    await refused(f, 2, new RegExp(`probe\\.json: ${message.source}`));
  });
}

function setPath(o: Record<string, any>, path: string, value: unknown): void {
  const keys = path.split('.');
  let at = o;
  for (const k of keys.slice(0, -1)) at = at[k];
  at[keys[keys.length - 1]] = value;
}

/** Every (object key) path of a JSON value, with arrays' first element. */
function paths(v: unknown, prefix = ''): string[] {
  if (typeof v !== 'object' || v === null) return [];
  const out: string[] = [];
  const entries = Array.isArray(v) ? (v.length ? [['0', v[0]]] : []) : Object.entries(v);
  for (const [k, x] of entries) {
    const p = prefix ? `${prefix}.${k}` : String(k);
    out.push(p, ...paths(x, p));
  }
  return out;
}

test('point 2: every field of probe.json replaced by every other JSON type: accepted, or exit 2 naming probe.json; never exit 3, never a raw error, never a document written on a refusal', async () => {
  const f = fixture();
  const original = JSON.stringify(f.probe);
  const fills: unknown[] = ['s', 7, -1, 2.5, true, null, [], {}, [1, 'x'], { a: 1 }];
  let refusedCount = 0;
  let accepted = 0;
  for (const path of paths(fullProbeJson())) {
    for (const fill of fills) {
      f.probe = JSON.parse(original);
      setPath(f.probe, path.replace(/\.0(?=\.|$)/g, '.0'), fill);
      f.save();
      for (const p of [f.todo, f.phase2]) rmSync(p, { force: true });
      writeFileSync(f.todo, TODO_MD);
      const before = docs(f);
      const r = await report(f);
      if (r.code === 2) {
        refusedCount++;
        const line = errorLine(r);
        assert.match(line, /probe\.json/, `${path}=${JSON.stringify(fill)}: ${line}`);
        assert.equal(docs(f), before, `${path}=${JSON.stringify(fill)}: nothing written`);
        assert.not.ok(existsSync(join(f.runDir, 'report.json')), `${path}=${JSON.stringify(fill)}: no stale report.json`);
      } else {
        accepted++;
        assert.ok(r.code === 0 || r.code === 1, `${path}=${JSON.stringify(fill)}: exit ${r.code}: ${r.err}`);
      }
    }
  }
  assert.ok(refusedCount > 300 && accepted > 10, `${refusedCount} refused, ${accepted} accepted`);
});

test('point 2: an older run dir without the newer optional fields still reads and judges', async () => {
  const f = fixture({
    probe: (p) => {
      delete p.defaults;
      delete p.layers;
      delete p.integration.step1;
      delete p.integration.step2;
      delete p.integration.coverage;
      delete p.integration.runner;
      delete p.reference.cache;
      delete p.reference.hub_offline;
      p.kernel_cache = { dir: null, key: null, hit: null, seconds_saved: null, entries: [] };
      delete p.tool;
      delete p.created_at;
    },
  });
  const r = await report(f);
  assert.is(r.code, 0, r.err);
});

// ---- Point 2: write after the verdict, all or nothing; keep links, modes, endings, bytes ----

test('point 2/9: a symlinked TODO.md is written through (the link stays); modes are kept', async () => {
  const f = fixture();
  const shared = join(f.root, 'shared-TODO.md');
  renameSync(f.todo, shared);
  symlinkSync(shared, f.todo);
  chmodSync(shared, 0o640);
  const r = await report(f);
  assert.is(r.code, 0, r.err);
  assert.ok(lstatSync(f.todo).isSymbolicLink(), 'still a symlink');
  assert.is(readlinkSync(f.todo), shared);
  assert.match(readFileSync(shared, 'utf8'), /- \[x\] 2: Single-Block/);
  assert.is(statSync(shared).mode & 0o777, 0o640);
});

test('point 2/9: a read-only TODO.md is refused with a message, never overwritten; no document is written (the verdict is kept)', async () => {
  const f = fixture();
  chmodSync(f.todo, 0o444);
  await docsRefused(f, 2, /TODO\.md: is read-only \(mode 0444\).*--no-docs; nothing was changed/);
  assert.not.ok(existsSync(f.phase2), 'phase2_block.md not created either');
});

test('point 9: line endings are kept per line, and bytes that are not UTF-8 survive', async () => {
  const latin1 = Buffer.from('caf\xe9 (Latin-1), \xff\xfe stray bytes', 'latin1');
  const todo = Buffer.concat([
    Buffer.from('# Deployment: tiny_m\r\n\r\n## Phase status\n- [x] 0: Build CPU Reference\r\n- [ ] 2: Single-Block Validation\r\n- [ ] 4: Prefill Optimization\n'),
    latin1, Buffer.from('\n\n## Active blockers\r\n(none yet)\n'),
  ]);
  const f = fixture();
  writeFileSync(f.todo, todo);
  const r = await report(f);
  assert.is(r.code, 0, r.err);
  const after = readFileSync(f.todo);
  const expected = Buffer.from(todo.toString('latin1')
    .replace('- [ ] 2: Single-Block Validation\r\n', '- [x] 2: Single-Block Validation\r\n')
    .replace('- [ ] 4: Prefill Optimization\n', '- [ ] 4: Prefill Optimization\n  - Phase 4/5 prerequisite: perf optimization must preserve the padded/bias wrappers (qkv_bias=True: Q/K/V biases must be applied) <!-- npu-block-gate:prereq:qkv_bias -->\n'), 'latin1');
  assert.ok(after.equals(expected), `got:\n${JSON.stringify(after.toString('latin1'))}`);
  // The same holds for phase2_block.md: a hand line in CRLF and Latin-1 stays as it was.
  const hand = Buffer.concat([readFileSync(f.phase2), Buffer.from('Notes\r\n'), latin1, Buffer.from('\r\n')]);
  writeFileSync(f.phase2, hand);
  assert.is((await report(f, ['--commit', 'abcdef1'])).code, 0);
  assert.ok(readFileSync(f.phase2).includes(Buffer.concat([Buffer.from('Notes\r\n'), latin1, Buffer.from('\r\n')])));
});

test('point 9: the text codec round-trips any bytes', () => {
  let seed = 1;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  for (let i = 0; i < 2000; i++) {
    const b = Buffer.from(Array.from({ length: 1 + Math.floor(rnd() * 40) }, () => Math.floor(rnd() * 256)));
    assert.ok(encodeDoc(decodeDoc(b)).equals(b), b.toString('hex'));
  }
});

test('point 9: a file is its lines, each with its own ending ("\\n", "\\r\\n", or none for a last line without one); a lone "\\r" is text', () => {
  const cases: [string, [string, string][]][] = [
    ['', []], ['\n', [['', '\n']]], ['a', [['a', '']]], ['a\r\n', [['a', '\r\n']]], ['\r', [['\r', '']]],
    ['a\rb\n', [['a\rb', '\n']]], ['a\n\nb', [['a', '\n'], ['', '\n'], ['b', '']]], ['x\r\r\n', [['x\r', '\r\n']]],
    ['a\r\n\r\nb\r', [['a', '\r\n'], ['', '\r\n'], ['b\r', '']]],
  ];
  for (const [text, lines] of cases) {
    assert.equal(splitLines(text).map((l) => [l.text, l.eol]), lines, JSON.stringify(text));
    assert.is(joinLines(splitLines(text)), text);
  }
});

test('point 9: valid UTF-8 decodes to its characters, and the near misses (overlong, surrogate, past U+10FFFF, cut short) to escaped bytes', () => {
  // The code points at each length's edges, as UTF-8 writes them (RFC 3629).
  const valid: [string, number[]][] = [
    ['\u007f', [0x7f]], ['\u0080', [0xc2, 0x80]], ['\u07ff', [0xdf, 0xbf]], ['\u0800', [0xe0, 0xa0, 0x80]],
    ['\ud7ff', [0xed, 0x9f, 0xbf]], ['\ue000', [0xee, 0x80, 0x80]], ['\uffff', [0xef, 0xbf, 0xbf]],
    ['\u{10000}', [0xf0, 0x90, 0x80, 0x80]], ['\u{10ffff}', [0xf4, 0x8f, 0xbf, 0xbf]], ['é 漢 🚀\r\n', [0xc3, 0xa9, 0x20, 0xe6, 0xbc, 0xa2, 0x20, 0xf0, 0x9f, 0x9a, 0x80, 0x0d, 0x0a]],
  ];
  for (const [text, bytes] of valid) {
    assert.is(decodeDoc(Buffer.from(bytes)), text, Buffer.from(bytes).toString('hex'));
    assert.ok(encodeDoc(text).equals(Buffer.from(bytes)), text);
  }
  // Each byte of these escapes to U+DC00 + the byte, and comes back as itself.
  const invalid = [[0xc0, 0x80], [0xe0, 0x80, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe6, 0xbc], [0xff]];
  for (const bytes of invalid) {
    const b = Buffer.from(bytes);
    assert.is(decodeDoc(Buffer.concat([Buffer.from('a'), b, Buffer.from('漢')])), `a${String.fromCharCode(...bytes.map((x) => 0xdc00 + x))}漢`, b.toString('hex'));
    assert.ok(encodeDoc(decodeDoc(b)).equals(b), b.toString('hex'));
  }
});

test('point 2: report.json in a run dir is never written through a symlink (the run dir may be untrusted)', async () => {
  const f = fixture();
  const victim = join(f.root, 'victim.txt');
  writeFileSync(victim, 'keep me');
  symlinkSync(victim, join(f.runDir, 'report.json'));
  symlinkSync(victim, join(f.runDir, 'report.md'));
  assert.is((await report(f)).code, 0);
  assert.is(readFileSync(victim, 'utf8'), 'keep me');
  assert.ok(lstatSync(join(f.runDir, 'report.json')).isFile());
});

// ---- Point 3: markers ----

const P2 = (body: string) => `# Phase 2\n\n${body}\n## Notes\nmine\n`;
const L = [MARK.latestBegin, MARK.latestEnd, MARK.historyBegin, MARK.historyEnd];
const MARKER_CASES: [string, string, RegExp][] = [
  ['nested: history inside latest', P2(`${L[0]}\nx\n${L[2]}\n${L[3]}\n${L[1]}\n`), /line 5: the history block \(lines 5-6\) is nested inside the latest block \(lines 3-7\)/],
  ['overlapping', P2(`${L[0]}\n${L[2]}\n${L[1]}\n${L[3]}\n`), /line 4: the history block \(lines 4-6\) overlaps the latest block/],
  ['duplicated begin', P2(`${L[0]}\n${L[1]}\n${L[2]}\n${L[3]}\n${L[0]}\n`), /line 7: marker .*latest:begin.* appears again \(first on line 3\)/],
  ['unbalanced: begin without end', P2(`${L[0]}\n${L[2]}\n${L[3]}\n`), /line 3: marker .*latest:begin.* has no .*latest:end.* after it/],
  ['end before begin', P2(`${L[1]}\n${L[0]}\n${L[2]}\n${L[3]}\n`), /line 3: marker .*latest:end.* comes before its/],
  ['marker sharing a line', P2(`text ${L[0]}\n${L[1]}\n${L[2]}\n${L[3]}\n`), /line 3: marker .* must stand on a line of its own/],
  ['unknown marker', P2(`<!-- npu-block-gate:latest:begn -->\n`), /line 3: .* is not an npu-block-gate marker/],
];
for (const [name, text, message] of MARKER_CASES) {
  test(`point 3: ${name} is refused naming the line; no document changed, exit 2, the verdict kept`, async () => {
    const f = fixture({ phase2: text });
    await docsRefused(f, 2, new RegExp(`phase2_block\\.md: ${message.source}`));
  });
}

test('point 3: a duplicated TODO.md marker is refused naming the line', async () => {
  const dup = `- x ${MARK.blocker}\n`;
  const f = fixture({ todo: TODO_MD.replace('(none yet)\n', `(none yet)\n${dup}${dup}`) });
  await docsRefused(f, 2, /TODO\.md: line 14: marker .*phase2-blocker.* appears again \(first on line 13\)/);
});

test('point 3: a prompt that spells a marker cannot break the next run', async () => {
  const f = fixture({ probe: (p) => { p.prompt.text = `hi ${MARK.latestEnd} ${MARK.historyBegin}`; } });
  assert.is((await report(f)).code, 0);
  assert.is((await report(f)).code, 0);
});

// ---- Point 4: only regular files inside the run dir ----

function reportChild(f: Fixture, timeoutMs = 30_000) {
  return spawnSync(process.execPath, [CLI, 'report', '--run-dir', f.runDir, '--no-docs'], { encoding: 'utf8', timeout: timeoutMs });
}

test('point 4: a FIFO as a tensor or as probe.json is refused at once (no hang)', () => {
  for (const victim of ['block0.npu.npy', 'probe.json']) {
    const f = fixture();
    rmSync(join(f.runDir, victim));
    const mk = spawnSync('mkfifo', [join(f.runDir, victim)]);
    if (mk.status !== 0) skip('mkfifo', `mkfifo failed: ${(mk.stderr?.toString() || mk.error?.message || `exit ${mk.status}`).trim()}`);
    const r = reportChild(f);
    assert.is(r.error, undefined, `${victim}: the CLI hung (${r.error})`);
    assert.is(r.status, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`${victim.replace('.', '\\.')}: is a FIFO \\(named pipe\\), not a regular file`));
  }
});

test('point 4: a directory or a device as a tensor is refused naming it', async () => {
  const f = fixture();
  rmSync(join(f.runDir, 'block0.ref.npy'));
  mkdirSync(join(f.runDir, 'block0.ref.npy'));
  await refused(f, 2, /block0\.ref\.npy: is a directory, not a regular file/);
  if (process.getuid?.() === 0) {
    const g = fixture();
    rmSync(join(g.runDir, 'block0.npu.npy'));
    if (spawnSync('mknod', [join(g.runDir, 'block0.npu.npy'), 'c', '1', '5']).status === 0) {
      await refused(g, 2, /block0\.npu\.npy: is a device, not a regular file/);
    }
  }
});

test('point 4: a tensor symlinked outside the run dir is refused, and one inside too (issue 25: never followed)', async () => {
  const f = fixture();
  const outside = join(f.root, 'elsewhere.npy');
  renameSync(join(f.runDir, 'block0.ref.npy'), outside);
  symlinkSync(outside, join(f.runDir, 'block0.ref.npy'));
  await refused(f, 2, /block0\.ref\.npy: is a symlink: a run dir's files are read only as regular files inside it, never through a link \(not followed\)/);
  const g = fixture();
  mkdirSync(join(g.runDir, 'sub'));
  renameSync(join(g.runDir, 'block0.ref.npy'), join(g.runDir, 'sub/ref.npy'));
  symlinkSync('sub/ref.npy', join(g.runDir, 'block0.ref.npy'));
  await refused(g, 2, /block0\.ref\.npy: is a symlink: a run dir's files are read only as regular files inside it, never through a link \(not followed\)/);
});

// ---- Point 5: bounded inflate ----

test('point 5: an .npz member that inflates past its declared size is stopped there', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nbg-bomb-'));
  // The member declares (and its header promises) 256 KiB, but its stream holds 32 MiB of zeros.
  const head = npyBytes(npyHeader('<f4', [64, 1024]), Buffer.alloc(0));
  const honest = Buffer.concat([head, Buffer.alloc(64 * 1024 * 4)]);
  const bomb = Buffer.concat([head, Buffer.alloc(32 << 20)]);
  const z = zipBytes([{ name: 'x.npy', data: honest, deflate: true }]);
  const stream = deflateRawSync(bomb);
  const lie = patchZipStream(z, honest, stream);
  writeFileSync(join(dir, 'bomb.npz'), lie);
  assert.throws(() => openTensor(join(dir, 'bomb.npz')), (e: unknown) => e instanceof InputError && /bomb\.npz: member 'x\.npy' inflates to more than the 262272 bytes its directory entry declares \(stopped there\)/.test((e as Error).message));
});

test('point 5: a declared size over the cap, or one that disagrees with the member\'s header, is refused before inflating', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nbg-bomb-'));
  const x = npyBytes(npyHeader('<f4', [2, 3]), f32Bytes([1, 2, 3, 4, 5, 6]));
  const z = zipBytes([{ name: 'x.npy', data: x, deflate: true }]);
  const big = setDeclaredSize(z, NPZ_MAX_INFLATED + 1);
  writeFileSync(join(dir, 'big.npz'), big);
  assert.throws(() => openTensor(join(dir, 'big.npz')), /big\.npz: member 'x\.npy' declares 1073741825 bytes uncompressed; at most 1073741824/);
  writeFileSync(join(dir, 'wrong.npz'), setDeclaredSize(z, x.length + 4096));
  assert.throws(() => openTensor(join(dir, 'wrong.npz')), /wrong\.npz: member 'x\.npy' is refused before inflating: payload is .* but shape \(2, 3\)/);
});

/** The zip with its one member's uncompressed size (central and local) set to `size`. */
function setDeclaredSize(z: Buffer, size: number): Buffer {
  const b = Buffer.from(z);
  b.writeUInt32LE(size >>> 0, 22); // local header
  const cd = b.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
  b.writeUInt32LE(size >>> 0, cd + 24);
  if (size > 0xffffffff) throw new Error('zip32 only');
  return b;
}

/** The zip of `honest` with its deflate stream replaced by `stream` (sizes and CRC kept). */
function patchZipStream(z: Buffer, honest: Buffer, stream: Buffer): Buffer {
  const nameLen = z.readUInt16LE(26);
  const extraLen = z.readUInt16LE(28);
  const start = 30 + nameLen + extraLen;
  const oldLen = z.readUInt32LE(18);
  const local = Buffer.from(z.subarray(0, start));
  local.writeUInt32LE(stream.length, 18);
  const rest = Buffer.from(z.subarray(start + oldLen));
  const cd = rest.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
  rest.writeUInt32LE(stream.length, cd + 20);
  const eocd = rest.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  rest.writeUInt32LE(start + stream.length, eocd + 16);
  void honest;
  return Buffer.concat([local, stream, rest]);
}

// ---- Point 6: a broken reference is an error, not a FAIL ----

const REF_FAULTS: [string, (ref: number[][]) => void, RegExp][] = [
  ['a NaN', (ref) => { ref[2][3] = NaN; }, /row 2, column 3 of the reference is NaN \(a real token\)/],
  ['an Inf', (ref) => { ref[0][0] = -Infinity; }, /row 0, column 0 of the reference is -Inf \(a real token\)/],
  ['an all-zero row', (ref) => { ref[4].fill(0); }, /1 of the reference's real rows is all zero \(first: row 4\)/],
  ['a constant row', (ref) => { ref[1].fill(0.25); }, /row 1 of the reference is constant \(every one of its 16 values is 0\.25\) on a real token/],
  ['an all-zero reference', (ref) => { for (const r of ref) r.fill(0); }, /every one of the reference's 5 real rows is all zero/],
];
for (const [name, breakIt, message] of REF_FAULTS) {
  test(`point 6: ${name} in the reference is outcome error (exit 3) naming the reference, never a gate verdict`, async () => {
    const ref = refValues();
    const npu = [...ref.map((r) => [...r]), ...refValues(PADDED - REAL_LEN, COLS, 3)];
    breakIt(ref);
    const f = fixture({ ref, npu });
    const r = await refused(f, 3, new RegExp(`block0\\.ref\\.npy: the reference is broken: ${message.source}; not a verdict on the NPU`), ['--json']);
    const rep = fromJson<Report>(r.out);
    assert.is(rep.outcome, 'error');
    assert.equal(rep.gates, []);
  });
}

// ---- Point 7: inputs taken on trust ----

test('point 7: a dtype declared f16 for an f32 file is refused naming the file and the field', async () => {
  const f = fixture({ probe: (p) => { p.tensors.npu.dtype = 'f16'; } });
  await refused(f, 2, /block0\.npu\.npy: holds f32 but probe\.json tensors\.npu\.dtype says f16/);
});

test('point 7: --commit must be a hex id or "uncommitted"; a bad one multiplies nothing', async () => {
  const f = fixture();
  for (const bad of ['a|b', 'abc\ndef0123', 'main', 'abc12', 'g123456']) {
    const r = await report(f, ['--commit', bad]);
    assert.is(r.code, 2);
    assert.match(errorLine(r), /--commit must be a hex commit id \(7 to 64 hex digits\) or "uncommitted"/);
  }
  assert.is((await report(f, ['--commit', 'uncommitted'])).code, 0);
  assert.is((await report(f, ['--commit', 'ABCDEF1234567'])).code, 0);
  assert.is((await report(f, ['--commit', 'abcdef1234567'])).code, 0);
  const rows = readFileSync(f.phase2, 'utf8').split('\n').filter((l) => /^\| \d{4}-/.test(l));
  assert.is(rows.length, 2, rows.join('\n'));
});

test('point 7: numbers are strict decimals with ranges; = form and negative values handled; --timeout has a maximum', async () => {
  const f = fixture();
  const bad: [string[], RegExp][] = [
    [['--threshold', '0x1'], /--threshold must be a decimal number in \(0, 1\], got "0x1"/],
    [['--threshold', '1e-2'], /--threshold must be a decimal number/],
    [['--threshold', ' 0.9'], /--threshold must be a decimal number/],
    [['--threshold', '-0.5'], /--threshold must be a decimal number in \(0, 1\], got "-0\.5"/],
    [['--threshold=-0.5'], /--threshold must be a decimal number in \(0, 1\], got "-0\.5"/],
    [['--threshold', 'Infinity'], /--threshold must be a decimal number/],
    [['--threshold', '0'], /--threshold must be a decimal number in \(0, 1\]/],
  ];
  for (const [args, message] of bad) {
    const r = await report(f, args);
    assert.is(r.code, 2, `${args}: ${r.err}`);
    assert.match(errorLine(r), message);
  }
  assert.is((await report(f, ['--threshold=0.5'])).code, 0);
  const model = mkdtempSync(join(tmpdir(), 'nbg-m-'));
  for (const t of ['2147484', '-1', '0', '1e3', '0x10']) {
    const r = await cli(['check', '--model-dir', model, '--timeout', t]);
    assert.is(r.code, 2, r.err);
    assert.match(errorLine(r), /--timeout must be a decimal number of seconds in \(0, 2147483\]/);
  }
  const r = await cli(['check', '--model-dir', join(model, 'nope'), '--timeout=2147483']);
  assert.match(errorLine(r), /model dir does not exist/); // the maximum itself is accepted
});

test('point 7: --out on an existing run dir asks for --force; a stale report.json never survives a failed judge', async () => {
  const f = fixture();
  assert.is((await report(f)).code, 0);
  assert.ok(existsSync(join(f.runDir, 'report.json')));
  // A later judge of the same run dir that fails leaves no report.json saying pass.
  f.probe.timings.total = 'soon';
  f.save();
  const r = await report(f);
  assert.is(r.code, 2);
  assert.not.ok(existsSync(join(f.runDir, 'report.json')) || existsSync(join(f.runDir, 'report.md')));
  // check --out on it: refused before the probe runs, unless --force.
  const c = await cli(['check', '--model-dir', f.modelDir, '--out', f.runDir]);
  assert.is(c.code, 2);
  assert.match(errorLine(c), new RegExp(`${f.runDir}: already holds a run; pass --force to replace it, or choose another --out`));
  assert.ok(existsSync(join(f.runDir, 'probe.json')), 'untouched');
});

// ---- Point 8: user filesystem mistakes ----

test('point 8: phase2_block.md or TODO.md a directory is exit 2 naming it, no document written (the verdict is kept)', async () => {
  const f = fixture();
  mkdirSync(f.phase2);
  await docsRefused(f, 2, /phase2_block\.md: is a directory, not a regular file/);
  const g = fixture();
  rmSync(g.todo);
  mkdirSync(g.todo);
  await docsRefused(g, 2, /TODO\.md: is a directory, not a regular file/);
});

test('point 8: --out an existing file and --cache-dir a file are exit 2 naming them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nbg-p8-'));
  const file = join(dir, 'a-file');
  writeFileSync(file, 'x');
  const model = join(dir, 'model');
  mkdirSync(model);
  const out = await cli(['check', '--model-dir', model, '--out', file]);
  assert.is(out.code, 2);
  assert.match(errorLine(out), new RegExp(`${file}: is an existing file, not a directory`));
  const cache = await cli(['check', '--model-dir', model, '--out', join(dir, 'run'), '--cache-dir', file]);
  assert.is(cache.code, 2);
  assert.match(errorLine(cache), new RegExp(`${file}: --cache-dir is a file, not a directory`));
  assert.is(readFileSync(file, 'utf8'), 'x');
});

test('point 8: a read-only model dir is exit 2 saying so; no document written (the verdict is kept)', async () => {
  const f = fixture();
  const t = mountTmpfs(256);
  if (typeof t === 'string') {
    if (process.getuid?.() === 0) skip('tmpfs', t); // root writes through a mode 0555 dir: only a read-only mount refuses it
    chmodSync(join(f.modelDir, 'docs/development_progress'), 0o555);
    chmodSync(f.modelDir, 0o555);
    await docsRefused(f, 2, /permission denied; nothing was changed/);
    return;
  }
  try {
    cpSync(f.modelDir, join(t.dir, 'tiny_m'), { recursive: true });
    t.remount(true);
    const g = { ...f, modelDir: join(t.dir, 'tiny_m'), todo: join(t.dir, 'tiny_m/TODO.md'), snapshot: f.snapshot };
    const before = readFileSync(g.todo);
    const r = await cli(['report', '--run-dir', f.runDir, '--model-dir', g.modelDir]);
    assert.is(r.code, 2, r.err);
    assert.match(errorLine(r), /tiny_m\/docs\/development_progress\/phase2_block\.md: cannot (write|create the directory).*: read-only file system; nothing was changed/);
    assert.ok(readFileSync(g.todo).equals(before));
    assertVerdictKept(f.runDir, 2);
  } finally {
    t.unmount();
  }
});

test('point 2/8: disk full while writing the documents: exit 3 "disk full", every document as before, the verdict kept (tmpfs)', async () => {
  const t = mountTmpfs(64);
  if (typeof t === 'string') skip('tmpfs', t);
  try {
    // TODO.md large, phase2_block.md new: the first prepared file fits, the second does not, and
    // the first must not be left behind.
    const f = fixture();
    const model = join(t.dir, 'tiny_m');
    mkdirSync(model);
    writeFileSync(join(model, 'TODO.md'), TODO_MD + `\n## Notes\n${'hand-written note\n'.repeat(1200)}`);
    const before = readFileSync(join(model, 'TODO.md'));
    t.fill(12 * 1024);
    const r = await cli(['report', '--run-dir', f.runDir, '--model-dir', model]);
    assert.is(r.code, 3, r.err);
    assert.match(errorLine(r), /tiny_m\/(TODO\.md|docs\/development_progress\/phase2_block\.md): cannot (write|create the directory).*: disk full; nothing was changed/);
    assert.ok(readFileSync(join(model, 'TODO.md')).equals(before), 'TODO.md as before');
    assert.not.ok(existsSync(join(model, 'docs')), 'no docs dir left behind');
    assertVerdictKept(f.runDir, 3);
  } finally {
    t.unmount();
  }
});

test('point 8: disk full under --out while the probe writes: exit 3 saying "disk full" (tmpfs, real probe)', async () => {
  if (!findNumpyPython()) skip('numpy', 'no Python with numpy (NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3)');
  const t = mountTmpfs(64);
  if (typeof t === 'string') skip('tmpfs', t);
  try {
    const tree = copyAirMini();
    const r = await cli(['check', '--model-dir', tree.model('tiny_llama'), '--out', join(t.dir, 'run'), '--no-docs', '--no-cache']);
    assert.is(r.code, 3, r.err);
    assert.match(errorLine(r), new RegExp(`${t.dir}/run: (.*: )?disk full`));
  } finally {
    t.unmount();
  }
});

// ---- Point 9: documents by the seed's template ----

const T = (over: Partial<Report> = {}) => fakeReport(fakeMetrics(), over);

test('point 9: only the Phase 2 line under "## Phase status" is ticked; none there is said', () => {
  const other = '# D\n\n## Notes\n- [ ] 2: Single-Block Validation (copied from the template)\n';
  const none = updateTodo(other, T());
  assert.is(none.text, other);
  assert.match(none.notes.join('\n'), /has no "## Phase status" section .* so Phase 2 was not ticked/);
  const noLine = updateTodo('# D\n\n## Phase status\n- [ ] 1: Kernel Validation\n', T());
  assert.match(noLine.notes.join('\n'), /has no "- \[ \] 2: Single-Block Validation" line under "## Phase status"/);
  const both = updateTodo(`# D\n\n## Notes\n- [ ] 2: Single-Block Validation\n\n## Phase status\n- [ ] 2: Single-Block Validation\n`, T());
  assert.is(both.text, `# D\n\n## Notes\n- [ ] 2: Single-Block Validation\n\n## Phase status\n- [x] 2: Single-Block Validation\n`);
  const fenced = updateTodo('# D\n\n```\n## Phase status\n- [ ] 2: Single-Block Validation\n```\n', T());
  assert.match(fenced.notes.join('\n'), /no "## Phase status" section/);
});

test('point 9: the prerequisite goes under Phase 4 of "## Phase status", never at the end of the file', () => {
  const r = T();
  r.integration!.workarounds = [{ id: 'qkv_bias', detail: 'qkv_bias=True', prerequisite: 'Phase 4/5 prerequisite: keep the bias wrappers' }];
  const text = '# D\n\n## Phase status\n- [ ] 2: Single-Block Validation\n- [ ] 3: Full-Model Validation\n\n## Notes\nend\n';
  const out = updateTodo(text, r).text;
  assert.is(out, text.replace('- [ ] 3: Full-Model Validation\n', '- [ ] 3: Full-Model Validation\n  - Phase 4/5 prerequisite: keep the bias wrappers (qkv_bias=True) <!-- npu-block-gate:prereq:qkv_bias -->\n').replace('- [ ] 2', '- [x] 2'));
  const none = updateTodo('# D\nno status\n', r);
  assert.is(none.text, '# D\nno status\n');
  assert.match(none.notes.join('\n'), /the Phase 4\/5 prerequisite for qkv_bias was not written: Phase 4\/5 prerequisite: keep the bias wrappers/);
});

test('point 9: a blockers heading the tool added goes once empty: fail then pass restores the file byte for byte (bar the tick)', () => {
  const fail = fakeReport(fakeMetrics({ whole: 0.5 }));
  const pass = T();
  for (const original of [
    '# D\n\n## Phase status\n- [ ] 2: Single-Block Validation\n\n## Notes\nmine\n',
    '# D\n\n## Phase status\n- [ ] 2: Single-Block Validation\n## Notes\nmine\n',
    '# D\r\n\r\n## Phase status\r\n- [ ] 2: Single-Block Validation\r\n',
    '# D\n\n## Phase status\n- [ ] 2: Single-Block Validation',
    '# D\n\n## Phase status\n- [ ] 2: Single-Block Validation\n\n\n',
    '# D\nno status section\n',
  ]) {
    const failed = updateTodo(original, fail).text;
    assert.match(failed, /## Active blockers <!-- npu-block-gate:blockers -->\r?\n- Phase 2 single-block validation FAILS/);
    const passed = updateTodo(failed, pass).text;
    assert.is(passed, updateTodo(original, pass).text, JSON.stringify(original));
    assert.not.match(passed, /Active blockers/);
  }
});

test('point 9: a missing TODO.md is created from the deploy-new-llm template', () => {
  const out = updateTodo(null, T()).text;
  assert.is(out.split('\n').slice(0, 13).join('\n'), '# Deployment: tiny_llama\n\n## Phase status\n- [ ] 0: Build CPU Reference\n- [ ] 1: Kernel Validation\n- [x] 2: Single-Block Validation\n- [ ] 3: Full-Model Validation\n- [ ] 4: Prefill Optimization\n- [ ] 5: Decode Optimization\n- [ ] 6: Finalize & Learn\n- [ ] 7: Independent Evaluation\n\n## Active blockers');
});

test('point 9: the notes reach the log and report.json', async () => {
  const f = fixture({ todo: '# mine\nno phases here\n' });
  const r = await report(f, ['--json']);
  assert.is(r.code, 0, r.err);
  assert.match(r.err, /warning: docs: .*TODO\.md has no "## Phase status" section/);
  assert.match(fromJson<Report>(r.out).docs!.notes!.join('\n'), /not ticked/);
  assert.is(readFileSync(f.todo, 'utf8'), '# mine\nno phases here\n');
});

// ---- Point 10: newcomer friction ----

test('point 10: check, report and plan --help each print their own help; help <command> too', async () => {
  for (const cmd of ['check', 'report', 'plan']) {
    for (const args of [[cmd, '--help'], ['help', cmd], [cmd, '-h']]) {
      const r = await cli(args);
      assert.is(r.code, 0);
      assert.match(r.out, new RegExp(`^npu-block-gate .*\\n\\nUsage: npx npu-block-gate ${cmd} `), `${args}`);
    }
  }
  assert.match((await cli(['check', '--help'])).out, /--force/);
  assert.not.match((await cli(['report', '--help'])).out, /--force|--layers/);
  const u = await cli(['frobnicate']);
  assert.match(errorLine(u), /unknown command "frobnicate" \(commands: plan, check, report, agent, help\)/);
});

test('point 10: the Node engine range is true to every locked dependency (npm ci on the oldest Node warns of nothing)', () => {
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
  const lock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8'));
  // The oldest Node our range admits: its first version (e.g. "^20.17.0 || >=22.9.0" -> 20.17).
  const m = /(\d+)(?:\.(\d+))?/.exec(pkg.engines.node)!;
  const oldest = [Number(m[1]), Number(m[2] ?? 0)];
  assert.ok(satisfiesMinimum(pkg.engines.node, oldest));
  const bad: string[] = [];
  for (const [name, entry] of Object.entries<any>(lock.packages)) {
    const range: string | undefined = entry.engines?.node;
    if (range && !satisfiesMinimum(range, oldest)) bad.push(`${name || 'npu-block-gate'}@${entry.version} wants node ${range}`);
  }
  assert.equal(bad, [], `a Node ${oldest.join('.')} install would warn`);
});

/** Whether Node `oldest` (major, minor) meets an engines range (the forms npm packages use). */
function satisfiesMinimum(range: string, [major, minor]: number[]): boolean {
  return range.split('||').some((alt) => alt.trim().split(/\s+(?=[<>=^~])/).every((part) => {
    const m = /^(>=|>|\^|~|<=|<|=)?\s*v?(\d+|x|\*)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?/.exec(part.trim());
    if (!m || m[2] === '*' || m[2] === 'x') return true;
    const want = [Number(m[2]), m[3] === undefined || m[3] === 'x' ? 0 : Number(m[3])];
    const cmp = major !== want[0] ? major - want[0] : minor - want[1];
    switch (m[1]) {
      case '>=': return cmp >= 0;
      case '>': return cmp > 0 || (cmp === 0 && m[3] === undefined ? false : cmp > 0);
      case '^': return major === want[0] && cmp >= 0;
      case '~': return major === want[0];
      case '<': return cmp < 0;
      case '<=': return cmp <= 0;
      default: return major === want[0];
    }
  }));
}

// ---- Issue 16: two runs at once, the wrong model dir, a read-only disk, a new user ----

/** The history rows of phase2_block.md. */
const historyRows = (f: Fixture) => readFileSync(f.phase2, 'utf8').split('\n').filter((l) => /^\| \d{4}-/.test(l));

test('issue 16.2: report --model-dir of another model is exit 2 naming both models; nothing written', async () => {
  const f = fixture();
  const other = join(f.root, 'tiny_qwen25');
  mkdirSync(other);
  writeFileSync(join(other, 'TODO.md'), TODO_MD);
  const before = readFileSync(join(other, 'TODO.md'));
  const r = await cli(['report', '--run-dir', f.runDir, '--model-dir', other]);
  assert.is(r.code, 2, r.err);
  assert.match(errorLine(r), /probe\.json: model\.name "tiny_m" is not the model dir's name "tiny_qwen25"/);
  assert.ok(readFileSync(join(other, 'TODO.md')).equals(before));
  assert.not.ok(existsSync(join(other, 'docs')), 'no phase2_block.md for the other model');
});

test('issue 16.18: a short and a full id of the same commit make one history row, in either order', async () => {
  const full = 'abcdef0123456789abcdef0123456789abcdef01';
  for (const order of [[full, 'abcdef0'], ['abcdef0', full], ['ABCDEF0123', full.slice(0, 20)]]) {
    const f = fixture();
    for (const c of order) assert.is((await report(f, ['--commit', c])).code, 0);
    assert.is(historyRows(f).length, 1, `${order}: ${historyRows(f).join('\n')}`);
    assert.is((await report(f, ['--commit', '1234567'])).code, 0);
    assert.is(historyRows(f).length, 2, 'another commit is another row');
  }
});

test('issue 16.12: markers quoted in a fenced code block are text: the user\'s example stays, the live block is updated', async () => {
  const example = ['```markdown', MARK.latestBegin, '(an example of what the tool writes)', MARK.latestEnd, MARK.historyBegin, MARK.historyEnd, '```'].join('\n');
  const tilde = ['~~~', MARK.latestBegin, '~~~'].join('\n');
  const doc = `# Phase 2\n\nHow the markers look:\n\n${example}\n\n${tilde}\n\n${MARK.latestBegin}\nold\n${MARK.latestEnd}\n\n${MARK.historyBegin}\n${MARK.historyEnd}\n\n## Notes\nmine\n`;
  const f = fixture({ phase2: doc });
  const r = await report(f);
  assert.is(r.code, 0, r.err);
  const after = readFileSync(f.phase2, 'utf8');
  assert.ok(after.startsWith(`# Phase 2\n\nHow the markers look:\n\n${example}\n\n${tilde}\n\n${MARK.latestBegin}\n`), after.slice(0, 600));
  assert.not.match(after, /\nold\n/);
  assert.is(historyRows(f).length, 1);
  // Only fenced markers: the live sections are added outside the fence, and a second run finds them.
  const g = fixture({ phase2: `# Phase 2\n\n${example}\n` });
  assert.is((await report(g)).code, 0);
  assert.is((await report(g, ['--commit', '1234567'])).code, 0);
  const text = readFileSync(g.phase2, 'utf8');
  assert.ok(text.startsWith(`# Phase 2\n\n${example}\n`));
  assert.is(text.split(MARK.latestBegin).length, 3, 'one fenced and one live latest:begin');
  assert.is(historyRows(g).length, 2);
  // Inline code is text too: a marker quoted in backticks is not refused as "sharing a line".
  const h = fixture({ phase2: `# Phase 2\n\nThe tool writes \`${MARK.latestBegin}\` on a line of its own.\n` });
  assert.is((await report(h)).code, 0);
});

test('issue 16.12: TODO.md: a blocker or prerequisite line quoted in a fence is text, never replaced', async () => {
  const quoted = ['```', `- Phase 2 single-block validation FAILS at abc (example) ${MARK.blocker}`, `  - a prerequisite (example) ${MARK.prereq('qkv_bias')}`, `- x ${MARK.blocker}`, '```'].join('\n');
  const f = fixture({ todo: TODO_MD.replace('## Resolved config', `${quoted}\n\n## Resolved config`) });
  const r = await report(f);
  assert.is(r.code, 0, r.err);
  const after = readFileSync(f.todo, 'utf8');
  assert.ok(after.includes(quoted), after);
  assert.match(after, /- \[ \] 4: Prefill Optimization\n {2}- Phase 4\/5 prerequisite: .* <!-- npu-block-gate:prereq:qkv_bias -->\n/);
});

test('issue 16.13: a marker in probe.json model.name is exit 2 naming probe.json and model.name, not a document', async () => {
  for (const name of [`tiny_m${MARK.latestBegin}`, 'a-->b', 'x<!--y', '../tiny_m', 'a/b']) {
    const f = fixture({ probe: (p) => { p.model.name = name; } });
    await refused(f, 2, /probe\.json: model\.name must be a directory name/);
  }
});

test('issue 16.15: head_dim must agree with n_heads and emb_dim unless the config declares it; a wild one is refused', async () => {
  for (const hd of [1e15, 256, 4]) {
    const f = fixture({ probe: (p) => { p.model.config.head_dim = hd; } });
    await refused(f, 2, /probe\.json: model\.config\.head_dim \S+ does not agree with emb_dim 16 \/ n_heads 2 = 8/);
  }
  // A config that declares its head_dim (Qwen3: 128 with emb_dim 1024 and 16 heads) is taken, within reason.
  const ok = fixture({ probe: (p) => { Object.assign(p.model.config, { head_dim: 16, head_dim_explicit: true }); } });
  const r = await report(ok, ['--json']);
  assert.is(r.code, 0, r.err);
  assert.is(fromJson<Report>(r.out).thresholds.headDim, 16);
  const wild = fixture({ probe: (p) => { Object.assign(p.model.config, { head_dim: 1e15, head_dim_explicit: true }); } });
  await refused(wild, 2, /probe\.json: model\.config\.head_dim 1000000000000000 is not a plausible head size/);
});

test('issue 16.4: a long prompt recorded by our own probe passes our own validation (defaults.differs)', async () => {
  const prompt = 'The capital of France is '.repeat(400);
  const f = fixture({
    probe: (p) => {
      p.prompt.text = prompt;
      p.defaults.differs = [`prompt: ${JSON.stringify(prompt)} here (--prompt), make diagnosis runs 'The capital of France is' (Makefile PROMPT)`];
    },
  });
  const r = await report(f);
  assert.is(r.code, 0, r.err);
});

test('issue 16.14: a NaN in a boundary\'s reference is an error row for that boundary, never a hint blaming the NPU', async () => {
  const f = fixture({
    probe: (p) => {
      const shape = [p.prompt.real_len, p.tensors.ref.shape[1]];
      const entry = (name: string, order: number, step: string) => ({
        name, order, step, launch: 'rms_gemms_rope', arg: 3, source: 'launch', produced_by: 'rms_gemms_rope',
        npu: { file: `boundaries/${order}-${name}.npu.npy`, dtype: 'f32', shape }, ref: { file: `boundaries/${order}-${name}.ref.npy`, dtype: 'f32', shape },
      });
      p.boundaries = {
        source: 'launches', table: 'scripts/probe/elf_boundaries.json#tiny_m', emulated: false, reference: 'hf-layer0-hooks/1', layout: 'seq-first',
        entries: [entry('q', 2, 'Q/K/V GEMM'), entry('attn_out', 6, 'FA'), entry('ffn_out', 20, 'residual add')], unpaired: [],
      };
    },
  });
  mkdirSync(join(f.runDir, 'boundaries'));
  const ref = refValues();
  const broken = refValues();
  broken[3][2] = NaN;
  for (const [n, r] of [['2-q', ref], ['6-attn_out', broken], ['20-ffn_out', ref]] as const) {
    writeFileSync(join(f.runDir, `boundaries/${n}.npu.npy`), npyOf(ref));
    writeFileSync(join(f.runDir, `boundaries/${n}.ref.npy`), npyOf(r));
  }
  const r = await report(f, ['--json']);
  assert.is(r.code, 0, r.err);
  const rep = fromJson<Report>(r.out);
  const lens = rep.lens!;
  assert.equal(lens.rows.map((x) => [x.name, x.below, x.error ?? null]), [
    ['q', false, null],
    ['attn_out', false, 'the reference is broken: row 3, column 2 of the reference is NaN (a real token); not a verdict on the NPU'],
    ['ffn_out', false, null],
  ]);
  assert.is(lens.firstBelow, null);
  assert.is(lens.hiding, null);
  assert.not.ok(rep.warnings.some((w) => w.id === 'lens'), 'no warning blaming the NPU');
  const text = (await report(f)).err + renderTerminal(rep) + readFileSync(join(f.runDir, 'report.md'), 'utf8');
  assert.not.match(text, /UNDER|❌ under|First boundary under|causal|likely/);
  assert.match(renderTerminal(rep), /attn_out .*ERROR/);
  assert.match(renderTerminal(rep), /attn_out: the reference is broken: row 3, column 2 .* is NaN/);
  assert.match(readFileSync(join(f.runDir, 'report.md'), 'utf8'), /attn_out.*error: the reference is broken/);
});

test('issue 16.17: --force removes only the files a run writes; a user\'s file in boundaries/, layers/ or bisect/ stays', () => {
  const f = fixture();
  const mine = ['boundaries/my-notes.txt', 'layers/keep.npy', 'bisect/README', 'notes.md'];
  const ours = ['boundaries/20-ffn_out.npu.npy', 'boundaries/20-ffn_out.ref.npy', 'layers/layer_00.npu.npy', 'layers/layer_01.ref.npy',
    'bisect/bisect.json', 'bisect/01-rms_gemms_rope.npy', 'bisect/launch-03-o_ffn.npy', 'probe.json', 'block0.npu.npy', 'report.md', 'probe.log'];
  for (const d of ['boundaries', 'layers', 'bisect', 'bisect/sub']) mkdirSync(join(f.runDir, d), { recursive: true });
  for (const n of [...mine, ...ours, 'bisect/sub/x']) writeFileSync(join(f.runDir, n), 'x');
  prepareRunDir(f.runDir, true);
  for (const n of [...mine, 'bisect/sub/x']) assert.ok(existsSync(join(f.runDir, n)), `${n} kept`);
  for (const n of ours) assert.not.ok(existsSync(join(f.runDir, n)), `${n} removed`);
  // Dirs of ours that end up empty go too.
  const g = fixture();
  mkdirSync(join(g.runDir, 'boundaries'));
  writeFileSync(join(g.runDir, 'boundaries/02-q.npu.npy'), 'x');
  prepareRunDir(g.runDir, true);
  assert.not.ok(existsSync(join(g.runDir, 'boundaries')));
});

test('issue 16.7: a read-only file system is "read-only file system", never "no such file", for --out and for the docs dir', async () => {
  const t = mountTmpfs(256);
  if (typeof t === 'string') skip('tmpfs', t);
  try {
    const f = fixture();
    const model = join(t.dir, 'tiny_m');
    mkdirSync(model);
    writeFileSync(join(model, 'TODO.md'), TODO_MD);
    t.remount(true);
    const out = await cli(['check', '--model-dir', f.modelDir, '--out', join(t.dir, 'run/deeper'), '--no-cache']);
    assert.is(out.code, 2, out.err);
    assert.match(errorLine(out), new RegExp(`${t.dir}/run/deeper: cannot create the run dir: read-only file system`));
    const r = await cli(['report', '--run-dir', f.runDir, '--model-dir', model]);
    assert.is(r.code, 2, r.err);
    assert.match(errorLine(r), /tiny_m\/docs(\/development_progress)?: cannot create the directory: read-only file system; nothing was changed/);
    assert.not.match(r.err, /no such file/);
  } finally {
    t.unmount();
  }
});

test('issue 16.16: check with a refused document prints and keeps the verdict, and says how to re-judge', async () => {
  if (!findNumpyPython()) skip(missingNumpy()!);
  const tree = copyAirMini();
  const model = tree.model('tiny_llama');
  const phase2 = join(model, 'docs/development_progress/phase2_block.md');
  mkdirSync(join(model, 'docs/development_progress'), { recursive: true });
  writeFileSync(phase2, `# mine\n\n${MARK.latestBegin}\n${MARK.historyBegin}\n${MARK.historyEnd}\n`);
  const before = readFileSync(phase2);
  const out = join(tree.root, 'run');
  const r = await cli(['check', '--model-dir', model, '--out', out, '--no-cache']);
  assert.is(r.code, 2, r.err);
  assert.match(errorLine(r), /phase2_block\.md: line 3: marker .*latest:begin.* has no .*latest:end.* after it/);
  assert.match(r.out, /^PASS {2}tiny_llama/m, 'the verdict is printed');
  assert.match(r.out, /G4 +result documented .* SKIP/);
  assert.match(r.out, new RegExp(`re-judge this run dir with \`npx npu-block-gate report --run-dir ${out}\``));
  assert.ok(readFileSync(phase2).equals(before));
  assertVerdictKept(out, 2);
  // Fixed by hand, the same run dir is judged and documented without running anything again.
  writeFileSync(phase2, `# mine\n`);
  const again = await cli(['report', '--run-dir', out, '--model-dir', model]);
  assert.is(again.code, 0, again.err);
  assert.match(readFileSync(phase2, 'utf8'), /^# mine\n\n## Latest result \(npu-block-gate\)/);
});

test('issue 16.5: a run dir on read-only media is judged: the verdict printed and returned (--json), the files not written named', async () => {
  const t = mountTmpfs(1024);
  if (typeof t === 'string') skip('tmpfs', t);
  try {
    const f = fixture();
    assert.is((await report(f, ['--no-docs'])).code, 0);
    cpSync(f.runDir, join(t.dir, 'run'), { recursive: true });
    t.remount(true);
    const ro = join(t.dir, 'run');
    for (const args of [['--no-docs'], ['--model-dir', f.modelDir]]) {
      const r = await cli(['report', '--run-dir', ro, '--json', ...args]);
      assert.is(r.code, 0, r.err);
      const rep = fromJson<Report>(r.out);
      assert.is(rep.outcome, 'pass');
      const w = rep.warnings.find((x) => x.id === 'run_dir');
      assert.ok(w, JSON.stringify(rep.warnings));
      assert.match(w!.message, new RegExp(`report\\.json, report\\.md and report\\.html were not written \\(${ro}: cannot write: read-only file system\\); an earlier judge's report\\.json, report\\.md and report\\.html could not be removed`));
      assert.match(r.err, /warning: .*report\.json, report\.md and report\.html were not written/);
    }
    // The documents were written all the same (the model dir is writable).
    assert.match(readFileSync(f.todo, 'utf8'), /- \[x\] 2: Single-Block Validation/);
    const plain = await cli(['report', '--run-dir', ro, '--no-docs']);
    assert.is(plain.code, 0, plain.err);
    assert.match(plain.out, /^PASS {2}tiny_m/m);
    assert.match(plain.out, /warning: report\.json, report\.md and report\.html were not written/);
  } finally {
    t.unmount();
  }
});

/** A pid that was running a moment ago and is not now. */
function deadPid(): number {
  const r = spawnSync('true');
  return r.pid;
}

test('issue 16.1: ten concurrent report runs on one model dir, each with another commit, leave ten history rows', async () => {
  const f = fixture();
  const runs = Array.from({ length: 10 }, (_, i) => {
    const dir = join(f.root, `run-${i}`);
    cpSync(f.runDir, dir, { recursive: true });
    return dir;
  });
  const results = await Promise.all(runs.map((dir, i) => new Promise<{ code: number | null; err: string }>((res) => {
    const child = spawn(process.execPath, [CLI, 'report', '--run-dir', dir, '--model-dir', f.modelDir, '--commit', `${String(i).repeat(7)}abc`], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    child.on('close', (code) => res({ code, err }));
  })));
  for (const r of results) assert.is(r.code, 0, r.err);
  const rows = historyRows(f);
  assert.is(rows.length, 10, rows.join('\n'));
  assert.equal(new Set(rows.map((l) => l.split('|')[2].trim())).size, 10);
  assert.not.ok(existsSync(join(f.modelDir, '.npu-block-gate.lock')), 'the lock is released');
  // Some of them waited, and said so.
  assert.ok(results.some((r) => /docs: waiting for the lock on /.test(r.err)), results.map((r) => r.err).join('\n---\n'));
});

test('issue 16.1: a run that finds the documents locked waits and says so; a lock whose owner is gone is removed', async () => {
  const f = fixture();
  const lock = join(f.modelDir, '.npu-block-gate.lock');
  // Held by a live process (this one: the report below runs in it, so it must wait for the file to go).
  writeFileSync(lock, JSON.stringify({ pid: process.pid, host: hostname(), start: null, since: 'now', nonce: 'held' }));
  setTimeout(() => rmSync(lock, { force: true }), 400);
  const r = await report(f);
  assert.is(r.code, 0, r.err);
  assert.match(r.err, new RegExp(`docs: waiting for the lock on ${f.modelDir} \\(another run is writing its documents: pid ${process.pid} since now\\)`));
  assert.is(historyRows(f).length, 1);
  // Left by a run that was killed: removed, and the run goes on at once.
  writeFileSync(lock, JSON.stringify({ pid: deadPid(), host: hostname(), start: null, since: 'then', nonce: 'dead' }));
  const s = await report(f, ['--commit', '1234567']);
  assert.is(s.code, 0, s.err);
  assert.match(s.err, /docs: removed a stale lock .*\.npu-block-gate\.lock \(pid \d+ is no longer running\)/);
  assert.not.match(s.err, /waiting for the lock/);
  assert.not.ok(existsSync(lock));
});

test('issue 16.11: what a killed write left (hidden temp files, backups) is swept by the next run, and named', async () => {
  const f = fixture();
  const pid = deadPid();
  assert.is((await report(f)).code, 0);
  const left = [
    join(f.modelDir, `.TODO.md.nbg-${pid}-deadbeef.tmp`),
    join(f.modelDir, 'docs/development_progress', `.phase2_block.md.nbg-${pid}-0badf00d.tmp.bak`),
    join(f.runDir, `.report.json.nbg-${pid}-12345678.tmp`),
  ];
  for (const l of left) writeFileSync(l, 'x'.repeat(1000));
  const mine = join(f.modelDir, '.TODO.md.mine.tmp');
  writeFileSync(mine, 'not ours');
  const r = await report(f, ['--commit', '1234567']);
  assert.is(r.code, 0, r.err);
  for (const l of left) assert.not.ok(existsSync(l), `${l} swept`);
  assert.ok(existsSync(mine), 'a file that is not ours stays');
  assert.match(r.err, /docs: removed 2 file\(s\) an interrupted write left: .*\.TODO\.md\.nbg-.*\.phase2_block\.md\.nbg-/);
  assert.match(r.err, /docs: removed 1 file\(s\) an interrupted write left: .*\.report\.json\.nbg-/);
});

test('issue 16.6: EPIPE, or ENOSPC on stderr, never changes a judged run\'s exit code and never prints a stack trace (ENOSPC on stdout is said: issue 26.6)', async () => {
  const pass = fixture();
  const fail = fixture({ npu: [...refValues().map((row) => row.map((v) => -v)), ...refValues(PADDED - REAL_LEN, COLS, 3)] });
  const full = existsSync('/dev/full');
  for (const [f, want] of [[pass, 0], [fail, 1]] as const) {
    for (const json of [[], ['--json']]) {
      const args = [CLI, 'report', '--run-dir', f.runDir, '--no-docs', ...json];
      if (full) {
        const devFull = openSync('/dev/full', 'w');
        try {
          // Issue 26.6: output lost to a full stdout is said, and a pass whose output went nowhere is exit 3.
          const out = spawnSync(process.execPath, args, { stdio: ['ignore', devFull, 'pipe'], encoding: 'utf8' });
          assert.is(out.status, want || 3, `stdout full: ${out.stderr}`);
          assert.not.match(out.stderr, /\n\s+at |Unhandled/);
          assert.match(out.stderr, /\nnpu-block-gate: error \(infrastructure, not a verdict\): the output could not be written to stdout: disk full \(ENOSPC\)/);
          const err = spawnSync(process.execPath, args, { stdio: ['ignore', 'pipe', devFull], encoding: 'utf8' });
          assert.is(err.status, want, 'stderr full');
        } finally {
          closeSync(devFull);
        }
      }
      // A reader that is gone before anything is written (EPIPE).
      const epipe = await new Promise<{ code: number | null; err: string }>((res) => {
        const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        child.stdout.destroy();
        let err = '';
        child.stderr.on('data', (d) => { err += d; });
        child.on('close', (code) => res({ code, err }));
      });
      assert.is(epipe.code, want, epipe.err);
      assert.not.match(epipe.err, /\n\s+at |Unhandled|EPIPE/);
    }
  }
});

test('issue 16.9: a probe that exits 0 without finishing the run dir is exit 3 naming the probe, never bad input', async () => {
  if (!findNumpyPython()) skip(missingNumpy()!);
  const tree = copyAirMini();
  const prefill = join(tree.model('tiny_llama'), 'tiny_llama_prefill.py');
  writeFileSync(prefill, readFileSync(prefill, 'utf8').replace(/(def run_transformer_block\([^)]*\):\n)/, '$1    import os\n    os._exit(0)\n'));
  const out = join(tree.root, 'run');
  const r = await cli(['check', '--model-dir', tree.model('tiny_llama'), '--out', out, '--no-cache', '--no-docs']);
  assert.is(r.code, 3, r.err);
  assert.match(errorLine(r), new RegExp(`${out}: probe check \\(.*python.*\\) exited 0 but (wrote no probe\\.json|probe\\.json is still at stage config \\(block 0 never finished\\)): the probe, or the model code it ran, ended the process early`));
});

test('issue 16.10: a --python that is not a Python is exit 2 naming it, never a probe.log that was never written', async () => {
  const f = fixture();
  const dir = mkdtempSync(join(tmpdir(), 'nbg-py-'));
  const script = join(dir, 'not-python');
  writeFileSync(script, '#!/bin/sh\necho hello\n', { mode: 0o755 });
  const cases: [string, RegExp][] = [
    ['/bin/false', /--python \/bin\/false: is not a Python: it exited with status 1 without a word from the probe/],
    ['/bin/true', /--python \/bin\/true: is not a Python: it exited 0 without a word from the probe/],
    [dir, new RegExp(`--python ${dir}: is a directory, not a Python`)],
    ['/etc/passwd', /--python \/etc\/passwd: is not executable, not a Python/],
    [script, /--python .*not-python: is not a Python: it exited 0 without saying which Python it is/],
    [join(dir, 'nope'), /--python .*nope: not found/],
  ];
  for (const [py, want] of cases) {
    for (const cmd of ['check', 'plan']) {
      if (cmd === 'plan' && py === script) continue; // plan prints what the program printed; `hello` is not a plan, but it is output
      const out = join(dir, `run-${cmd}-${py.replace(/\W/g, '_')}`);
      const r = await cli([cmd, '--model-dir', f.modelDir, '--python', py, ...(cmd === 'check' ? ['--out', out, '--no-cache', '--no-docs'] : [])]);
      assert.is(r.code, 2, `${cmd} --python ${py}: ${r.err}`);
      assert.match(errorLine(r), want, `${cmd} --python ${py}`);
      assert.not.match(r.err, /probe\.log/);
    }
  }
});

test('issue 16.3: a symlink anywhere in the --model-dir path is resolved before the sandbox binds it (check and plan)', async () => {
  if (!findNumpyPython()) skip(missingNumpy()!);
  const tree = copyAirMini();
  const links = mkdtempSync(join(tmpdir(), 'nbg-links-'));
  symlinkSync(tree.root, join(links, 'air'));
  symlinkSync(tree.model('tiny_llama'), join(links, 'my_model'));
  for (const model of [join(links, 'air/programming_examples/llms/tiny_llama'), join(links, 'my_model')]) {
    const out = join(links, `run-${model.length}`);
    const r = await cli(['check', '--model-dir', model, '--out', out, '--no-cache', '--json']);
    assert.is(r.code, 0, r.err);
    assert.is(fromJson<Report>(r.out).model.name, 'tiny_llama');
    const p = await cli(['plan', '--model-dir', model]);
    assert.is(p.code, 0, p.err);
    // report with the link as --model-dir documents the same model.
    const again = await cli(['report', '--run-dir', out, '--model-dir', model]);
    assert.is(again.code, 0, again.err);
  }
  assert.is(historyRows({ phase2: join(tree.model('tiny_llama'), 'docs/development_progress/phase2_block.md') } as Fixture).length, 1);
});

/** Runs `fn` with these environment variables set (a value) or unset (undefined), restored after. */
async function withEnvVars<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(vars)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  }
}

test('issue 16 (newcomer): check and plan find the environment mlir-air\'s docs create in the tree, and say which and why', async () => {
  const noNumpy = missingNumpy();
  if (noNumpy) skip(noNumpy);
  const [exe, venv] = runPython('import sys; print(sys.executable); print(sys.prefix if sys.prefix != sys.base_prefix else "")').split('\n').map((l) => l.trim());
  const tree = copyAirMini();
  // The env in the tree: the test's own Python there. A venv's python linked elsewhere would leave
  // its pyvenv.cfg (and numpy) behind, so a venv is linked whole.
  if (venv) symlinkSync(venv, join(tree.root, 'sandbox'));
  else {
    mkdirSync(join(tree.root, 'sandbox/bin'), { recursive: true });
    symlinkSync(exe, join(tree.root, 'sandbox/bin/python3'));
  }
  const r = await withEnvVars({ NPU_BLOCK_GATE_PYTHON: undefined, VIRTUAL_ENV: undefined }, () =>
    cli(['check', '--model-dir', tree.model('tiny_llama'), '--out', join(tree.root, 'run'), '--no-cache', '--no-docs']));
  assert.is(r.code, 0, r.err);
  assert.match(r.err, new RegExp(`python: .*; from ${tree.root}/sandbox, in the mlir-air tree \\(mlir-air's utils/setup_python_packages\\.sh\\)\\)`));
  // plan runs outside the sandbox: it passes the tree's env over, saying so, and takes the user's Python (issue 25).
  const userBin = join(`${tree.root}-user`, 'bin');
  mkdirSync(userBin, { recursive: true });
  symlinkSync(exe, join(userBin, 'python3'));
  const p = await withEnvVars({ NPU_BLOCK_GATE_PYTHON: undefined, VIRTUAL_ENV: undefined, PATH: `${userBin}:${process.env.PATH}` }, () => cli(['plan', '--model-dir', tree.model('tiny_llama')]));
  assert.is(p.code, 0, p.err);
  assert.match(p.err, new RegExp(`python: passed over ${tree.root}/sandbox/bin/python3 \\(${tree.root}/sandbox, in the mlir-air tree \\(mlir-air's utils/setup_python_packages\\.sh\\)\\): inside the mlir-air tree or the model dir: plan runs outside the probe's sandbox`));
  assert.match(p.err, new RegExp(`python: ${userBin}/python3 \\(from python3 on PATH`));
});

test('issue 16 (newcomer): a PASS shows only what helps: no empty-lens line, SQNR and max_rel as information', async () => {
  const ref = refValues();
  ref[0][0] = 1e-7;
  const noise = (() => { let x = 5; return () => ((x = (x * 1103515245 + 12345) % 2147483648) / 2147483648 - 0.5) * 0.04; })();
  const npu = [...ref.map((row) => row.map((v) => v + noise())), ...refValues(PADDED - REAL_LEN, COLS, 3)];
  const f = fixture({
    ref, npu,
    probe: (p) => { p.boundaries = { source: 'returned', table: null, emulated: true, reference: null, layout: 'seq-first', entries: [], unpaired: [{ name: 'q', side: 'npu', reason: 'the reference is emulated: no HF model to hook' }] }; },
  });
  const r = await report(f, ['--no-docs']);
  assert.is(r.code, 0, r.err);
  assert.match(r.out, /^PASS/m);
  const json = fromJson<Report>((await report(f, ['--no-docs', '--json'])).out);
  assert.ok(json.metrics!.errors.sqnrDb < 40 && json.metrics!.errors.maxRel > 1000, JSON.stringify(json.metrics!.errors));
  assert.not.match(r.out, /lens: no boundary pairs/);
  assert.not.match(r.out, /< 40 dB/);
  assert.match(r.out, /errors \(informational\) .* max_rel \S+ \(where the reference is near 0\)/);
});

test('issue 16 (newcomer): colour on a terminal, none with NO_COLOR or when piped', async () => {
  const f = fixture();
  const tty = (): { w: NodeJS.WritableStream; text: () => string } => {
    let text = '';
    const w = Object.assign(new Writable({ write(c, _e, cb) { text += c; cb(); } }), { isTTY: true });
    return { w: w as unknown as NodeJS.WritableStream, text: () => text };
  };
  const run = async (env: Record<string, string | undefined>) => {
    const out = tty();
    const err = tty();
    const code = await withEnvVars(env, () => main(['report', '--run-dir', f.runDir, '--no-docs'], out.w, err.w));
    assert.is(code, 0, err.text());
    return out.text();
  };
  const colored = await run({ NO_COLOR: undefined, TERM: 'xterm' });
  assert.match(colored, /\x1b\[1m\x1b\[32mPASS\x1b\[0m {2}tiny_m/);
  assert.match(colored, /G1 .*\x1b\[32mPASS\x1b\[0m/);
  assert.not.match(await run({ NO_COLOR: '1', TERM: 'xterm' }), /\x1b/);
  assert.not.match(await run({ NO_COLOR: undefined, TERM: 'dumb' }), /\x1b/);
  assert.not.match((await report(f, ['--no-docs'])).out, /\x1b/, 'piped: no colour');
});

test('issue 16 (newcomer): the command the README and --help use runs from a clone after npm ci (npx); plan --help lists only exit codes that apply', async () => {
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
  assert.is(pkg.bin['npu-block-gate'], 'dist/cli.js');
  assert.match(readFileSync(join(REPO, 'dist/cli.js'), 'utf8'), /^#!\/usr\/bin\/env node\n/);
  // Executable as committed, and as a local build writes it (npx runs the file itself).
  const mode = spawnSync('git', ['ls-files', '-s', 'dist/cli.js'], { cwd: REPO, encoding: 'utf8' }).stdout;
  if (mode) assert.match(mode, /^100755 /);
  // The file on disk (a build wrote it, or the checkout did): executable by its owner and others.
  assert.is(statSync(join(REPO, 'dist/cli.js')).mode & 0o755, 0o755);
  const help = (await cli(['--help'])).out;
  assert.match(help, /^ {2}npx npu-block-gate check {2}--model-dir DIR/m);
  assert.match(help, /run it as `npx npu-block-gate`/);
  const npx = spawnSync('npx', ['--no-install', 'npu-block-gate', '--version'], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
  assert.is(npx.status, 0, `${npx.error ?? ''} ${npx.stderr}`);
  assert.is(npx.stdout.trim(), pkg.version);
  // Every command the README tells a user to type runs as written: npx, npm, or node dist/cli.js.
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const typed = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1].split('\n')).filter((l) => /^\S/.test(l));
  assert.ok(typed.length > 3, typed.join('\n'));
  for (const l of typed) assert.not.match(l, /^npu-block-gate /, `README: ${l}`);
  assert.match(readme, /npx npu-block-gate plan --model-dir/);
  // plan judges nothing: its help lists no gate failure.
  const plan = (await cli(['plan', '--help'])).out;
  assert.match(plan, /Exit codes: 0 the plan was printed/);
  assert.not.match(plan, /1 fail|\bgate\b.*exit/);
  assert.match((await cli(['check', '--help'])).out, /Exit codes: 0 pass, 1 fail \(a gate\)/);
});

test('issue 16 (newcomer): the demo writes nothing outside one temp dir, and says where it is and how to remove it', async () => {
  if (!findNumpyPython()) skip(missingNumpy()!);
  const home = mkdtempSync(join(tmpdir(), 'nbg-home-'));
  const runsBefore = existsSync(join(REPO, 'runs')) ? readdirSync(join(REPO, 'runs')).length : -1;
  const { demo } = (await import(join(REPO, 'scripts/demo.mjs'))) as { demo: (a: string[], o: object) => Promise<number> };
  let said = '';
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  delete env.NPU_BLOCK_GATE_CACHE_DIR;
  const code = await demo([], { cli: [process.execPath, CLI], env, stdio: 'ignore', log: (x: string) => { said += x; } });
  assert.is(code, 0, said);
  const dir = /everything it wrote is in (\S+):/.exec(said)?.[1];
  assert.ok(dir && existsSync(join(dir, 'run/report.json')), said);
  assert.match(said, new RegExp(`Remove it with: rm -rf ${dir}`));
  assert.ok(existsSync(join(dir, 'cache')), 'the caches are in it');
  assert.equal(readdirSync(home), [], 'nothing in ~ (no ~/.cache)');
  assert.is(existsSync(join(REPO, 'runs')) ? readdirSync(join(REPO, 'runs')).length : -1, runsBefore, 'nothing in the clone');
  // The embedded default shows the whole lens: every boundary inside the block, and its chart.
  const rep = fromJson<Report>(readFileSync(join(dir, 'run/report.json'), 'utf8'));
  assert.is(rep.outcome, 'pass');
  assert.ok(rep.lens!.rows.length >= 8, `${rep.lens!.rows.length} lens rows`);
  assert.equal(rep.lens!.unpaired, []);
  assert.match(readFileSync(join(dir, 'run/report.md'), 'utf8'), /```mermaid\n/);
  rmSync(dir, { recursive: true, force: true });
  // The stale_tail demo fails G2 and the lens names the boundary (the bisect the step).
  said = '';
  assert.is(await demo(['--emulate', '--inject', 'stale_tail'], { cli: [process.execPath, CLI], env, stdio: 'ignore', log: (x: string) => { said += x; } }), 1, said);
  const bug = /everything it wrote is in (\S+):/.exec(said)![1];
  const failed = fromJson<Report>(readFileSync(join(bug, 'run/report.json'), 'utf8'));
  assert.equal(failed.emulate, { runtime: failed.emulate!.runtime, inject: 'stale_tail' });
  assert.is(failed.lens!.firstBelow!.name, 'ffn_out');
  assert.is(failed.bisect!.offender!.step, 'residual2');
  rmSync(bug, { recursive: true, force: true });
});

test('issue 16 (air-mini): --emulate and --inject take the real tree\'s names there; AIR_MINI_INJECT is their alias; an old name says its new one', async () => {
  if (!findNumpyPython()) skip(missingNumpy()!);
  const tree = copyAirMini();
  const run = (extra: string[], env: Record<string, string | undefined> = {}) => withEnvVars({ AIR_MINI_INJECT: undefined, ...env }, () =>
    cli(['check', '--model-dir', tree.model('tiny_llama'), '--out', join(tree.root, `run-${Math.random().toString(36).slice(2)}`), '--no-cache', '--no-docs', '--json', ...extra]));
  // No NPU runs here: a held NPU lock is not waited for.
  const lockFile = join(tree.root, 'npu.lock');
  writeFileSync(lockFile, '');
  // Its own process group, ended whole (flock and its sleep, which holds the lock): killing flock
  // alone left the sleep holding the lock for two minutes, and an assertion failing here too.
  const holder = spawn('flock', [lockFile, 'sleep', '120'], { stdio: 'ignore', detached: true });
  const release = () => { try { process.kill(-holder.pid!, 'SIGKILL'); } catch { /* already gone */ } };
  let clean;
  try {
    await new Promise((r) => setTimeout(r, 300));
    clean = await run(['--emulate', '--timeout', '60'], { NPU_BLOCK_GATE_NPU_LOCK: lockFile });
  } finally {
    release();
  }
  assert.is(clean.code, 0, clean.err);
  const c = fromJson<Report>(clean.out);
  assert.equal(c.emulate!.inject, null);
  assert.ok(c.lens!.rows.length >= 8);
  assert.not.match(clean.err, /waiting for the NPU lock/);
  for (const [bug, boundary] of [['transposed_q_weight', 'q'], ['interleaved_rope', 'q_roped'], ['ignored_rmsnorm_weight', 'attn_norm']] as const) {
    const r = await run(['--emulate', '--inject', bug]);
    const rep = fromJson<Report>(r.out);
    assert.is(rep.emulate!.inject, bug, r.err);
    assert.is((rep.lens!.onset ?? rep.lens!.firstBelow)!.name, boundary, `${bug}: ${r.err.slice(-2000)}`);
  }
  // The variable alone means the same as --emulate --inject; the record says so.
  const alias = await run([], { AIR_MINI_INJECT: 'stale_tail' });
  assert.is(alias.code, 1, alias.err);
  assert.is(fromJson<Report>(alias.out).emulate!.inject, 'stale_tail');
  assert.match(alias.err, /AIR_MINI_INJECT=stale_tail: the same as --emulate --inject stale_tail/);
  const old = await run([], { AIR_MINI_INJECT: 'rope_layout' });
  assert.is(old.code, 2, old.err);
  assert.match(errorLine(old), /AIR_MINI_INJECT: 'rope_layout' is now called 'interleaved_rope'.*--emulate --inject interleaved_rope/);
});

test('issue 16.8: model code that writes to sys.stdout.buffer or sys.stdout.fileno() runs; its output goes to probe.log, never the protocol channel', async () => {
  if (!findNumpyPython()) skip(missingNumpy()!);
  const tree = copyAirMini();
  const prefill = join(tree.model('tiny_llama'), 'tiny_llama_prefill.py');
  const code = [
    '    import os, sys',
    '    sys.stdout.buffer.write(b"tree bytes \\xff\\n")',
    '    sys.stdout.buffer.flush()',
    '    os.write(sys.stdout.fileno(), b"tree fd write\\n")',
    '    os.write(sys.stdout.fileno(), b"probe-event: {\\"event\\": \\"config\\"}\\n")',
    '    assert not sys.stdout.isatty() and sys.stdout.encoding',
    '',
  ].join('\n');
  writeFileSync(prefill, readFileSync(prefill, 'utf8').replace(/(def run_transformer_block\([^)]*\):\n)/, `$1${code}`));
  const out = join(tree.root, 'run');
  const r = await cli(['check', '--model-dir', tree.model('tiny_llama'), '--out', out, '--no-cache', '--no-docs']);
  assert.is(r.code, 0, r.err);
  const log = readFileSync(join(out, 'probe.log'), 'utf8');
  assert.match(log, /tree bytes \uFFFD\n/);
  assert.match(log, /tree fd write\n/);
  assert.not.match(r.err, /tree fd write|tree bytes/);
});

test('issue 16.4: check with a prompt of thousands of characters (within the compiled seq_len) passes; the record says it briefly', async () => {
  if (!findNumpyPython()) skip(missingNumpy()!);
  const tree = copyAirMini();
  const prompt = `The capital of France is${' '.repeat(6000)}Paris, and the capital of Italy is`;
  const out = join(tree.root, 'run');
  const r = await cli(['check', '--model-dir', tree.model('tiny_llama'), '--out', out, '--no-cache', '--no-docs', `--prompt=${prompt}`, '--json']);
  assert.is(r.code, 0, r.err);
  const rep = fromJson<Report>(r.out);
  assert.is(rep.prompt!.text, prompt);
  const d = rep.defaults!.differs[0];
  assert.match(d, /^prompt: 'The capital of France is {176}'\.\.\. \(6058 characters\) here \(--prompt\)/);
  assert.ok(d.length < 600, `${d.length}`);
});

test('issue 16 (newcomer): plan ends with a one-line summary, always has a Step 2 line, and a missing package\'s fix names the interpreter', async () => {
  const py = findNumpyPython();
  if (!py) skip(missingNumpy()!);
  const mini = copyAirMini();
  const ok = await cli(['plan', '--model-dir', mini.model('tiny_llama')]);
  assert.is(ok.code, 0, ok.err);
  const okLines = ok.out.trimEnd().split('\n');
  assert.match(okLines[okLines.length - 1], /^summary: ready: every check passes/);
  assert.ok(okLines.some((l) => l.startsWith('step2')), ok.out);
  // The real-tree half: counted as a skip (never a silent pass) when the tree is not here.
  if (!realTreeRoot()) skip('real-tree', 'the real-tree half: no mlir-air tree (set NPU_BLOCK_GATE_MLIR_AIR)');
  const real = copyRealTree();
  const exe = runPython('import sys; print(sys.executable)').trim();
  const r = await cli(['plan', '--model-dir', real.model('qwen3_0_6b'), '--python', py]);
  assert.is(r.code, 0, r.err);
  const lines = r.out.trimEnd().split('\n');
  assert.match(lines.find((l) => l.startsWith('step2')) ?? '', /^step2: no workaround triggers \(emb_dim 1024 and hidden_dim 3072 are 1024-aligned; no qkv_bias\)/);
  const last = lines[lines.length - 1];
  assert.match(last, /^summary: (not ready on this machine: \d+ checks? fail here \(.*\); the tree itself is ready for Phase 2|ready: )/);
  const fail = lines.filter((l) => /^FAIL package-(torch|transformers|ml_dtypes) /.test(l));
  for (const l of fail) assert.match(l, new RegExp(`\\(fix: ${exe.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} -m pip install `), l);
});

test.run();
