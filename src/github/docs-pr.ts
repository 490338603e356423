// Records phase2_block.md and TODO.md through a pull request: one fixed branch per model, rebuilt
// on the base branch each time (so create and update give the same result), committed with git
// plumbing (a temporary index: the user's working tree and index are never touched), pushed, and
// the PR opened or updated through the REST API. Nothing new means no commit, no push, no API write.
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, isAbsolute, dirname } from 'node:path';
import { Git } from './git.ts';
import type { GateOctokit } from './octokit.ts';
import { httpStatus } from './octokit.ts';

export const BOT_NAME = 'github-actions[bot]';
export const BOT_EMAIL = '41898282+github-actions[bot]@users.noreply.github.com';
export const DOCS_BRANCH_PREFIX = 'npu-block-gate/phase2/';
const REF_BASE = 'refs/npu-block-gate/base';
const REF_DOCS = 'refs/npu-block-gate/docs';

export function docsBranch(modelSlug: string): string {
  return DOCS_BRANCH_PREFIX + modelSlug.replace(/[^A-Za-z0-9._-]+/g, '_');
}

export interface DocsPrRequest {
  git: Git;
  octokit: GateOctokit | null;
  owner: string;
  repo: string;
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

export const DIGEST_TRAILER = 'Npu-Block-Gate-Result';

export interface DocsPrResult {
  action: 'created' | 'updated' | 'unchanged' | 'closed' | 'nothing';
  committed: boolean;
  commit: string | null;
  number: number | null;
  url: string | null;
  /** Repository-relative paths added although .gitignore lists them. */
  forced: string[];
}

async function repoRoot(git: Git): Promise<string> {
  return git.out(['rev-parse', '--show-toplevel']);
}

function relTo(root: string, p: string): string {
  const r = relative(root, isAbsolute(p) ? p : join(root, p)).split('\\').join('/');
  if (r.startsWith('..')) throw new Error(`${p} is outside the repository ${root}`);
  return r;
}

async function fetchRefs(git: Git, remote: string, base: string, branch: string): Promise<{ base: string; docs: string | null }> {
  await git.run(['fetch', '--no-tags', '--quiet', remote, `+refs/heads/${base}:${REF_BASE}`]);
  const docs = await git.run(['fetch', '--no-tags', '--quiet', remote, `+refs/heads/${branch}:${REF_DOCS}`], { allowFail: true });
  if (docs.code !== 0) await git.run(['update-ref', '-d', REF_DOCS], { allowFail: true });
  return {
    base: await git.out(['rev-parse', `${REF_BASE}^{commit}`]),
    docs: docs.code === 0 ? await git.out(['rev-parse', `${REF_DOCS}^{commit}`]) : null,
  };
}

async function blobAt(git: Git, rev: string, rel: string): Promise<string | null> {
  const r = await git.run(['rev-parse', '--verify', '--quiet', `${rev}:${rel}`], { allowFail: true });
  return r.code === 0 ? r.stdout.trim() : null;
}

/**
 * Before the judge writes the documents: bring the versions last recorded on the docs branch into
 * the working tree, so the history table keeps growing across runs. Skipped for a file that
 * changed on the base branch since (a person edited it; theirs wins).
 */
export async function restoreRecordedDocs(inModel: Git, remote: string, base: string, branch: string, files: string[], log: (m: string) => void): Promise<string[]> {
  const root = await repoRoot(inModel);
  const git = inModel.at(root);
  const refs = await fetchRefs(git, remote, base, branch);
  if (!refs.docs) return [];
  const restored: string[] = [];
  for (const f of files) {
    const rel = relTo(root, f);
    const recorded = await blobAt(git, refs.docs, rel);
    if (!recorded) continue;
    const parentVersion = await blobAt(git, `${refs.docs}^`, rel);
    const baseVersion = await blobAt(git, refs.base, rel);
    if (parentVersion !== baseVersion) {
      log(`${rel} changed on ${base} since the docs branch was written; keeping ${base}'s version`);
      continue;
    }
    const content = await git.run(['cat-file', 'blob', recorded]);
    const abs = join(root, rel);
    await mkdir(dirname(abs), { recursive: true });
    await writeFile(abs, content.stdout);
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
  const root = await repoRoot(r.git);
  // Every path below is relative to the top level, so git runs there.
  const git = r.git.at(root);
  const refs = await fetchRefs(git, r.remote, r.base, r.branch);
  const rels = r.files.map((f) => relTo(root, f));

  // Which files need force: not tracked on the base, and ignored by .gitignore.
  const forced: string[] = [];
  for (const rel of rels) {
    if (await blobAt(git, refs.base, rel)) continue;
    if (await git.ok(['check-ignore', '-q', '--no-index', '--', rel])) forced.push(rel);
  }

  // The tree: the base plus our files, built in a private index.
  const tmp = await mkdtemp(join(tmpdir(), 'nbg-index-'));
  let tree: string;
  try {
    const env = { GIT_INDEX_FILE: join(tmp, 'index') };
    await git.run(['read-tree', refs.base], { env });
    for (const rel of rels) {
      const blob = await git.out(['hash-object', '-w', '--', join(root, rel)]);
      await git.run(['update-index', '--add', '--cacheinfo', `100644,${blob},${rel}`], { env });
    }
    tree = await git.out(['write-tree'], { env });
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  const baseTree = await git.out(['rev-parse', `${refs.base}^{tree}`]);
  const body = r.body + forcedNote(forced);

  // The base already records this result: documents identical to it, or (after the docs PR was
  // merged) a recent commit on it that carries this result's digest.
  const onBase =
    tree === baseTree ||
    (await git.out(['log', '-n', '20', '--format=%H', `--grep=^${DIGEST_TRAILER}: ${r.digest}$`, refs.base], { allowFail: true })) !== '';
  if (onBase) {
    // The base already records exactly this: an open docs PR has nothing left to say.
    const open = r.octokit ? await findPr(r, 'open') : null;
    if (open && r.octokit) {
      await r.octokit.rest.pulls.update({ owner: r.owner, repo: r.repo, pull_number: open.number, state: 'closed' });
      r.log(`docs: ${r.base} already records this result; closed #${open.number}`);
      return { action: 'closed', committed: false, commit: null, number: open.number, url: open.html_url, forced };
    }
    r.log(`docs: ${r.base} already records this result; nothing to commit`);
    return { action: 'nothing', committed: false, commit: null, number: null, url: null, forced };
  }

  let commit = refs.docs;
  let committed = false;
  const docsTree = refs.docs ? await git.out(['rev-parse', `${refs.docs}^{tree}`]) : null;
  const docsParent = refs.docs ? await git.out(['rev-parse', `${refs.docs}^`], { allowFail: true }) : null;
  const sameResult = refs.docs !== null && docsParent === refs.base && (await git.out(['log', '-1', '--format=%B', refs.docs])).includes(`${DIGEST_TRAILER}: ${r.digest}`);
  if (sameResult && docsTree !== tree) r.log(`docs: ${r.branch} already records this result (only run details differ); no commit`);
  if (!sameResult && (docsTree !== tree || docsParent !== refs.base)) {
    const env = {
      GIT_AUTHOR_NAME: BOT_NAME,
      GIT_AUTHOR_EMAIL: BOT_EMAIL,
      GIT_COMMITTER_NAME: BOT_NAME,
      GIT_COMMITTER_EMAIL: BOT_EMAIL,
    };
    const message = `${r.commitMessage.trimEnd()}\n\n${DIGEST_TRAILER}: ${r.digest}\n`;
    commit = await git.out(['commit-tree', tree, '-p', refs.base, '-m', message], { env });
    const lease = `--force-with-lease=refs/heads/${r.branch}:${refs.docs ?? ''}`;
    await git.run(['push', '--quiet', lease, r.remote, `${commit}:refs/heads/${r.branch}`]);
    committed = true;
    r.log(`docs: pushed ${commit.slice(0, 12)} to ${r.branch}`);
  } else if (!sameResult) {
    r.log(`docs: ${r.branch} already holds these documents; no commit`);
  }

  if (!r.octokit) return { action: committed ? 'updated' : 'unchanged', committed, commit, number: null, url: null, forced };
  const open = await findPr(r, 'open');
  if (open) {
    if (open.title === r.title && (open.body ?? '') === body && open.base.ref === r.base) {
      return { action: 'unchanged', committed, commit, number: open.number, url: open.html_url, forced };
    }
    const { data } = await r.octokit.rest.pulls.update({ owner: r.owner, repo: r.repo, pull_number: open.number, title: r.title, body, base: r.base });
    return { action: 'updated', committed, commit, number: data.number, url: data.html_url, forced };
  }
  if (!committed) {
    // Same content as a PR someone closed: respect the close instead of reopening it every run.
    const last = await findPr(r, 'all');
    if (last) return { action: 'unchanged', committed, commit, number: last.number, url: last.html_url, forced };
  }
  try {
    const { data } = await r.octokit.rest.pulls.create({ owner: r.owner, repo: r.repo, head: r.branch, base: r.base, title: r.title, body });
    return { action: 'created', committed, commit, number: data.number, url: data.html_url, forced };
  } catch (e) {
    // Another run opened it between our lookup and our create.
    if (httpStatus(e) !== 422 || !/already exists/i.test(String((e as Error).message))) throw e;
    const again = await findPr(r, 'open');
    if (!again) throw e;
    const { data } = await r.octokit.rest.pulls.update({ owner: r.owner, repo: r.repo, pull_number: again.number, title: r.title, body });
    return { action: 'updated', committed, commit, number: data.number, url: data.html_url, forced };
  }
}

async function findPr(r: DocsPrRequest, state: 'open' | 'all') {
  const { data } = await r.octokit!.rest.pulls.list({ owner: r.owner, repo: r.repo, state, head: `${r.owner}:${r.branch}`, per_page: 10 });
  return data[0] ?? null;
}
