import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { test, skip } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { InputError } from '../src/errors.ts';
import { bf16ToF32, f16ToF32, openTensor, readAll } from '../src/tensor/index.ts';
import type { OpenOptions } from '../src/tensor/types.ts';
import { missingNumpy, runPython } from './helpers/python.ts';
import { tempDir } from './helpers/tmp.ts';
import { f32Bytes, npyBytes, npyHeader, safetensorsBytes, u16Bytes, zipBytes } from './helpers/bytes.ts';

const tmp = tempDir('npu-block-gate-tensor-');
test.after(() => tmp.cleanup());

function write(name: string, bytes: Uint8Array): string {
  const p = tmp.path(name);
  writeFileSync(p, bytes);
  return p;
}

/** Same bits, NaN == NaN, -0 distinct from 0. */
function sameFloats(actual: Float32Array, expected: ArrayLike<number>, what: string): void {
  assert.is(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < actual.length; i++) {
    if (!Object.is(actual[i], Math.fround(expected[i]))) assert.unreachable(`${what}[${i}]: ${actual[i]} != ${expected[i]}`);
  }
}

/** An InputError, one line, naming the file. */
function rejects(path: string, opts: OpenOptions, pattern: RegExp): void {
  try {
    const t = openTensor(path, opts);
    t.close();
  } catch (err) {
    assert.instance(err, InputError, String(err));
    const msg = (err as Error).message;
    assert.ok(msg.includes(basename(path)), `message names the file: ${msg}`);
    assert.not.match(msg, /\n/);
    assert.match(msg, pattern);
    return;
  }
  assert.unreachable(`${path} was accepted`);
}

test('f16 widening: subnormals, extremes, signed zero, inf, NaN', () => {
  assert.is(f16ToF32(0x0001), 2 ** -24);
  assert.is(f16ToF32(0x03ff), 1023 * 2 ** -24);
  assert.is(f16ToF32(0x0400), 2 ** -14);
  assert.is(f16ToF32(0x7bff), 65504);
  assert.is(f16ToF32(0x3c00), 1);
  assert.is(f16ToF32(0xc000), -2);
  assert.ok(Object.is(f16ToF32(0x8000), -0));
  assert.is(f16ToF32(0x7c00), Infinity);
  assert.is(f16ToF32(0xfc00), -Infinity);
  assert.ok(Number.isNaN(f16ToF32(0x7e00)));
  assert.ok(Number.isNaN(f16ToF32(0xfc01)));
});

test('bf16 widening: exact top-half bits', () => {
  assert.is(bf16ToF32(0x3f80), 1);
  assert.is(bf16ToF32(0xc0a0), -5);
  assert.is(bf16ToF32(0x0001), 2 ** -133);
  assert.is(bf16ToF32(0x7f80), Infinity);
  assert.is(bf16ToF32(0xff80), -Infinity);
  assert.ok(Number.isNaN(bf16ToF32(0x7fc0)));
  assert.ok(Object.is(bf16ToF32(0x8000), -0));
});

const F16_EDGES = [0x0001, 0x03ff, 0x0400, 0x7bff, 0x3c00, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x3555];
const BF16_EDGES = [0x0001, 0x007f, 0x0080, 0x7f7f, 0x3f80, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x3eaa];

test('.npy hand-built f16 / bf16 edge values, v1/v2/v3 headers, big-endian', () => {
  for (const version of [1, 2, 3] as const) {
    const p = write(`edges-f16-v${version}.npy`, npyBytes(npyHeader('<f2', [2, 5]), u16Bytes(F16_EDGES), version));
    const t = openTensor(p);
    assert.equal([t.dtype, t.rows, t.cols, [...t.shape]], ['f16', 2, 5, [2, 5]]);
    sameFloats(readAll(t), F16_EDGES.map(f16ToF32), p);
    t.close();
  }
  const be = Buffer.alloc(F16_EDGES.length * 2);
  F16_EDGES.forEach((v, i) => be.writeUInt16BE(v, i * 2));
  const tb = openTensor(write('edges-f16-be.npy', npyBytes(npyHeader('>f2', [10]), be)));
  assert.equal([tb.rows, tb.cols], [1, 10]);
  sameFloats(readAll(tb), F16_EDGES.map(f16ToF32), 'f16 be');
  tb.close();

  const u2 = write('edges-bf16-u2.npy', npyBytes(npyHeader('<u2', [5, 2]), u16Bytes(BF16_EDGES)));
  const t = openTensor(u2, { u2IsBf16: true });
  assert.is(t.dtype, 'bf16');
  sameFloats(readAll(t), BF16_EDGES.map(bf16ToF32), 'bf16 <u2');
  t.close();
  rejects(u2, {}, /uint16/);
  // np.save of an ml_dtypes.bfloat16 array writes '<V2'; a hand-written header may say 'bfloat16'.
  for (const descr of ['<V2', '|V2', 'bfloat16']) {
    const tv = openTensor(write(`edges-bf16-${descr.replace(/\W/g, '')}.npy`, npyBytes(npyHeader(descr, [10]), u16Bytes(BF16_EDGES))));
    assert.is(tv.dtype, 'bf16');
    sameFloats(readAll(tv), BF16_EDGES.map(bf16ToF32), descr);
    tv.close();
  }
});

