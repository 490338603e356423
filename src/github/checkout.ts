// The checkout's persisted credentials: actions/checkout leaves the job's token in the repository's
// git config (an http extraheader, or an includeIf to a credentials file) unless the workflow sets
// persist-credentials: false. The probe's sandbox hides .git, but a run without it (uid mode with
// its sandbox refused, isolation none) would hand the token to the pull request's code.
import { readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The git dirs whose config a checkout at `dir` reads: its own (a .git dir, or a worktree's gitdir) and the common one. */
function gitDirs(dir: string): string[] {
  for (let up = resolve(dir); ; up = dirname(up)) {
    const g = join(up, '.git');
    try {
      if (statSync(g).isDirectory()) return [g];
      const m = /^gitdir:\s*(.+)$/m.exec(readFileSync(g, 'utf8'));
      if (m) {
        const real = resolve(up, m[1].trim());
        let common: string[] = [];
        try { common = [resolve(real, readFileSync(join(real, 'commondir'), 'utf8').trim())]; } catch { /* not a worktree */ }
        return [real, ...common];
      }
    } catch {
      // no .git here
    }
    if (up === '/') return [];
  }
}

/** The config file that holds persisted credentials for the checkout at `dir`, or null. */
export function persistedCredentials(dir: string): string | null {
  for (const g of gitDirs(dir)) {
    const config = join(g, 'config');
    let text: string;
    try { text = readFileSync(config, 'utf8'); } catch { continue; }
    if (/^\s*extraheader\s*=/im.test(text) || /^\s*\[includeIf\s+"gitdir:[^"]*"\]\s*\n\s*path\s*=.*credentials/im.test(text)) return config;
  }
  return null;
}
