// Artifacts: exact names with the matrix leg, an exact lookup, and a download that is bounded
// (zip bombs) and checked (digest) before anything is judged.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { deflateRawSync } from 'node:zlib';
import { artifactName, pickArtifact, modelSlug, verifyAndExtract, fileDigest, LocalStore, type FoundArtifact } from '../../src/github/artifact.ts';
import { extractZip, inflateBudget, DEFAULT_ZIP_LIMITS, type ZipLimits } from '../../src/github/unzip.ts';
import { writeZip } from '../../src/github/zip.ts';
import { crc32 } from '../../src/tensor/crc32.ts';
import { InputError, InfraError } from '../../src/errors.ts';

const tmp = () => mkdtempSync(join(tmpdir(), 'nbg-art-test-'));
const found = (name: string, id = 1): FoundArtifact => ({ id, name, size: 10, digest: null });

test('names: prefix, the model path, the matrix leg and the attempt', () => {
  assert.is(modelSlug('programming_examples/llms/tiny_llama'), 'programming_examples__llms__tiny_llama');
  assert.is(artifactName('phase2', 'programming_examples/llms/tiny_llama', null, 1), 'phase2-programming_examples__llms__tiny_llama-attempt1');
  assert.is(artifactName('phase2', 'llms/tiny', 'leg-0123abcd', 3), 'phase2-llms__tiny-leg-0123abcd-attempt3');
});

test('slugs never collide (issue 25): a/b vs a__b, x y vs x_y, a model named like a leg; plain names keep theirs', () => {
  // The names existing artifacts and run dirs carry.
  assert.is(modelSlug('programming_examples/llms/llama32_1b'), 'programming_examples__llms__llama32_1b');
  assert.is(modelSlug('llms/qwen25_0_5b'), 'llms__qwen25_0_5b');
  assert.is.not(modelSlug('a/b'), modelSlug('a__b'));
  assert.is.not(modelSlug('x y'), modelSlug('x_y'));
  assert.is(modelSlug('x_y'), 'x_y');
  const keys = ['a/b', 'a__b', 'a_/b', 'a/_b', 'a___b', 'a_/_b', 'x y', 'x_y', 'x  y', 'x\ty', 'x?y', 'x.y', 'x..y', '.x', '_x', 'x_', 'ä', 'm', 'm-leg-0123abcd', 'llms/tiny', 'llms/tiny-llama'];
  const slugs = keys.map(modelSlug);
  assert.is(new Set(slugs).size, keys.length, slugs.join(' '));
  // The same directory written another way is the same model.
  assert.is(modelSlug('a//b/'), modelSlug('a/b'));
  assert.is(modelSlug('./a/b'), modelSlug('a/b'));
  // Artifact names too, with a leg: model m-leg-0123abcd in no leg is not model m in leg-0123abcd.
  assert.is.not(artifactName('p', 'm-leg-0123abcd', null, 1), artifactName('p', 'm', 'leg-0123abcd', 1));
  assert.is(pickArtifact([found(artifactName('p', 'm-leg-0123abcd', null, 1), 1)], 'p', 'm', 1), null);
  for (const k of keys) assert.is(pickArtifact([found(artifactName('p', k, 'leg-0000aaaa', 2), 3)], 'p', k, 2)?.id, 3, k);
});

test('lookup is exact: tiny never picks up tiny-llama, a look-alike or another prefix', () => {
  const all = [found('phase2-llms__tiny-llama-attempt1', 1), found('phase2-llms__tiny-attemptX', 2), found('phase2-llms__tiny-attempt1-evil', 3), found('other-llms__tiny-attempt1', 4)];
  assert.is(pickArtifact(all, 'phase2', 'llms/tiny', 1), null);
  assert.is(pickArtifact([...all, found('phase2-llms__tiny-attempt1', 5)], 'phase2', 'llms/tiny', 1)?.id, 5);
  assert.is(pickArtifact(all, 'phase2', 'llms/tiny-llama', 1)?.id, 1);
});