test('.npy fortran_order 2-D is transposed back; 3-D is refused', () => {
  // Logical [[1,2,3],[4,5,6]] stored column-major: 1,4,2,5,3,6.
  const p = write('fortran.npy', npyBytes(npyHeader('<f4', [2, 3], true), f32Bytes([1, 4, 2, 5, 3, 6])));
  const t = openTensor(p);
  sameFloats(readAll(t), [1, 2, 3, 4, 5, 6], 'fortran');
  sameFloats(t.readRows(1, 1), [4, 5, 6], 'fortran row 1');
  t.close();
  rejects(write('fortran3.npy', npyBytes(npyHeader('<f4', [2, 2, 2], true), f32Bytes([1, 2, 3, 4, 5, 6, 7, 8]))), {}, /fortran/);
});

test('readRows reads any row range and checks bounds', () => {
  const vals = Array.from({ length: 7 * 3 }, (_, i) => i * 0.5 - 3);
  const t = openTensor(write('rows.npy', npyBytes(npyHeader('<f4', [7, 3]), f32Bytes(vals))));
  sameFloats(t.readRows(2, 3), vals.slice(6, 15), 'rows 2..5');
  sameFloats(t.readRows(6, 1), vals.slice(18), 'last row');
  assert.is(t.readRows(3, 0).length, 0);
  assert.throws(() => t.readRows(5, 3));
  t.close();
});

