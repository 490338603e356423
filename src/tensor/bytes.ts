// Where a tensor's bytes come from: an open file (read at offsets, never whole) or a buffer
// (an inflated .npz member). Both answer the same two questions so every format shares one reader.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { InputError } from '../errors.ts';
import { kindOf } from '../fs/read.ts';

export interface ByteSource {
  readonly path: string;
  readonly size: number;
  /** Exactly `length` bytes at `offset`; a short read is a truncated file. */
  read(offset: number, length: number): Buffer;
  /**
   * Optional: fill `target` with the bytes at `offset` (target.length of them) and return it, so
   * a caller streaming many blocks can reuse one buffer instead of faulting in a fresh one each time.
   */
  readInto?(offset: number, target: Uint8Array): Uint8Array;
  /** The open descriptor when the bytes are a plain file (null once closed). */
  readonly fd?: number | null;
  close(): void;
}

const OPEN_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'cannot open: permission denied',
  EPERM: 'cannot open: permission denied',
  EISDIR: 'is a directory, not a regular file',
  ELOOP: 'cannot open: too many levels of symbolic links',
  ENOTDIR: 'cannot open: a part of the path is a file, not a directory',
};

export class FileBytes implements ByteSource {
  readonly size: number;
  #fd: number | null;
  get fd(): number | null {
    return this.#fd;
  }
  constructor(readonly path: string) {
    try {
      // Non-blocking, so opening a FIFO returns at once instead of waiting for a writer; the
      // fstat below then refuses it before a byte is read.
      this.#fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new InputError(OPEN_ERRORS[code ?? ''] ?? `cannot open (${code ?? String(err)})`, path);
    }
    try {
      const st = fstatSync(this.#fd);
      if (!st.isFile()) throw new InputError(`is ${kindOf(st)}, not a regular file`, path);
      this.size = st.size;
    } catch (err) {
      this.close();
      throw err;
    }
  }
  read(offset: number, length: number): Buffer {
    return this.fill(offset, Buffer.allocUnsafe(length));
  }
  readInto(offset: number, target: Uint8Array): Uint8Array {
    return this.fill(offset, target);
  }
  private fill<T extends Uint8Array>(offset: number, buf: T): T {
    const length = buf.length;
    if (this.#fd === null) throw new InputError('read after close', this.path);
    if (offset < 0 || offset + length > this.size) {
      throw new InputError(`truncated: needs bytes ${offset}..${offset + length} but the file has ${this.size}`, this.path);
    }
    let done = 0;
    while (done < length) {
      // readSync caps one call at 2 GiB; loop until the range is filled.
      const n = readSync(this.#fd, buf, done, Math.min(length - done, 0x40000000), offset + done);
      if (n === 0) throw new InputError(`truncated: file ended at byte ${offset + done}`, this.path);
      done += n;
    }
    return buf;
  }
  close(): void {
    if (this.#fd !== null) {
      closeSync(this.#fd);
      this.#fd = null;
    }
  }
}

export class BufferBytes implements ByteSource {
  readonly size: number;
  constructor(
    readonly path: string,
    private readonly buf: Buffer,
  ) {
    this.size = buf.length;
  }
  read(offset: number, length: number): Buffer {
    if (offset < 0 || offset + length > this.size) {
      throw new InputError(`truncated: needs bytes ${offset}..${offset + length} but there are ${this.size}`, this.path);
    }
    return this.buf.subarray(offset, offset + length);
  }
  close(): void {}
}
