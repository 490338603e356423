// .npy (format versions 1, 2 and 3): magic, version, header length, a Python dict literal, payload.
import { InputError } from '../errors.ts';
import type { ByteSource } from './bytes.ts';
import type { ByteOrder } from './dtype.ts';
import { checkShape, RawTensor } from './raw.ts';
import type { DType, OpenOptions } from './types.ts';

const MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // \x93NUMPY

type PyValue = string | number | boolean | null | PyValue[] | { [k: string]: PyValue };

/** The tiny subset of Python literals np.save writes: dict, tuple, list, str, int, bool, None. */
function parsePyLiteral(text: string): PyValue {
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const fail = (what: string): never => {
    throw new Error(`${what} at character ${i}`);
  };
  const value = (): PyValue => {
    ws();
    const ch = text[i];
    if (ch === '{') {
      i++;
      const obj: Record<string, PyValue> = {};
      for (;;) {
        ws();
        if (text[i] === '}') {
          i++;
          return obj;
        }
        const k = value();
        if (typeof k !== 'string') fail('dict key is not a string');
        ws();
        if (text[i] !== ':') fail("expected ':'");
        i++;
        obj[k as string] = value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] !== '}') fail("expected ',' or '}'");
      }
    }
    if (ch === '(' || ch === '[') {
      const close = ch === '(' ? ')' : ']';
      i++;
      const arr: PyValue[] = [];
      for (;;) {
        ws();
        if (text[i] === close) {
          i++;
          return arr;
        }
        arr.push(value());
        ws();
        if (text[i] === ',') i++;
        else if (text[i] !== close) fail(`expected ',' or '${close}'`);
      }
    }
    if (ch === "'" || ch === '"') {
      const end = text.indexOf(ch, i + 1);
      if (end < 0) fail('unterminated string');
      const s = text.slice(i + 1, end);
      i = end + 1;
      return s;
    }
    const m = /^(True|False|None|-?\d+L?)/.exec(text.slice(i, i + 32));
    if (!m) fail('unexpected token');
    i += m![0].length;
    if (m![0] === 'True') return true;
    if (m![0] === 'False') return false;
    if (m![0] === 'None') return null;
    return Number(m![0].replace('L', ''));
  };
  const v = value();
  ws();
  if (i !== text.length) fail('trailing text');
  return v;
}

/** numpy descr -> our dtype and byte order. */
function parseDescr(descr: PyValue, opts: OpenOptions, path: string): { dtype: DType; order: ByteOrder } {
  if (typeof descr !== 'string') throw new InputError(`unsupported dtype ${JSON.stringify(descr)} (structured arrays are not tensors)`, path);
  // ml_dtypes' bfloat16 has no numpy type code: np.save writes it as 2-byte void ('<V2'), and
  // hand-written headers use str(dtype) = 'bfloat16'. A 2-byte void in a tensor file is bf16.
  if (descr === 'bfloat16' || descr === '<V2' || descr === '|V2' || descr === 'V2') return { dtype: 'bf16', order: 'le' };
  const m = /^([<>|=]?)([a-zA-Z])(\d+)$/.exec(descr);
  if (!m) throw new InputError(`unknown dtype '${descr}'`, path);
  const [, bo, kind, sizeText] = m;
  const order: ByteOrder = bo === '>' ? 'be' : 'le';
  const code = kind + sizeText;
  if (code === 'f4') return { dtype: 'f32', order };
  if (code === 'f2') return { dtype: 'f16', order };
  if (code === 'u2') {
    if (opts.u2IsBf16) return { dtype: 'bf16', order };
    throw new InputError(`dtype '${descr}' (uint16) is read only as bf16, when the run dir says so`, path);
  }
  throw new InputError(`unknown dtype '${descr}'; expected float32, float16 or bfloat16`, path);
}

/**
 * Open the .npy that starts at `base` inside `src` and runs for `length` bytes
 * (a whole file, or a stored .npz member). `path` names it in errors.
 */
export function openNpyAt(src: ByteSource, path: string, opts: OpenOptions, base = 0, length = src.size - base): RawTensor {
  if (length < 10) throw new InputError(`truncated: ${length} bytes is too short for an .npy header`, path);
  const pre = src.read(base, 10);
  if (!pre.subarray(0, 6).equals(MAGIC)) throw new InputError('bad magic: not an .npy file', path);
  const major = pre[6];
  let headerLen: number;
  let headerStart: number;
  if (major === 1) {
    headerLen = pre.readUInt16LE(8);
    headerStart = 10;
  } else if (major === 2 || major === 3) {
    if (length < 12) throw new InputError('truncated .npy header', path);
    headerLen = src.read(base + 8, 4).readUInt32LE(0);
    headerStart = 12;
  } else {
    throw new InputError(`unsupported .npy format version ${major}.${pre[7]}`, path);
  }
  if (headerStart + headerLen > length) {
    throw new InputError(`truncated: header claims ${headerLen} bytes, file has ${length - headerStart} after the preamble`, path);
  }
  // v1/v2 headers are latin1, v3 is utf8; the keys and values we accept are ASCII either way.
  const text = src.read(base + headerStart, headerLen).toString(major === 3 ? 'utf8' : 'latin1');
  let header: PyValue;
  try {
    header = parsePyLiteral(text.trim());
  } catch (err) {
    throw new InputError(`unparseable .npy header (${(err as Error).message})`, path);
  }
  if (!header || typeof header !== 'object' || Array.isArray(header)) throw new InputError('unparseable .npy header (not a dict)', path);
  const { descr, fortran_order: fortran, shape } = header;
  if (descr === undefined || fortran === undefined || shape === undefined) {
    throw new InputError('unparseable .npy header (needs descr, fortran_order and shape)', path);
  }
  if (typeof fortran !== 'boolean') throw new InputError('unparseable .npy header (fortran_order is not a bool)', path);
  if (!Array.isArray(shape) || shape.some((d) => typeof d !== 'number')) {
    throw new InputError('unparseable .npy header (shape is not a tuple of integers)', path);
  }
  const { dtype, order } = parseDescr(descr, opts, path);
  const dataStart = headerStart + headerLen;
  const dims = shape as number[];
  checkShape(path, dims, dtype, length - dataStart);
  return new RawTensor(path, src, { dtype, order, shape: dims, offset: base + dataStart, fortran });
}