test('malformed .npy files are refused with the file named', () => {
  const good = npyBytes(npyHeader('<f4', [2, 3]), f32Bytes([1, 2, 3, 4, 5, 6]));
  rejects(write('short.npy', good.subarray(0, 5)), {}, /truncated/);
  rejects(write('short-header.npy', good.subarray(0, 40)), {}, /truncated/);
  rejects(write('short-payload.npy', good.subarray(0, good.length - 4)), {}, /truncated|needs/);
  rejects(write('long-payload.npy', Buffer.concat([good, Buffer.alloc(4)])), {}, /disagrees/);
  const badMagic = Buffer.from(good);
  badMagic[1] = 0x4f;
  rejects(write('magic.npy', badMagic), {}, /magic/);
  rejects(write('int.npy', npyBytes(npyHeader('<i4', [2, 3]), Buffer.alloc(24))), {}, /unknown dtype '<i4'/);
  rejects(write('f8.npy', npyBytes(npyHeader('<f8', [3]), Buffer.alloc(24))), {}, /unknown dtype/);
  rejects(write('struct.npy', npyBytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", Buffer.alloc(8))), {}, /dtype/);
  rejects(write('garbage.npy', npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", Buffer.alloc(24))), {}, /unparseable/);
  rejects(write('noshape.npy', npyBytes("{'descr': '<f4', 'fortran_order': False}", Buffer.alloc(24))), {}, /unparseable/);
  rejects(write('zero.npy', npyBytes(npyHeader('<f4', [0, 3]), Buffer.alloc(0))), {}, /zero-length/);
  rejects(write('scalar.npy', npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", f32Bytes([1]))), {}, /0-d/);
  rejects(write('version9.npy', Buffer.concat([Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 9, 0]), Buffer.alloc(64)])), {}, /version/);
  rejects(write('empty.npy', Buffer.alloc(0)), {}, /truncated/);
  rejects(tmp.path('missing.npy'), {}, /no such file/);
  rejects(write('tensor.bin', good), {}, /extension/);
});

test('.safetensors: F32 / F16 / BF16, key selection, metadata ignored', () => {
  const p = write(
    'multi.safetensors',
    safetensorsBytes({
      a: { dtype: 'F32', shape: [2, 2], data: f32Bytes([1, -2, 3.5, 1e-30]) },
      h: { dtype: 'F16', shape: [2, 5], data: u16Bytes(F16_EDGES) },
      b: { dtype: 'BF16', shape: [1, 2, 5], data: u16Bytes(BF16_EDGES) },
    }),
  );
  const a = openTensor(p, { key: 'a' });
  assert.equal([a.dtype, a.rows, a.cols], ['f32', 2, 2]);
  sameFloats(readAll(a), [1, -2, 3.5, 1e-30], 'F32');
  a.close();
  const h = openTensor(p, { key: 'h' });
  sameFloats(readAll(h), F16_EDGES.map(f16ToF32), 'F16');
  h.close();
  const b = openTensor(p, { key: 'b' });
  assert.equal([b.dtype, b.rows, b.cols, [...b.shape]], ['bf16', 2, 5, [1, 2, 5]]);
  sameFloats(b.readRows(1, 1), BF16_EDGES.slice(5).map(bf16ToF32), 'BF16 row 1');
  b.close();
  rejects(p, {}, /3 tensors/);
  rejects(p, { key: 'zz' }, /no tensor 'zz'/);
  const one = openTensor(write('one.safetensors', safetensorsBytes({ x: { dtype: 'F32', shape: [3], data: f32Bytes([7, 8, 9]) } })));
  sameFloats(readAll(one), [7, 8, 9], 'only tensor');
  one.close();
});

test('malformed .safetensors files are refused with the file named', () => {
  const t = (data: Uint8Array, shape: number[], dtype = 'F32') => ({ x: { dtype, shape, data } });
  const good = safetensorsBytes(t(f32Bytes([1, 2, 3, 4]), [2, 2]));
  rejects(write('st-tiny.safetensors', good.subarray(0, 4)), {}, /truncated/);
  rejects(write('st-header.safetensors', good.subarray(0, 20)), {}, /truncated/);
  rejects(write('st-payload.safetensors', good.subarray(0, good.length - 4)), {}, /truncated/);
  rejects(write('st-shape.safetensors', safetensorsBytes(t(f32Bytes([1, 2, 3, 4]), [3, 2]))), {}, /truncated|needs/);
  rejects(write('st-long.safetensors', safetensorsBytes(t(f32Bytes([1, 2, 3, 4]), [1, 2]))), {}, /disagrees/);
  rejects(write('st-i32.safetensors', safetensorsBytes(t(Buffer.alloc(16), [2, 2], 'I32'))), {}, /unknown dtype 'I32'/);
  rejects(write('st-scalar.safetensors', safetensorsBytes(t(f32Bytes([1]), []))), {}, /0-d/);
  rejects(write('st-zero.safetensors', safetensorsBytes(t(Buffer.alloc(0), [0, 4]))), {}, /zero-length/);
  rejects(
    write('st-offsets.safetensors', safetensorsBytes(t(f32Bytes([1, 2, 3, 4]), [2, 2]), (h) => (h.x.data_offsets = [8, 4]))),
    {},
    /data_offsets/,
  );
  rejects(
    write('st-past.safetensors', safetensorsBytes(t(f32Bytes([1, 2, 3, 4]), [2, 2]), (h) => (h.x.data_offsets = [16, 32]))),
    {},
    /truncated/,
  );
  const badJson = Buffer.from(good);
  badJson[8] = 0x5b; // '[' where '{' was: still JSON-ish, but not an object / not valid
  rejects(write('st-json.safetensors', badJson), {}, /unparseable/);
});

test('.npz hand-built: stored and deflated members, key selection, Zip64 directory', () => {
  const x = npyBytes(npyHeader('<f4', [2, 3]), f32Bytes([1, 2, 3, 4, 5, 6]));
  const y = npyBytes(npyHeader('<f2', [2, 5]), u16Bytes(F16_EDGES), 2);
  for (const zip64 of [false, true]) {
    for (const deflate of [false, true]) {
      const p = write(`hand-${zip64}-${deflate}.npz`, zipBytes([{ name: 'x.npy', data: x, deflate }, { name: 'y.npy', data: y, deflate }], zip64));
      const tx = openTensor(p, { key: 'x' });
      sameFloats(readAll(tx), [1, 2, 3, 4, 5, 6], p);
      tx.close();
      const ty = openTensor(p, { key: 'y.npy' });
      sameFloats(readAll(ty), F16_EDGES.map(f16ToF32), p);
      ty.close();
      rejects(p, {}, /2 arrays/);
      rejects(p, { key: 'z' }, /no member 'z'/);
    }
  }
  const only = openTensor(write('only.npz', zipBytes([{ name: 'arr_0.npy', data: x, deflate: true }])));
  assert.is(only.rows, 2);
  only.close();
});

test('malformed .npz files are refused with the file named', () => {
  const x = npyBytes(npyHeader('<f4', [2, 3]), f32Bytes([1, 2, 3, 4, 5, 6]));
  const z = zipBytes([{ name: 'x.npy', data: x, deflate: true }]);
  rejects(write('notzip.npz', x), {}, /zip/);
  rejects(write('trunc.npz', z.subarray(0, z.length - 30)), {}, /zip|truncated/);
  rejects(write('tiny.npz', z.subarray(0, 10)), {}, /zip|short/);
  const corrupt = Buffer.from(z);
  corrupt[60] ^= 0xff; // inside the deflate stream
  corrupt[61] ^= 0xff;
  rejects(write('corrupt.npz', corrupt), {}, /inflate|CRC|corrupt/);
  rejects(write('inner-bad.npz', zipBytes([{ name: 'x.npy', data: x.subarray(0, x.length - 4) }])), {}, /truncated|needs/);
  // A stored member's error names the member too.
  rejects(write('inner-i4.npz', zipBytes([{ name: 'q.npy', data: npyBytes(npyHeader('<i4', [1]), Buffer.alloc(4)) }])), {}, /inner-i4\.npz\[q\]/);
});

test('numpy-written files round-trip (npy v1/v2/v3, endianness, fortran, npz, bf16 as <u2 and V2)', () => {
  const no = missingNumpy();
  if (no) skip(no);
  const dir = tmp.path('numpy');
  const manifest = JSON.parse(
    runPython(
      String.raw`
import json, os, sys
import numpy as np
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(7)
out = []
def emit(name, arr, expected, **meta):
    expected.astype('<f4').tofile(os.path.join(d, name + '.expected'))
    out.append(dict(name=name, shape=list(arr.shape), **meta))
base = (rng.standard_normal((6, 4, 5)) * 3).astype(np.float32)
base.flat[0] = 0.0
base.flat[1] = -0.0
for shape in [(6, 4, 5), (24, 5), (120,)]:
    a = base.reshape(shape)
    tag = 'x'.join(map(str, shape))
    for descr in ['<f4', '>f4', '<f2', '>f2']:
        arr = a.astype(descr)
        name = f'{tag}_{descr[0] == "<" and "le" or "be"}{descr[1:]}.npy'
        np.save(os.path.join(d, name), arr)
        emit(name, arr, arr.astype(np.float32))
    # bf16 as its bit pattern (<u2): truncate float32 to the top 16 bits.
    bits = (a.view(np.uint32) >> 16).astype('<u2')
    widened = (bits.astype(np.uint32) << 16).view(np.float32)
    name = f'{tag}_bf16u2.npy'
    np.save(os.path.join(d, name), bits)
    emit(name, bits, widened, u2IsBf16=True)
    name = f'{tag}_bf16v2.npy'
    np.save(os.path.join(d, name), bits.view('V2'))
    emit(name, bits, widened)
for v in [(1, 0), (2, 0), (3, 0)]:
    name = f'version{v[0]}.npy'
    with open(os.path.join(d, name), 'wb') as f:
        np.lib.format.write_array(f, base, version=v)
    emit(name, base, base)
f = np.asfortranarray(base.reshape(24, 5))
np.save(os.path.join(d, 'fortran.npy'), f)
emit('fortran.npy', f, np.ascontiguousarray(f))
np.savez(os.path.join(d, 'stored.npz'), ffn_out=base, other=base[:1].astype(np.float16))
emit('stored.npz', base, base, key='ffn_out')
np.savez_compressed(os.path.join(d, 'deflated.npz'), base.reshape(24, 5).astype('>f2'))
emit('deflated.npz', base, base.reshape(24, 5).astype(np.float16).astype(np.float32))
print(json.dumps(out))
`,
      [dir],
    ),
  ) as { name: string; shape: number[]; u2IsBf16?: boolean; key?: string }[];
  assert.ok(manifest.length >= 20);
  for (const m of manifest) {
    const p = `${dir}/${m.name}`;
    const t = openTensor(p, { u2IsBf16: m.u2IsBf16, key: m.key });
    const raw = readFileSync(`${p}.expected`);
    const exp = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
    const shape = m.name.endsWith('.npz') && m.key === undefined ? [24, 5] : m.shape;
    assert.equal([...t.shape], shape, m.name);
    assert.is(t.rows * t.cols, exp.length, m.name);
    sameFloats(readAll(t), exp, m.name);
    // Row blocks agree with the whole read.
    const mid = Math.floor(t.rows / 2);
    sameFloats(t.readRows(mid, t.rows - mid), exp.subarray(mid * t.cols), `${m.name} tail`);
    t.close();
  }
});

test.run();
