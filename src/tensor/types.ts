/** Element types the readers understand. bf16 may arrive as ml_dtypes' bfloat16 or as <u2 flagged by the run dir. */
export type DType = 'f32' | 'f16' | 'bf16';

/**
 * A 2-D view of a tensor file, read in row blocks so nothing is materialised whole as float64.
 * rows = product of every dimension but the last; cols = the last dimension.
 */
export interface TensorSource {
  readonly path: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly rows: number;
  readonly cols: number;
  /** Rows [start, start + count) as float32 (bf16/f16 widened exactly). */
  readRows(start: number, count: number): Float32Array;
  /**
   * Rows [start, start + count) as the undecoded little-endian payload (f32, f16 or bf16 bits),
   * for the native engine. Null when the payload is not laid out that way (big-endian,
   * column-major): callers then use readRows, which converts. Optional for in-memory sources.
   * With `into` (at least count * cols * itemsize bytes) the bytes may land in it, so a
   * streaming caller can reuse its buffers; the returned bytes are then a view of `into`.
   */
  readRawRows?(start: number, count: number, into?: Uint8Array): RawRows | null;
  /**
   * Where the undecoded row-major little-endian payload sits in an open file, for an engine
   * that reads it itself; null when it is not laid out that way or not in a plain file. The
   * descriptor stays valid until close().
   */
  rawFile?(): RawFile | null;
  close(): void;
}

/** An open file descriptor and the byte offset of element (0, 0) of a row-major LE payload. */
export interface RawFile {
  dtype: DType;
  fd: number;
  offset: number;
}

/** Undecoded row-major little-endian elements of `dtype`, at any byte alignment. */
export interface RawRows {
  dtype: DType;
  bytes: Uint8Array;
}

export interface OpenOptions {
  /** Treat a <u2 payload as bf16 (the run dir says so). */
  u2IsBf16?: boolean;
  /** Member of an .npz or tensor name in a .safetensors file; defaults to the only one. */
  key?: string;
}
