// Records phase2_block.md and TODO.md through a pull request: one fixed branch per model, rebuilt
// on the base branch each time (so create and update give the same result), committed with git
// plumbing (a private index: the user's working tree and index are never touched), pushed, and
// the PR opened or updated through the GitHub helper. Nothing new means no commit, no push, no
// API write.
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { constants } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, isAbsolute, dirname } from 'node:path';
import { Git } from './git.ts';
import { confineBelow } from '../fs/confine.ts';
import { branchPath } from './model-names.ts';
import { classifyWriteError, isAlreadyExists, type GitHubApi, type PullRequest } from './api.ts';

export const BOT = { name: 'github-actions[bot]', email: '41898282+github-actions[bot]@users.noreply.github.com' };
const DOCS_BRANCH_PREFIX = 'npu-block-gate/phase2/';
const REF_BASE = 'refs/npu-block-gate/base';
const REF_DOCS = 'refs/npu-block-gate/docs';

/**
 * The docs branch of a model, from its repository-relative path (two models with the same
 * basename in different directories never share a branch): every path component kept, each made
 * a valid ref component; a path that had to change carries a hash of itself (model-names.ts), so
 * no two models share a branch.
 */
export function docsBranch(modelKey: string): string {
  return DOCS_BRANCH_PREFIX + branchPath(modelKey);
}

interface DocsPrRequest {
  /** Git pinned to the workspace's checkout (never one found from the model dir). */
  git: Git;
  api: GitHubApi | null;
  remote: string;
  base: string;
  branch: string;
  /** Absolute paths in the working tree. */
  files: string[];
  title: string;
  /** PR body; the force-add note is appended to it. */
  body: string;
  commitMessage: string;
  /**
   * Digest of the result (comment.ts resultDigest), written as a commit trailer. A docs branch
   * whose tip carries the same digest on the same base already records this result: documents that
   * differ only in run details (timings, cache hits) are not committed again.
   */
  digest: string;
  log: (msg: string) => void;
}

const DIGEST_TRAILER = 'Npu-Block-Gate-Result';

interface DocsPrResult {
  action: 'created' | 'updated' | 'unchanged' | 'closed' | 'nothing';
  committed: boolean;
  commit: string | null;
  number: number | null;
  url: string | null;
  /** Repository-relative paths added although .gitignore lists them. */
  forced: string[];
}

/**
 * The documents were pushed to the docs branch, but the repository refused to let the token open
 * the pull request ("Allow GitHub Actions to create and approve pull requests" is off).
 */
export class DocsPrRefused extends Error {
  constructor(
    readonly branch: string,
    readonly commit: string | null,
    readonly githubMessage: string,
  ) {
    super(
      `the repository does not allow GitHub Actions to create pull requests (Settings > Actions > General > Workflow permissions: ` +
        `"Allow GitHub Actions to create and approve pull requests"); the documents are on branch ${branch}: open the PR by hand or allow it`,
    );
    this.name = 'DocsPrRefused';
  }
}

function relTo(root: string, p: string): string {
  const r = relative(root, isAbsolute(p) ? p : join(root, p)).split('\\').join('/');
  if (r.startsWith('..')) throw new Error(`${p} is outside the repository ${root}`);
  return r;
}

async function fetchRefs(git: Git, remote: string, base: string, branch: string): Promise<{ base: string; docs: string | null }> {
  if (!(await git.fetchBranch(remote, base, REF_BASE))) throw new Error(`the base branch ${base} does not exist on ${remote}`);
  const hasDocs = await git.fetchBranch(remote, branch, REF_DOCS);
  if (!hasDocs) await git.deleteRef(REF_DOCS);
  const baseCommit = await git.commitOf(REF_BASE);
  if (!baseCommit) throw new Error(`cannot resolve the fetched base branch ${base}`);
  return { base: baseCommit, docs: hasDocs ? await git.commitOf(REF_DOCS) : null };
}

/**
 * Before the judge writes the documents: bring the versions last recorded on the docs branch into
 * the working tree, so the history table keeps growing across runs. Skipped for a file that
 * changed on the base branch since (a person edited it; theirs wins).
 */
export async function restoreRecordedDocs(git: Git, remote: string, base: string, branch: string, files: string[], log: (m: string) => void): Promise<string[]> {
  const root = git.root;
  const refs = await fetchRefs(git, remote, base, branch);
  if (!refs.docs) return [];
  const restored: string[] = [];
  for (const f of files) {
    const rel = relTo(root, f);
    const recorded = await git.blobAt(refs.docs, rel);
    if (!recorded) continue;
    const parentVersion = await git.blobAt(`${refs.docs}^`, rel);
    const baseVersion = await git.blobAt(refs.base, rel);
    if (parentVersion !== baseVersion) {
      log(`${rel} changed on ${base} since the docs branch was written; keeping ${base}'s version`);
      continue;
    }
    const abs = join(root, rel);
    // The checkout may hold a link a pull request's code left: never written through.
    confineBelow(root, abs, 'a document');
    await mkdir(dirname(abs), { recursive: true });
    await writeFile(abs, await git.readBlob(recorded), { flag: constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW });
    restored.push(rel);
  }
  return restored;
}

