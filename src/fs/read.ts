// Reading a whole open file, for the small files we read at once (documents, probe.json, bisect.json).
import { readSync, type Stats } from 'node:fs';

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

/** What a file that is not a regular file is, in words ("a directory", "a FIFO (named pipe)", ...). */
export function kindOf(st: Stats): string {
  if (st.isFile()) return 'a regular file';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isSocket()) return 'a socket';
  if (st.isSymbolicLink()) return 'a symlink';
  return 'a special file';
}