test('lookup: the judged attempt wins, else the latest; two matrix legs for one model are refused', () => {
  const a = [found('p-m-attempt1', 1), found('p-m-attempt2', 2), found('p-m-attempt3', 3)];
  assert.is(pickArtifact(a, 'p', 'm', 2)?.id, 2);
  assert.is(pickArtifact(a, 'p', 'm', 9)?.id, 3);
  assert.is(pickArtifact(a, 'p', 'm', null)?.id, 3);
  assert.is(pickArtifact([found('p-m-leg-0000aaaa-attempt1', 7)], 'p', 'm', 1)?.id, 7);
  assert.throws(() => pickArtifact([found('p-m-leg-0000aaaa-attempt1'), found('p-m-leg-1111bbbb-attempt1')], 'p', 'm', 1), /several matrix legs/);
});

/** A zip with full control over what it declares (for bombs and lies). */
function craftZip(entries: { name: string; data: Buffer; declare?: number; method?: number; mode?: number }[]): Buffer {
  const locals: Buffer[] = [];
  const cen: Buffer[] = [];
  let off = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name);
    const method = e.method ?? 8;
    const body = method === 8 ? deflateRawSync(e.data) : e.data;
    const l = Buffer.alloc(30);
    l.writeUInt32LE(0x04034b50, 0);
    l.writeUInt16LE(method, 8);
    l.writeUInt32LE(crc32(e.data), 14);
    l.writeUInt32LE(body.length, 18);
    l.writeUInt32LE(e.declare ?? e.data.length, 22);
    l.writeUInt16LE(name.length, 26);
    locals.push(l, name, body);
    const c = Buffer.alloc(46);
    c.writeUInt32LE(0x02014b50, 0);
    c.writeUInt16LE((3 << 8) | 20, 4);
    c.writeUInt16LE(method, 10);
    c.writeUInt32LE(crc32(e.data), 16);
    c.writeUInt32LE(body.length, 20);
    c.writeUInt32LE(e.declare ?? e.data.length, 24);
    c.writeUInt16LE(name.length, 28);
    c.writeUInt32LE(((e.mode ?? 0o100644) << 16) >>> 0, 38);
    c.writeUInt32LE(off, 42);
    cen.push(c, name);
    off += 30 + name.length + body.length;
  }
  const cd = Buffer.concat(cen);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(off, 16);
  return Buffer.concat([...locals, cd, end]);
}

function zipFile(buf: Buffer): string {
  const p = join(tmp(), 'a.zip');
  writeFileSync(p, buf);
  return p;
}

const small: ZipLimits = { maxBytes: 4 * 1024 * 1024, floorBytes: 64 * 1024, maxRatio: 100, maxEntries: 50 };

test('an honest zip round-trips (our writer, our reader)', async () => {
  const z = zipFile(writeZip([{ name: 'probe.json', data: Buffer.from('{"a":1}') }, { name: 'bisect/s.npy', data: Buffer.alloc(5000, 7) }, { name: 'empty', data: Buffer.alloc(0) }]));
  const dest = tmp();
  const r = await extractZip(z, dest, small);
  assert.equal(r, { files: 3, bytes: 5007 });
  assert.is(readFileSync(join(dest, 'probe.json'), 'utf8'), '{"a":1}');
  assert.is(readFileSync(join(dest, 'bisect/s.npy')).length, 5000);
});

test('a ratio bomb is refused from its declared sizes, before anything is inflated', async () => {
  // 3 MiB of zeros deflate to ~3 KiB: a ~1000:1 ratio, over the 100:1 bound beyond the 64 KiB floor.
  const z = zipFile(craftZip([{ name: 'block0.npu.npy', data: Buffer.alloc(3 * 1024 * 1024) }]));
  const dest = tmp();
  await extractZip(z, dest, small).then(() => assert.unreachable(), (e) => {
    assert.instance(e, InputError);
    assert.match(e.message, 'zip bomb');
  });
  assert.equal(readdirSync(dest), [], 'nothing was written');
  assert.is(inflateBudget(10 * 1024 ** 3), DEFAULT_ZIP_LIMITS.maxBytes, 'never more than the absolute cap');
  assert.is(inflateBudget(1000), DEFAULT_ZIP_LIMITS.floorBytes);
});

