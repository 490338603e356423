// What changed, as repository-relative paths: between two commits of the tree's git checkout
// (base...head: what the head adds since it left the base, as a pull request shows it), or as a
// list given by the caller. And where the air root sits in that repository.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { InputError, fsError } from '../errors.ts';

function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' } });
}

function firstLine(e: unknown): string {
  const err = e as { stderr?: string; message?: string };
  return (err.stderr || err.message || String(e)).trim().split('\n').pop() ?? '';
}

/** The repository's top level above `dir`, or null when it is not a git checkout. */
export function topLevel(dir: string): string | null {
  try {
    return git(dir, ['rev-parse', '--show-toplevel']).trim() || null;
  } catch {
    return null;
  }
}

/** The air root relative to the repository's top level ('' when it is the top level). */
export function prefixOf(airRoot: string, top: string | null): string {
  if (!top) return '';
  const rel = relative(resolve(top), resolve(airRoot)).split('\\').join('/');
  return rel.startsWith('..') ? '' : rel;
}

const REV = /^[A-Za-z0-9._/@^~-]{1,200}$/;

/** Files changed from base to head (base...head), repository-relative. */
export function changedBetween(dir: string, base: string, head: string): string[] {
  for (const [name, rev] of [['base', base], ['head', head]] as const) {
    if (!REV.test(rev) || rev.startsWith('-')) throw new InputError(`${name} ${JSON.stringify(rev.slice(0, 80))} is not a commit or branch name`);
  }
  let out: string;
  try {
    out = git(dir, ['diff', '--name-only', '-z', '--no-renames', `${base}...${head}`, '--']);
  } catch (e) {
    throw new InputError(`git diff ${base}...${head} failed: ${firstLine(e)} (are both commits fetched? actions/checkout needs fetch-depth: 0)`, dir);
  }
  return out.split('\0').filter(Boolean);
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
