// A real git "GitHub": a bare repository seeded with a copy of examples/air-mini on `main`, and a
// clone of it that plays the runner's checkout (actions/checkout leaves `origin` pointing at it).
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { AIR_MINI } from './airmini.ts';

const IDENT = {
  GIT_AUTHOR_NAME: 'Test Author',
  GIT_AUTHOR_EMAIL: 'author@example.invalid',
  GIT_COMMITTER_NAME: 'Test Author',
  GIT_COMMITTER_EMAIL: 'author@example.invalid',
};

export function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: cwd, GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C', ...IDENT },
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();
}

export interface GitRemote {
  root: string;
  /** The bare repository (the remote, `origin`). */
  bare: string;
  /** The checkout the Action runs in (GITHUB_WORKSPACE). */
  work: string;
  /** The commit on main. */
  baseSha: string;
  /** A model dir inside the checkout. */
  model: (name: string) => string;
  /** Commits on a branch of the bare repo, newest first (subjects). */
  log: (ref: string) => string[];
  branches: () => string[];
  /** A file's content on a branch of the remote, or null. */
  show: (ref: string, path: string) => string | null;
}

export function makeGitRemote(): GitRemote {
  const root = mkdtempSync(join(tmpdir(), 'nbg-git-'));
  const bare = join(root, 'remote.git');
  const seed = join(root, 'seed');
  const work = join(root, 'work');
  mkdirSync(bare);
  git(bare, ['init', '--quiet', '--bare', '--initial-branch=main']);
  mkdirSync(seed);
  git(seed, ['init', '--quiet', '--initial-branch=main']);
  cpSync(AIR_MINI, seed, { recursive: true, filter: (src) => !/(__pycache__|build_peano|docs[\\/]development_progress)/.test(src) });
  git(seed, ['add', '-A']);
  git(seed, ['commit', '--quiet', '-m', 'air-mini']);
  git(seed, ['push', '--quiet', bare, 'main']);
  git(root, ['clone', '--quiet', bare, work]);
  const baseSha = git(work, ['rev-parse', 'HEAD']);
  return {
    root,
    bare,
    work,
    baseSha,
    model: (name) => join(work, 'programming_examples/llms', name),
    log: (ref) => git(bare, ['log', '--format=%s', ref]).split('\n').filter(Boolean),
    branches: () => git(bare, ['for-each-ref', '--format=%(refname:short)', 'refs/heads']).split('\n').filter(Boolean),
    show: (ref, path) => {
      try {
        return execFileSync('git', ['--git-dir', bare, 'show', `${ref}:${path}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      } catch {
        return null;
      }
    },
  };
}