test('an entry that inflates past what it declared is stopped while streaming', async () => {
  const z = zipFile(craftZip([{ name: 'liar.npy', data: Buffer.alloc(2 * 1024 * 1024), declare: 1000 }]));
  const dest = tmp();
  await extractZip(z, dest, { ...small, floorBytes: 4 * 1024 * 1024 }).then(() => assert.unreachable(), (e) => {
    assert.match(e.message, 'inflates past its declared 1000 bytes');
  });
  const left = existsSync(join(dest, 'liar.npy')) ? readFileSync(join(dest, 'liar.npy')).length : 0;
  assert.ok(left <= 1000 + 64 * 1024, `stopped early (${left} bytes written)`);
});

test('paths, links, encryption, odd methods, duplicates and CRC errors are refused', async () => {
  const cases: [string, Buffer, RegExp][] = [
    ['parent', craftZip([{ name: '../evil', data: Buffer.from('x') }]), /leaves the artifact/],
    ['absolute', craftZip([{ name: '/etc/x', data: Buffer.from('x') }]), /absolute/],
    ['backslash', craftZip([{ name: 'a\\..\\b', data: Buffer.from('x') }]), /backslash/],
    ['symlink', craftZip([{ name: 'link', data: Buffer.from('/etc/passwd'), mode: 0o120777 }]), /symlink/],
    ['bzip2', craftZip([{ name: 'b', data: Buffer.from('x'), method: 12 }]), /method 12/],
    ['duplicate', craftZip([{ name: 'a', data: Buffer.from('x') }, { name: 'a', data: Buffer.from('y') }]), /twice/],
    ['not a zip', Buffer.from('hello, this is not a zip file at all'), /not a zip/],
  ];
  for (const [what, buf, re] of cases) {
    await extractZip(zipFile(buf), tmp(), small).then(() => assert.unreachable(what), (e) => assert.match(e.message, re, what));
  }
  const bad = craftZip([{ name: 'a', data: Buffer.from('hello') }]);
  const at = bad.indexOf(Buffer.from('a')) + 1; // first byte of the deflated data
  bad[at] ^= 0xff;
  await extractZip(zipFile(bad), tmp(), small).then(() => assert.unreachable(), (e) => assert.match(e.message, /CRC|inflate/));
});

test('the digest recorded at upload is checked: a changed zip is refused', async () => {
  const z = zipFile(writeZip([{ name: 'probe.json', data: Buffer.from('{}') }]));
  const digest = await fileDigest(z);
  assert.match(digest, /^sha256:[0-9a-f]{64}$/);
  assert.is(await verifyAndExtract(z, { id: 1, name: 'n', size: 1, digest }, tmp(), small), null);
  assert.is(await verifyAndExtract(z, { id: 1, name: 'n', size: 1, digest: digest.slice(7) }, tmp(), small), null, 'a bare hex digest is sha256');
  await verifyAndExtract(z, { id: 1, name: 'n', size: 1, digest: `sha256:${'0'.repeat(64)}` }, tmp(), small).then(() => assert.unreachable(), (e) => {
    assert.instance(e, InfraError);
    assert.match(e.message, 'digest check');
  });
  assert.match((await verifyAndExtract(z, { id: 1, name: 'n', size: 1, digest: null }, tmp(), small)) ?? '', 'no recorded digest');
});

test('the local store uploads a zip with its digest, and the same name twice is an error that says why', async () => {
  const root = tmp();
  const dir = tmp();
  mkdirSync(join(dir, 'bisect'));
  writeFileSync(join(dir, 'probe.json'), '{}');
  writeFileSync(join(dir, 'bisect/b.npy'), 'x');
  const store = new LocalStore(root, 'acme', 'mlir-air', 5);
  await store.upload('p-m-attempt1', dir, null);
  await store.upload('p-m-attempt1', dir, null).then(() => assert.unreachable(), (e) => assert.match(e.message, 'already exists in run 5'));
  const list = await store.list({ owner: 'acme', repo: 'mlir-air', runId: 5, token: '' });
  assert.is(list.length, 1);
  assert.match(list[0].digest ?? '', /^sha256:/);
  const dest = tmp();
  await store.download({ owner: 'acme', repo: 'mlir-air', runId: 5, token: '' }, list[0], dest);
  assert.is(readFileSync(join(dest, 'bisect/b.npy'), 'utf8'), 'x');
});

test.run();
