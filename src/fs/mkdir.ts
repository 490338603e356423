// Creating a directory and its parents with the real reason when it fails. Node's recursive mkdir
// reports ENOENT for a parent it could not create on a read-only file system (it is EROFS), so a
// failure there is found again one level at a time, where the kernel names the real errno.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/** mkdir -p: the first directory it created (undefined when all existed); throws the real errno. */
export function makeDirs(dir: string): string | undefined {
  try {
    return mkdirSync(dir, { recursive: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  // Each missing level, top down: the first that fails says why (EROFS, EACCES, ENOTDIR...).
  const missing: string[] = [];
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    missing.unshift(d);
  }
  let first: string | undefined;
  for (const d of missing) {
    try {
      mkdirSync(d);
      first ??= d;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw e;
    }
  }
  return first;
}
