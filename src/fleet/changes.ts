// What changed, as repository-relative paths: between two commits of the tree's git checkout
// (base...head: what the head adds since it left the base, as a pull request shows it), or as a
// list given by the caller. And where the air root sits in that repository.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { InputError, fsError } from '../errors.ts';
import { findCheckout, pinnedConfig, pinnedEnv, runPinnedSync, type Checkout } from '../git/pinned.ts';

export type { Checkout } from '../git/pinned.ts';

function firstLine(e: unknown): string {
  const err = e as { stderr?: string; message?: string };
  return (err.stderr || err.message || String(e)).trim().split('\n').pop() ?? '';
}

/**
 * The git checkout holding `dir` (the tree: a directory the caller names), or null when it is not
 * in one. Found by us, from `dir` upwards; every git call then names it (src/git/pinned.ts).
 */
export function checkoutOf(dir: string): Checkout | null {
  return findCheckout(dir);
}

/** The air root relative to the repository's top level ('' when it is the top level). */
export function prefixOf(airRoot: string, top: string | null): string {
  if (!top) return '';
  const rel = relative(resolve(top), resolve(airRoot)).split('\\').join('/');
  return rel.startsWith('..') ? '' : rel;
}

const REV = /^[A-Za-z0-9._/@^~-]{1,200}$/;

/**
 * Files changed from base to head, repository-relative: base...head (what head adds since it left
 * base, as a pull request shows it); when the two share no history here (a shallow clone), the
 * plain difference of the two trees, which also holds what changed on base meanwhile (more models,
 * never fewer), with a note saying so.
 */
export function changedBetween(c: Checkout, base: string, head: string): { files: string[]; note: string | null } {
  for (const [name, rev] of [['base', base], ['head', head]] as const) {
    if (!REV.test(rev) || rev.startsWith('-')) throw new InputError(`${name} ${JSON.stringify(rev.slice(0, 80))} is not a commit or branch name`);
  }
  const diff = (range: string[]) => runPinnedSync(c, ['diff', '--no-ext-diff', '--no-textconv', '--name-only', '-z', '--no-renames', ...range, '--']).split('\0').filter(Boolean);
  try {
    return { files: diff([`${base}...${head}`]), note: null };
  } catch (e) {
    try {
      const files = diff([base, head]);
      return { files, note: `${base.slice(0, 12)} and ${head.slice(0, 12)} share no history in this clone (${firstLine(e)}); compared their trees instead, which also counts what changed on the base meanwhile` };
    } catch (e2) {
      throw new InputError(`git diff ${base}...${head} failed: ${firstLine(e2)} (are both commits fetched? actions/checkout needs fetch-depth: 0)`, c.workTree);
    }
  }
}

/** Whether a commit is in the clone. */
export function hasCommit(c: Checkout, rev: string): boolean {
  try {
    runPinnedSync(c, ['cat-file', '-e', `${rev}^{commit}`]);
    return true;
  } catch {
    return false;
  }
}

/** A list of changed files: one path a line (blank lines and # comments skipped). */
export function parseFileList(text: string): string[] {
  return text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
}

export function readFileList(path: string): string[] {
  try {
    return parseFileList(readFileSync(path, 'utf8'));
  } catch (e) {
    throw fsError(e, path, 'cannot read the list of changed files');
  }
}

/** The commit a pull request's diff starts from: the merge base of base and head, else base itself. */
export function forkPoint(c: Checkout, base: string, head: string): string {
  try {
    return runPinnedSync(c, ['merge-base', base, head]).trim() || base;
  } catch {
    return base;
  }
}

/**
 * A copy of `sub` (a folder relative to the repository's top level, '' for all of it) as it is at
 * `rev`, in a new temporary directory (the caller removes it): a local `git archive` (never
 * --remote; plain tar, so no configured filter command runs) into `tar -x`, so the checkout, its
 * index and its worktrees are left as they are.
 */
export function treeAt(c: Checkout, rev: string, sub: string): string {
  if (!REV.test(rev) || rev.startsWith('-')) throw new InputError(`${JSON.stringify(rev.slice(0, 80))} is not a commit or branch name`);
  const out = mkdtempSync(join(tmpdir(), 'npu-block-gate-base-'));
  try {
    const tar = execFileSync('git', ['--no-pager', `--git-dir=${c.gitDir}`, `--work-tree=${c.workTree}`, ...pinnedConfig(c), 'archive', '--format=tar', rev, '--', sub || '.'],
      { cwd: c.workTree, maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe'], env: pinnedEnv() });
    execFileSync('tar', ['-x', '--no-same-owner', '--no-same-permissions', '-C', out], { input: tar, stdio: ['pipe', 'ignore', 'pipe'] });
    return out;
  } catch (e) {
    rmSync(out, { recursive: true, force: true });
    throw new InputError(`cannot read the tree at ${rev.slice(0, 40)}: ${firstLine(e)}`, c.workTree);
  }
}
