// A private copy of examples/air-mini per test file, so runs never touch the repository's tree.
import { chmodSync, cpSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
export const AIR_MINI = join(REPO, 'examples/air-mini');

export function copyAirMini(): { root: string; llms: string; model: (name: string) => string } {
  const root = mkdtempSync(join(tmpdir(), 'nbg-air-'));
  cpSync(AIR_MINI, root, { recursive: true, filter: (src) => !/(__pycache__|build_peano|docs[\\/]development_progress)/.test(src) });
  chmodSync(root, 0o755); // as a checkout is: the probe's uid (nobody, on a root runner) reads it
  const llms = join(root, 'programming_examples/llms');
  return { root, llms, model: (name) => join(llms, name) };
}
