// Git config that makes git run programs: what a hostile probe plants as a .git in a model dir it
// can write (issue 25), and the same settings in a checkout's own config. Every program named
// appends a line to <marks>/<setting> and fails, so a test sees which ones ran.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git } from './git-remote.ts';

const HOOKS = [
  'applypatch-msg', 'pre-applypatch', 'post-applypatch', 'pre-commit', 'pre-merge-commit', 'prepare-commit-msg', 'commit-msg',
  'post-commit', 'pre-rebase', 'post-checkout', 'post-merge', 'pre-push', 'pre-receive', 'update', 'proc-receive',
  'post-receive', 'post-update', 'reference-transaction', 'push-to-checkout', 'pre-auto-gc', 'post-rewrite',
  'sendemail-validate', 'fsmonitor-watchman', 'p4-changelist', 'p4-prepare-changelist', 'p4-post-changelist', 'p4-pre-submit',
  'post-index-change',
];

/** An executable that records `name` in marks and exits 1 (or, with `then`, execs that command). */
function marker(dir: string, marks: string, name: string, then?: string): string {
  mkdirSync(dir, { recursive: true });
  const p = join(dir, name.replace(/[^A-Za-z0-9_.-]/g, '_'));
  writeFileSync(p, `#!/bin/sh\necho ran >> '${join(marks, name)}'\n${then ? `exec ${then} "$@"` : 'exit 1'}\n`);
  chmodSync(p, 0o755);
  return p;
}

function hooks(dir: string, marks: string, prefix: string): void {
  for (const h of HOOKS) marker(dir, marks, `${prefix}hook-${h}`);
}

/** Settings shared by both plants: each value a program of marks. */
function programs(cfg: (k: string, v: string) => void, bin: string, marks: string): void {
  const m = (name: string) => marker(bin, marks, name);
  cfg('core.fsmonitor', m('fsmonitor'));
  cfg('core.pager', m('pager'));
  cfg('core.editor', m('editor'));
  cfg('core.askPass', m('askPass'));
  cfg('credential.helper', m('credential.helper'));
  cfg('commit.gpgSign', 'true');
  cfg('log.showSignature', 'true');
  cfg('gpg.program', m('gpg.program'));
  cfg('diff.external', m('diff.external'));
  cfg('core.untrackedCache', 'true');
}

/**
 * A repository at `dir` (a model dir) whose config names programs everywhere: ssh for its origin
 * (an ssh URL, so a fetch runs it), hooks (core.hooksPath and .git/hooks), fsmonitor, credential
 * helper, pager, editor, askpass, signing, upload-pack.
 */
export function plantHostileGit(dir: string, marks: string): void {
  mkdirSync(marks, { recursive: true });
  git(dir, ['init', '--quiet', '--initial-branch=main']);
  const gd = join(dir, '.git');
  const cfg = (k: string, v: string) => git(dir, ['config', k, v]);
  const bin = join(gd, 'evil');
  cfg('core.sshCommand', marker(bin, marks, 'sshCommand'));
  cfg('remote.origin.url', 'ssh://git.invalid/acme/mlir-air.git');
  cfg('remote.origin.fetch', '+refs/heads/*:refs/remotes/origin/*');
  cfg('remote.origin.uploadpack', marker(bin, marks, 'uploadpack'));
  cfg('remote.origin.receivepack', marker(bin, marks, 'receivepack'));
  hooks(join(gd, 'evil-hooks'), marks, 'planted-');
  hooks(join(gd, 'hooks'), marks, 'planted-default-');
  cfg('core.hooksPath', join(gd, 'evil-hooks'));
  programs(cfg, bin, marks);
}

/**
 * The same programs in a real checkout's own config (the one our calls must use): hooks, fsmonitor,
 * credential helper, signing, a wrapped upload-pack and receive-pack (which still work, so only
 * the mark tells), a clean filter and a textconv driver for .md files by .gitattributes.
 */
export function plantHostileConfig(work: string, marks: string): void {
  mkdirSync(marks, { recursive: true });
  const gd = join(work, '.git');
  const cfg = (k: string, v: string) => git(work, ['config', k, v]);
  const bin = join(gd, 'evil');
  cfg('remote.origin.uploadpack', marker(bin, marks, 'real-uploadpack', 'git-upload-pack'));
  cfg('remote.origin.receivepack', marker(bin, marks, 'real-receivepack', 'git-receive-pack'));
  hooks(join(gd, 'hooks'), marks, 'real-default-');
  hooks(join(gd, 'evil-hooks'), marks, 'real-');
  cfg('core.hooksPath', join(gd, 'evil-hooks'));
  cfg('filter.evil.clean', marker(bin, marks, 'filter.clean'));
  cfg('filter.evil.process', marker(bin, marks, 'filter.process'));
  cfg('diff.evil.textconv', marker(bin, marks, 'diff.textconv'));
  cfg('diff.evil.command', marker(bin, marks, 'diff.command'));
  programs(cfg, bin, marks);
  writeFileSync(join(gd, 'info', 'attributes'), '*.md filter=evil diff=evil\n');
}
