import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh temp dir and its cleanup. */
export function tempDir(prefix = 'npu-block-gate-'): { dir: string; path: (name: string) => string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, path: (name) => join(dir, name), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
