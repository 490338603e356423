// Reading a whole open file, for the small files we read at once (documents, probe.json, bisect.json).
import { readSync } from 'node:fs';

/** Up to `size` bytes of an open file from its start (fewer if it shrank meanwhile). */
export function readWhole(fd: number, size: number): Buffer {
  const buf = Buffer.alloc(size);
  let done = 0;
  while (done < size) {
    const n = readSync(fd, buf, done, size - done, done);
    if (n === 0) break;
    done += n;
  }
  return buf.subarray(0, done);
}
