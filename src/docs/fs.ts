import { mkdirSync, renameSync, writeFileSync, rmSync, readFileSync, existsSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';

/** Write to a temp file beside the target, then rename: a reader never sees half a file. */
export function writeAtomic(path: string, data: string | Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, data);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

export function readIfExists(path: string): string | null {
  return existsSync(path) ? readFileSync(path, 'utf8') : null;
}