export function forcedNote(forced: string[]): string {
  if (forced.length === 0) return '';
  return (
    `\n\n**Force-added:** the model's .gitignore lists ${forced.map((f) => `\`${f}\``).join(', ')} ` +
    '(mlir-air keeps development docs out of upstream PRs), so this PR adds them with `git add -f`. ' +
    'Merge it into a branch that tracks development docs, or drop the files before upstreaming.'
  );
}

export async function upsertDocsPr(r: DocsPrRequest): Promise<DocsPrResult> {
  // Every path below is relative to the top level, where git runs.
  const git = r.git;
  const root = git.root;
  const refs = await fetchRefs(git, r.remote, r.base, r.branch);
  const rels = r.files.map((f) => relTo(root, f));

  // Which files need force: not tracked on the base, and ignored by .gitignore.
  const forced: string[] = [];
  for (const rel of rels) {
    if (await git.blobAt(refs.base, rel)) continue;
    if (await git.isIgnored(rel)) forced.push(rel);
  }

  // The tree: the base plus our files, built in a private index.
  const tmp = await mkdtemp(join(tmpdir(), 'nbg-index-'));
  let tree: string;
  try {
    tree = await git.treeWith(refs.base, rels.map((rel) => ({ rel, abs: join(root, rel) })), join(tmp, 'index'));
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  const body = r.body + forcedNote(forced);
  const trailer = `${DIGEST_TRAILER}: ${r.digest}`;

  // The base already records this result: documents identical to it, or (after the docs PR was
  // merged) a recent commit on it that carries this result's digest.
  const onBase = tree === (await git.treeOf(refs.base)) || (await git.recentCommitHasLine(refs.base, trailer));
  if (onBase) {
    const open = r.api ? await r.api.findPull(r.branch, 'open') : null;
    if (open && r.api) {
      await r.api.updatePull(open.number, { state: 'closed' });
      r.log(`docs: ${r.base} already records this result; closed #${open.number}`);
      return { action: 'closed', committed: false, commit: null, number: open.number, url: open.url, forced };
    }
    r.log(`docs: ${r.base} already records this result; nothing to commit`);
    return { action: 'nothing', committed: false, commit: null, number: null, url: null, forced };
  }

  let commit = refs.docs;
  let committed = false;
  const docsTree = refs.docs ? await git.treeOf(refs.docs) : null;
  const docsParent = refs.docs ? await git.parentOf(refs.docs) : null;
  const sameResult = refs.docs !== null && docsParent === refs.base && (await git.message(refs.docs)).includes(trailer);
  if (sameResult && docsTree !== tree) r.log(`docs: ${r.branch} already records this result (only run details differ); no commit`);
  if (!sameResult && (docsTree !== tree || docsParent !== refs.base)) {
    commit = await git.commitTree(tree, refs.base, `${r.commitMessage.trimEnd()}\n\n${trailer}\n`, BOT);
    await git.pushWithLease(r.remote, commit, r.branch, refs.docs);
    committed = true;
    r.log(`docs: pushed ${commit.slice(0, 12)} to ${r.branch}`);
  } else if (!sameResult) {
    r.log(`docs: ${r.branch} already holds these documents; no commit`);
  }

  if (!r.api) return { action: committed ? 'updated' : 'unchanged', committed, commit, number: null, url: null, forced };
  const done = (action: DocsPrResult['action'], p: PullRequest): DocsPrResult => ({ action, committed, commit, number: p.number, url: p.url, forced });
  const open = await r.api.findPull(r.branch, 'open');
  if (open) {
    if (open.title === r.title && open.body === body && open.base === r.base) return done('unchanged', open);
    return done('updated', await r.api.updatePull(open.number, { title: r.title, body, base: r.base }));
  }
  if (!committed) {
    // Same content as a PR someone closed: respect the close instead of reopening it every run.
    const last = await r.api.findPull(r.branch, 'all');
    if (last) return done('unchanged', last);
  }
  try {
    return done('created', await r.api.createPull({ head: r.branch, base: r.base, title: r.title, body }));
  } catch (e) {
    if (classifyWriteError(e) === 'prs-disabled') throw new DocsPrRefused(r.branch, commit, String((e as Error)?.message ?? e));
    // Another run opened it between our lookup and our create.
    if (!isAlreadyExists(e)) throw e;
    const again = await r.api.findPull(r.branch, 'open');
    if (!again) throw e;
    return done('updated', await r.api.updatePull(again.number, { title: r.title, body }));
  }
}
